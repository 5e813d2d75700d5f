package org.hdfsrdma.transport.select;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.hdfsrdma.proto.HrdmaProtos.TransportAddress;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.Listener;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportProvider;
import org.hdfsrdma.transport.Transports;
import org.hdfsrdma.transport.tcp.TcpTransport;
import org.hdfsrdma.transport.tcp.TcpTransportProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The server half of transport negotiation. Listens with tcp on the service
 * port (the bootstrap) and with every other transport in
 * {@code hrdma.transport.order} that can run here on a free port; every hello
 * on the service port is answered with the list of (transport, port) this
 * server runs, tcp included, in the server's order. The client picks one
 * (see {@link HrdmaConnector}); a client that picks tcp keeps the bootstrap
 * connection.
 *
 * <p>All listeners report to the same handler. Thread-safe; {@link #close()}
 * closes every transport it started.
 */
public final class HrdmaServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(HrdmaServer.class);

  private final Map<String, Transport> transports = new LinkedHashMap<>();
  private final List<Listener> listeners = new ArrayList<>();
  private final List<TransportAddress> offers;
  private final Map<String, String> skipped = new LinkedHashMap<>();
  private final InetSocketAddress serviceAddress;
  /** Leases on the JVM's shared transports; empty when this server owns its transports. */
  private final List<SharedTransports.Lease> leases = new ArrayList<>();
  /** With shared transports: the endpoints this server's listeners accepted, closed with it. */
  private final Tracker tracker;
  private volatile boolean closed;

  private HrdmaServer(TransportConf conf, EndpointHandler userHandler, String bindHost, int servicePort,
      boolean shared) throws IOException {
    this.tracker = shared ? new Tracker(userHandler) : null;
    EndpointHandler handler = shared ? tracker : userHandler;
    List<TransportAddress> found = new ArrayList<>();
    try {
      for (String name : conf.order()) {
        if (name.equals(TcpTransportProvider.NAME)) {
          continue;
        }
        String why = startOne(conf, handler, bindHost, name, found, shared);
        if (why != null) {
          skipped.put(name, why);
          LOG.info("hrdma server: not offering {}: {}", name, why);
        }
      }
      Transport tcp;
      if (shared) {
        SharedTransports.Lease lease = SharedTransports.acquire(TcpTransportProvider.NAME, conf);
        leases.add(lease);
        tcp = lease.transport();
      } else {
        tcp = new TcpTransport(conf);
      }
      transports.put(TcpTransportProvider.NAME, tcp);
      List<TransportAddress> others = List.copyOf(found);
      int tcpOrder = conf.order().indexOf(TcpTransportProvider.NAME);
      int tcpIndex = tcpOrder < 0 ? others.size()
          : (int) others.stream().filter(a -> conf.order().indexOf(a.getTransport()) < tcpOrder).count();
      Listener bootstrap = ((TcpTransport) tcp).listen(new InetSocketAddress(bindHost, servicePort), handler,
          l -> withTcp(others, tcpIndex, l.localAddress().getPort()));
      listeners.add(bootstrap);
      this.offers = withTcp(others, tcpIndex, bootstrap.localAddress().getPort());
      this.serviceAddress = bootstrap.localAddress();
    } catch (IOException | RuntimeException e) {
      close();
      throw e;
    }
    LOG.info("hrdma server on {} offers {}", serviceAddress, describe(offers));
  }

  /**
   * Starts the server: tcp on {@code bindHost:servicePort} (0 picks a free
   * port) and the other available transports of the order on free ports.
   */
  public static HrdmaServer start(TransportConf conf, EndpointHandler handler, String bindHost,
      int servicePort) throws IOException {
    return new HrdmaServer(conf, handler, bindHost, servicePort, false);
  }

  /**
   * As {@link #start}, on the JVM's {@link SharedTransports}: the transports (UCX context,
   * worker, progress thread, buffer pool; tcp event loops) are shared with the other servers
   * and connectors of this process that use the same transport settings, while the ports, the
   * handler and the endpoints accepted stay this server's; {@link #close} closes those
   * endpoints and gives the transports back (the last holder closes them).
   */
  public static HrdmaServer startShared(TransportConf conf, EndpointHandler handler, String bindHost,
      int servicePort) throws IOException {
    return new HrdmaServer(conf, handler, bindHost, servicePort, true);
  }

  /** Returns null when started, else why not. */
  private String startOne(TransportConf conf, EndpointHandler handler, String bindHost, String name,
      List<TransportAddress> out, boolean shared) {
    TransportProvider p;
    try {
      p = Transports.provider(name);
    } catch (IllegalArgumentException e) {
      return e.getMessage();
    }
    String cause = p.unavailabilityCause();
    if (cause != null) {
      return "unavailable: " + cause;
    }
    Transport t = null;
    SharedTransports.Lease lease = null;
    try {
      if (shared) {
        lease = SharedTransports.acquire(name, conf);
        t = lease.transport();
      } else {
        t = p.create(conf);
      }
      Listener l = t.listen(new InetSocketAddress(bindHost, 0), handler);
      transports.put(name, t);
      listeners.add(l);
      if (lease != null) {
        leases.add(lease);
      }
      out.add(TransportAddress.newBuilder().setTransport(name).setPort(l.localAddress().getPort()).build());
      return null;
    } catch (IOException | RuntimeException e) {
      if (lease != null) {
        lease.close();
      } else if (t != null) {
        t.close();
      }
      return "failed to start: " + e.getMessage();
    }
  }

  /** The offers with tcp (the service port itself) at its place in the server's order. */
  private static List<TransportAddress> withTcp(List<TransportAddress> others, int tcpIndex, int port) {
    List<TransportAddress> all = new ArrayList<>(others);
    all.add(Math.min(tcpIndex, all.size()), TransportAddress.newBuilder()
        .setTransport(TcpTransportProvider.NAME)
        .setPort(port)
        .build());
    return Collections.unmodifiableList(all);
  }

  static String describe(List<TransportAddress> offers) {
    StringBuilder sb = new StringBuilder("[");
    for (TransportAddress a : offers) {
      if (sb.length() > 1) {
        sb.append(", ");
      }
      sb.append(a.getTransport()).append(':').append(a.getPort());
    }
    return sb.append(']').toString();
  }

  /** The tcp service address clients dial. */
  public InetSocketAddress serviceAddress() {
    return serviceAddress;
  }

  /** What every hello reply offers, in the server's order. */
  public List<TransportAddress> offers() {
    return offers;
  }

  /** Transports of the order that this server does not run, with the reason. */
  public Map<String, String> skipped() {
    return Collections.unmodifiableMap(skipped);
  }

  /** The running transports by name (their allocators, for example). */
  public Map<String, Transport> transports() {
    return Collections.unmodifiableMap(transports);
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (Listener l : listeners) {
      try {
        l.close();
      } catch (RuntimeException e) {
        LOG.warn("hrdma server: closing {} failed: {}", l, e.toString());
      }
    }
    if (tracker != null) {
      tracker.closeAll(CLOSE_WAIT_MS);
      for (SharedTransports.Lease l : leases) {
        l.close();
      }
      return;
    }
    for (Transport t : transports.values()) {
      try {
        t.close();
      } catch (RuntimeException e) {
        LOG.warn("hrdma server: closing {} failed: {}", t.name(), e.toString());
      }
    }
  }

  /** How long close waits for the endpoints it closes on a shared transport to report closed. */
  private static final long CLOSE_WAIT_MS = 5000;

  /** Endpoints of this server open now (shared transports; 0 otherwise: the transports count them). */
  public int trackedEndpoints() {
    return tracker == null ? 0 : tracker.open.size();
  }

  /**
   * Wraps the server's handler on shared transports: keeps the endpoints its listeners
   * accepted, so that closing the server closes them (and only them), and closes at once
   * one whose hello completes after the server closed.
   */
  private static final class Tracker implements EndpointHandler {
    private final EndpointHandler user;
    final java.util.Set<Endpoint> open = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private volatile boolean closing;

    Tracker(EndpointHandler user) {
      this.user = user;
    }

    @Override
    public String admit(InetSocketAddress remote) {
      return closing ? "server closed" : user.admit(remote);
    }

    @Override
    public void onAbandoned(InetSocketAddress remote) {
      user.onAbandoned(remote);
    }

    @Override
    public void onConnected(Endpoint endpoint) {
      open.add(endpoint);
      user.onConnected(endpoint);
      if (closing) {
        endpoint.close();
      }
    }

    @Override
    public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
      user.onMessage(endpoint, message);
    }

    @Override
    public void onClosed(Endpoint endpoint, Throwable cause) {
      open.remove(endpoint);
      user.onClosed(endpoint, cause);
    }

    void closeAll(long waitMs) {
      closing = true;
      for (Endpoint e : List.copyOf(open)) {
        try {
          e.close();
        } catch (RuntimeException ex) {
          LOG.debug("hrdma server: closing {}: {}", e, ex.toString());
        }
      }
      long end = System.nanoTime() + waitMs * 1_000_000L;
      while (!open.isEmpty() && System.nanoTime() < end) {
        try {
          Thread.sleep(10);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          return;
        }
      }
      if (!open.isEmpty()) {
        LOG.warn("hrdma server: {} endpoints did not report closed within {} ms", open.size(), waitMs);
      }
    }
  }
}
