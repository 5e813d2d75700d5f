package org.hdfsrdma.transport.select;

import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.hdfsrdma.proto.HrdmaProtos.HelloReply;
import org.hdfsrdma.proto.HrdmaProtos.TransportAddress;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.hdfsrdma.transport.Transports;
import org.hdfsrdma.transport.tcp.TcpBootstrap;
import org.hdfsrdma.transport.tcp.TcpEndpoint;
import org.hdfsrdma.transport.tcp.TcpTransport;
import org.hdfsrdma.transport.tcp.TcpTransportProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client half of transport negotiation (see {@link HrdmaServer}).
 * {@link #connect} dials the server's tcp service port on a blocking JDK socket
 * ({@link TcpBootstrap}, no Netty), sends a hello with this side's
 * {@code hrdma.transport.order}, reads the server's offers, closes that bootstrap
 * connection, and tries the offered transports in the client's order: each connects
 * to its offered port, tcp too (a second connection to the service port, with a hello
 * of its own, made by the Netty tcp transport). A transport that fails or times out
 * is logged once and the next one is tried. So a client whose connections go over
 * ucx or stream never creates the tcp transport, and never loads Netty. Where tcp
 * comes first in the order, the tcp transport's own connection is the bootstrap and,
 * offered, the one kept (no second hello).
 *
 * <p>The user's handler sees only the chosen endpoint: its
 * {@code onConnected} runs (on the connecting thread) when the choice is
 * made, followed by any message that arrived while negotiating; events of
 * the endpoints that were not chosen never reach it.
 *
 * <p>Thread-safe. Creates the transports it needs on first use and closes
 * them in {@link #close()}.
 */
public final class HrdmaConnector implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(HrdmaConnector.class);

  /** One transport considered for a connection: {@code failure} is null for the one chosen. */
  public record Attempt(String transport, String failure) {
    public boolean chosen() {
      return failure == null;
    }

    @Override
    public String toString() {
      return transport + (failure == null ? ": chosen" : ": " + failure);
    }
  }

  /** A negotiated connection: the endpoint, its transport, and every transport considered. */
  public record Connection(Endpoint endpoint, String transport, List<Attempt> attempts) {}

  /** No offered transport worked; {@link #attempts()} says why for each. */
  public static final class NegotiationException extends TransportException {
    private final List<Attempt> attempts;

    NegotiationException(String message, List<Attempt> attempts) {
      super(message);
      this.attempts = List.copyOf(attempts);
    }

    public List<Attempt> attempts() {
      return attempts;
    }
  }

  private final TransportConf conf;
  private final List<String> order;
  private final long waitMs;
  private final int connectMs;
  private final Map<String, Transport> transports = new LinkedHashMap<>(); // guarded by this
  private TcpTransport tcp; // guarded by this
  private boolean closed;   // guarded by this
  /** Leases on the JVM's shared transports; null when this connector owns its transports. */
  private final List<SharedTransports.Lease> leases;
  /** With shared transports: the endpoints this connector made and not yet closed. */
  private final java.util.Set<Endpoint> made = java.util.concurrent.ConcurrentHashMap.newKeySet();

  public HrdmaConnector(TransportConf conf) {
    this(conf, false);
  }

  /**
   * {@code shared}: on the JVM's {@link SharedTransports} (with the servers and connectors of
   * this process that use the same transport settings); {@link #close} then closes the
   * endpoints this connector made and gives the transports back.
   */
  public HrdmaConnector(TransportConf conf, boolean shared) {
    this.leases = shared ? new ArrayList<>() : null;
    this.conf = conf;
    this.order = conf.order();
    int connectMs = conf.getPositiveInt(TransportConf.CONNECT_TIMEOUT_KEY,
        TransportConf.CONNECT_TIMEOUT_DEFAULT);
    int helloMs = conf.getPositiveInt(TransportConf.HELLO_TIMEOUT_KEY, TransportConf.HELLO_TIMEOUT_DEFAULT);
    // A transport's own timeouts (the connect timeout for the connection itself, the hello
    // timeout for the peer's hello reply) should fire first; this is the backstop.
    this.waitMs = (long) connectMs + helloMs + 1000;
    this.connectMs = connectMs;
  }

  /**
   * Negotiates a connection to the server whose tcp service port is
   * {@code service}. Blocks the calling thread (not an I/O thread) for at most a connect
   * timeout and a hello timeout (and a second), all transports tried together: one deadline
   * for the bootstrap and every transport after it, so that a server that accepts and never
   * answers costs its caller one wait, not one per transport. The transports before tcp in the
   * order leave tcp, which needs a connection of its own, a reserve of that deadline (half of
   * what the bootstrap left, at most a connect timeout).
   *
   * @throws TransportException the service port cannot be reached or refuses
   *     the hello (its subclass says which), or {@link NegotiationException}
   *     when no offered transport worked
   */
  public Connection connect(InetSocketAddress service, EndpointHandler handler)
      throws TransportException {
    return connect(service, handler, waitMs);
  }

  /**
   * As {@link #connect(InetSocketAddress, EndpointHandler)}, within {@code budgetMs} (at most
   * the connector's own deadline): a caller that must answer its own peer in time (a DataNode
   * setting up a pipeline) bounds the connect by what it has left.
   */
  public Connection connect(InetSocketAddress service, EndpointHandler handler, long budgetMs)
      throws TransportException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(1, Math.min(budgetMs, waitMs)));
    ensureOpen();
    HelloReply reply;
    if (order.get(0).equals(TcpTransportProvider.NAME)) {
      // tcp first: every HrdmaServer offers it, so tcp's own connection serves as the bootstrap
      // (one connection, one hello); a server that does not offer it still sent its offers here
      Gate gate = new Gate(handler);
      TcpEndpoint ep = await(tcp().connect(service, gate, order), TcpTransportProvider.NAME, service, deadline);
      reply = ep.helloReply();
      if (reply.getOffersList().stream().anyMatch(a -> a.getTransport().equals(TcpTransportProvider.NAME))) {
        List<Attempt> attempts = List.of(new Attempt(TcpTransportProvider.NAME, null));
        gate.open(ep);
        LOG.debug("hrdma: connected to {} with tcp ({})", service, attempts);
        return new Connection(track(ep), TcpTransportProvider.NAME, attempts);
      }
      gate.discard();
      ep.close();
    } else {
      // The offers only: the bootstrap carries nothing else, so it closes before any transport is
      // tried. Keeping it for tcp would need the Netty transport to adopt a JDK socket (and what
      // was read ahead on it); a tcp choice after others pays a second connection and hello instead.
      try (TcpBootstrap bootstrap = TcpBootstrap.connect(service, order, conf, deadline)) {
        reply = bootstrap.helloReply();
      }
    }
    Map<String, TransportAddress> offered = new LinkedHashMap<>();
    for (TransportAddress a : reply.getOffersList()) {
      offered.putIfAbsent(a.getTransport(), a);
    }
    if (order.get(0).equals(TcpTransportProvider.NAME)) {
      offered.remove(TcpTransportProvider.NAME); // not offered: not tried again
    }
    // tcp needs a connection of its own now: the transports before it in the order share the
    // deadline less a reserve for it (half of what is left, at most a connect timeout), so that
    // one that hangs to the end still leaves tcp as the fallback.
    int tcpAt = offered.containsKey(TcpTransportProvider.NAME) ? order.indexOf(TcpTransportProvider.NAME) : -1;
    long tcpReserve = Math.min(TimeUnit.MILLISECONDS.toNanos(connectMs),
        Math.max(0, deadline - System.nanoTime()) / 2);
    List<Attempt> attempts = new ArrayList<>();
    for (int i = 0; i < order.size(); i++) {
      String name = order.get(i);
      long until = i < tcpAt ? deadline - tcpReserve : deadline;
      TransportAddress offer = offered.get(name);
      if (offer == null) {
        attempts.add(new Attempt(name, "not offered by the server"));
        continue;
      }
      Gate gate = new Gate(handler);
      Object target = offer.getHost() + ":" + offer.getPort(); // the address, once made of the offer
      try {
        // an offer no address can be made of (a port past 65535) fails this transport only
        InetSocketAddress addr = target(service, offer);
        target = addr;
        Endpoint ep = name.equals(TcpTransportProvider.NAME)
            ? await(tcp().connect(addr, gate, order), name, addr, until)
            : await(transport(name).connect(addr, gate), name, addr, until);
        attempts.add(new Attempt(name, null));
        gate.open(ep);
        LOG.debug("hrdma: connected to {} with {} ({})", service, name, attempts);
        return new Connection(track(ep), name, List.copyOf(attempts));
      } catch (TransportException | RuntimeException e) {
        gate.discard();
        String why = e.getMessage() == null ? e.toString() : e.getMessage();
        LOG.warn("hrdma: {} to {} failed, trying the next transport: {}", name, target, why);
        attempts.add(new Attempt(name, why));
      }
    }
    throw new NegotiationException("hrdma: no transport to " + service + " worked: " + attempts
        + " (server offers " + HrdmaServer.describe(reply.getOffersList()) + ")", attempts);
  }

  /**
   * Where {@code offer} points: its host, or {@code service}'s where it names none. A host must be
   * an address (IPv4 or IPv6 literal): a name would be looked up here, outside the connect's
   * deadline, for as long as the resolver takes; ours offer none.
   */
  static InetSocketAddress target(InetSocketAddress service, TransportAddress offer) {
    String host = offer.getHost();
    if (!host.isEmpty()) {
      if (!isAddress(host)) {
        throw new IllegalArgumentException("the offer names a host, not an address: " + host);
      }
      return new InetSocketAddress(host, offer.getPort()); // a literal: no lookup
    }
    return service.isUnresolved() ? InetSocketAddress.createUnresolved(service.getHostString(), offer.getPort())
        : new InetSocketAddress(service.getAddress(), offer.getPort());
  }

  /**
   * Whether {@code host} is an IPv4 address in dotted decimal or an IPv6 one (with a colon, which
   * the JDK parses as a literal or refuses, never looks up).
   */
  static boolean isAddress(String host) {
    if (host.indexOf(':') >= 0) {
      return true;
    }
    String[] parts = host.split("\\.", -1);
    if (parts.length != 4) {
      return false;
    }
    for (String p : parts) {
      if (p.isEmpty() || p.length() > 3 || !p.chars().allMatch(c -> c >= '0' && c <= '9') || Integer.parseInt(p) > 255) {
        return false;
      }
    }
    return true;
  }

  /**
   * Creates the transport a first {@link #connect} to a server offering everything would use:
   * the first of this side's order that can be made here (ucx, where the native library and UCX
   * are; tcp only where it comes first or nothing before it runs here), so that a connect does
   * not wait for it: a UCX transport's context, worker and I/O thread take tens to hundreds of
   * milliseconds, which a forwarding DataNode's first write would otherwise spend
   * (ConnectorPrepareTest). The bootstrap hello needs no transport. One that cannot be created
   * is left to {@code connect}, which tries it again and says why. Blocks while it creates it
   * (not on an I/O thread); never throws.
   */
  public void prepare() {
    for (String name : order) {
      try {
        if (name.equals(TcpTransportProvider.NAME)) {
          tcp();
        } else {
          transport(name);
        }
        return;
      } catch (TransportException | RuntimeException e) {
        LOG.debug("hrdma: cannot prepare {}: {}", name, e.toString());
      }
    }
  }

  private <T extends Endpoint> T await(CompletableFuture<T> f, String name, InetSocketAddress target,
      long deadline) throws TransportException {
    long leftMs = Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
    try {
      return f.get(leftMs, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof TransportException te) {
        throw te;
      }
      throw new TransportException(name + ": connecting to " + target + " failed: " + e.getCause(), 0,
          e.getCause());
    } catch (TimeoutException e) {
      f.whenComplete((ep, t) -> {
        if (ep != null) {
          ep.close(); // too late: its gate stays shut
        }
      });
      throw new TransportException.Timeout(name + ": connecting to " + target + " did not finish within "
          + leftMs + " ms (the connect's deadline)");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      f.whenComplete((ep, t) -> {
        if (ep != null) {
          ep.close();
        }
      });
      throw new TransportException("interrupted while connecting to " + target, 0, e);
    }
  }

  /** With shared transports, remembers {@code ep} until it closes (closed with the connector). */
  private Endpoint track(Endpoint ep) {
    if (leases != null) {
      made.add(ep);
      ep.closeFuture().whenComplete((v, t) -> made.remove(ep));
      boolean late;
      synchronized (this) {
        late = closed;
      }
      if (late) {
        ep.close();
      }
    }
    return ep;
  }

  private synchronized void ensureOpen() throws TransportException {
    if (closed) {
      throw new TransportException.Closed("connector closed");
    }
  }

  private synchronized TcpTransport tcp() throws TransportException {
    ensureOpen();
    if (tcp == null) {
      tcp = (TcpTransport) (leases != null ? lease(TcpTransportProvider.NAME) : new TcpTransport(conf));
      transports.put(TcpTransportProvider.NAME, tcp);
    }
    return tcp;
  }

  private synchronized Transport transport(String name) throws TransportException {
    ensureOpen();
    Transport t = transports.get(name);
    if (t == null) {
      t = leases != null ? lease(name) : Transports.create(name, conf);
      transports.put(name, t);
    }
    return t;
  }

  private Transport lease(String name) throws TransportException {
    SharedTransports.Lease l = SharedTransports.acquire(name, conf);
    leases.add(l);
    return l.transport();
  }

  /** Endpoints this connector made that are open now (shared transports; 0 otherwise). */
  public int trackedEndpoints() {
    return made.size();
  }

  /** The transports created so far, by name. */
  public synchronized Map<String, Transport> transports() {
    return Collections.unmodifiableMap(new LinkedHashMap<>(transports));
  }

  /** Closes every transport this connector created, and with them their endpoints. */
  @Override
  public void close() {
    List<Transport> all;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      all = new ArrayList<>(transports.values());
    }
    if (leases != null) {
      List<CompletableFuture<Void>> closing = new ArrayList<>();
      for (Endpoint ep : List.copyOf(made)) {
        closing.add(ep.closeFuture());
        ep.close();
      }
      try {
        CompletableFuture.allOf(closing.toArray(new CompletableFuture<?>[0])).get(5, TimeUnit.SECONDS);
      } catch (ExecutionException | TimeoutException e) {
        LOG.warn("hrdma: endpoints of a closing connector did not all close: {}", e.toString());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      synchronized (this) {
        for (SharedTransports.Lease l : leases) {
          l.close();
        }
      }
      return;
    }
    for (Transport t : all) {
      try {
        t.close();
      } catch (RuntimeException e) {
        LOG.warn("hrdma: closing {} failed: {}", t.name(), e.toString());
      }
    }
  }

  /**
   * Keeps a candidate endpoint's events from the user's handler until it is
   * chosen ({@link #open}) or dropped ({@link #discard}). Messages that arrive
   * meanwhile are held (they count against the sender's credits) and handed
   * over in order on open, released on discard.
   */
  static final class Gate implements EndpointHandler {
    private final EndpointHandler user;
    private final ArrayDeque<RegisteredBuffer> held = new ArrayDeque<>(); // guarded by this
    private boolean open;      // guarded by this
    private boolean discarded; // guarded by this
    private boolean closedEarly;
    private Throwable closeCause;

    Gate(EndpointHandler user) {
      this.user = user;
    }

    @Override
    public void onConnected(Endpoint endpoint) {
      // reported by open()
    }

    @Override
    public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
      synchronized (this) {
        if (!open) {
          if (discarded) {
            message.release();
          } else {
            held.addLast(message);
          }
          return;
        }
      }
      user.onMessage(endpoint, message);
    }

    @Override
    public void onClosed(Endpoint endpoint, Throwable cause) {
      synchronized (this) {
        if (!open) {
          closedEarly = true;
          closeCause = cause;
          return;
        }
      }
      user.onClosed(endpoint, cause);
    }

    synchronized void open(Endpoint endpoint) {
      user.onConnected(endpoint);
      RegisteredBuffer m;
      while ((m = held.pollFirst()) != null) {
        user.onMessage(endpoint, m);
      }
      open = true;
      if (closedEarly) {
        user.onClosed(endpoint, closeCause);
      }
    }

    synchronized void discard() {
      discarded = true;
      RegisteredBuffer m;
      while ((m = held.pollFirst()) != null) {
        m.release();
      }
    }
  }
}
