package org.hdfsrdma.transport.ucx;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.Jni;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.transport.BufferAllocator;
import org.hdfsrdma.transport.BufferPool;
import org.hdfsrdma.transport.Capability;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.Listener;
import org.hdfsrdma.transport.PendingHellos;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A transport over the native UCX engine: one UCP context, one worker driven
 * by its own thread ({@link UcxWorkerLoop}), and a pool of buffers registered
 * with the context. Subclasses choose the wire (active messages or stream).
 */
abstract class AbstractUcxTransport implements Transport {
  private static final Logger LOG = LoggerFactory.getLogger(AbstractUcxTransport.class);
  private static final AtomicInteger SEQ = new AtomicInteger();

  final long ctx;
  final UcxWorkerLoop loop;
  final int maxMessage;
  /** Whether DATA sends carry their placement hints. */
  final boolean placeAligned;
  final int credits;
  /** Version this side puts in its hello; tests change it to play a peer from elsewhere. */
  int helloVersion = org.hdfsrdma.transport.Protocol.VERSION;
  private final BufferPool pool;
  private final int connectTimeoutMs;
  /** Tests: false makes this side's client connections silent (no HELLO), as a hostile peer's. */
  volatile boolean sayHello = true;
  /** How long an accepted connection may take to say hello. */
  private final int helloTimeoutMs;
  private final int maxPendingHellos;
  /** Accepted connections that have not said hello yet, bounded (loop thread). */
  private final PendingHellos pendingHellos;
  private final String ucxConfig;
  /** Active messages pass no pool registration (hrdma.ucx.remote-access=operation). */
  final boolean operationScoped;
  /** Active-message sends and receives that passed a pool (slab) registration to UCX. */
  private final java.util.concurrent.atomic.AtomicLong slabKeyed = new java.util.concurrent.atomic.AtomicLong();
  private final ScheduledExecutorService timer;
  private final Set<UcxConnection> connections = new LinkedHashSet<>(); // loop thread
  private final List<UcxListener> listeners = new ArrayList<>();         // loop thread
  private volatile boolean closed;

  /** A native call that makes a context. */
  interface ContextMaker {
    long make() throws NativeException;
  }

  /**
   * Why UCX cannot be used in this process while a context creation that timed out has not
   * returned, else null. Such a creation holds UCX's (and libc's) locks: later ones would wait too.
   */
  private static final java.util.concurrent.atomic.AtomicReference<String> STUCK =
      new java.util.concurrent.atomic.AtomicReference<>();

  /**
   * A context from {@code maker}, run on a thread of its own so that the caller (who may hold a
   * connector's lock) waits at most {@code timeoutMs}. UCX queries every network device while it
   * creates a context, through libc's getifaddrs, whose netlink dump was seen to wait forever on
   * a loaded host (a reply the kernel dropped); the transport then fails and the connector uses
   * the next one. A context that comes after all is destroyed with {@code destroyer}.
   */
  static long createContext(ContextMaker maker, java.util.function.LongConsumer destroyer, long timeoutMs)
      throws TransportException, NativeException {
    String stuck = STUCK.get();
    if (stuck != null) {
      throw new TransportException("ucx is not usable in this process now: " + stuck);
    }
    CompletableFuture<Long> made = new CompletableFuture<>();
    Thread t = new Thread(() -> {
      try {
        made.complete(maker.make());
      } catch (Throwable e) {
        made.completeExceptionally(e);
      }
    }, "hrdma-ucx-init-" + SEQ.incrementAndGet());
    t.setDaemon(true);
    t.start();
    try {
      return made.get(timeoutMs, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      String why = "creating a ucx context did not finish within " + timeoutMs + " ms ("
          + TransportConf.UCX_INIT_TIMEOUT_MS_KEY + "; thread " + t.getName() + ")";
      STUCK.set(why);
      LOG.warn("hrdma: {}; the ucx transports fail until it returns", why);
      giveUp(made, destroyer, why);
      throw new TransportException(why);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      giveUp(made, destroyer, null);
      throw new TransportException("interrupted while creating a ucx context");
    } catch (ExecutionException e) {
      if (e.getCause() instanceof NativeException ne) {
        throw ne;
      }
      throw new TransportException("creating a ucx context failed: " + e.getCause(), 0, e.getCause());
    }
  }

  /** Why UCX is refused in this process now, or null (tests). */
  static String stuckCreation() {
    return STUCK.get();
  }

  /** A creation nobody waits for any more: its context, when it comes, is destroyed; UCX is usable again. */
  private static void giveUp(CompletableFuture<Long> made, java.util.function.LongConsumer destroyer, String why) {
    made.whenComplete((ctx, err) -> {
      if (ctx != null) {
        destroyer.accept(ctx);
      }
      if (why != null && STUCK.compareAndSet(why, null)) {
        LOG.info("hrdma: the ucx context creation that timed out returned; ucx is usable again");
      }
    });
  }

  AbstractUcxTransport(TransportConf conf) throws TransportException {
    HrdmaNative.ensureAvailable();
    this.maxMessage = conf.getPositiveInt(TransportConf.MAX_MESSAGE_KEY,
        TransportConf.MAX_MESSAGE_DEFAULT);
    this.placeAligned = Boolean.parseBoolean(conf.get(TransportConf.PLACE_ALIGNED_KEY,
        String.valueOf(TransportConf.PLACE_ALIGNED_DEFAULT)).trim());
    this.credits = conf.getPositiveInt(TransportConf.CREDITS_KEY, TransportConf.CREDITS_DEFAULT);
    this.connectTimeoutMs = conf.getPositiveInt(TransportConf.CONNECT_TIMEOUT_KEY,
        TransportConf.CONNECT_TIMEOUT_DEFAULT);
    this.helloTimeoutMs = conf.getPositiveInt(TransportConf.HELLO_TIMEOUT_KEY, TransportConf.HELLO_TIMEOUT_DEFAULT);
    this.maxPendingHellos = conf.getPositiveInt(TransportConf.MAX_PENDING_HELLOS_KEY,
        TransportConf.MAX_PENDING_HELLOS_DEFAULT);
    this.pendingHellos = new PendingHellos(maxPendingHellos);
    String access = conf.get(TransportConf.UCX_REMOTE_ACCESS_KEY, TransportConf.UCX_REMOTE_ACCESS_DEFAULT);
    if (!access.equals("operation") && !access.equals("pool")) {
      throw new TransportException(TransportConf.UCX_REMOTE_ACCESS_KEY + " is 'operation' or 'pool', not '"
          + access + "'");
    }
    this.operationScoped = access.equals("operation");
    String userConfig = conf.get(TransportConf.UCX_CONFIG_KEY, TransportConf.UCX_CONFIG_DEFAULT);
    this.ucxConfig = operationScoped ? scopedConfig(userConfig, hasRdmaDevices()) : userConfig;
    int spin = conf.getInt(TransportConf.UCX_SPIN_KEY, TransportConf.UCX_SPIN_DEFAULT);
    try {
      this.ctx = createContext(() -> Jni.ctxCreate0(ucxConfig), Jni::ctxDestroy0,
          conf.getPositiveInt(TransportConf.UCX_INIT_TIMEOUT_MS_KEY, TransportConf.UCX_INIT_TIMEOUT_MS_DEFAULT));
    } catch (NativeException e) {
      throw UcxErrors.of("create ucx context (" + TransportConf.UCX_CONFIG_KEY + "='"
          + ucxConfig + "')", e);
    }
    try {
      this.loop = new UcxWorkerLoop(ctx, "hrdma-" + name() + "-" + SEQ.incrementAndGet(), spin);
    } catch (NativeException e) {
      Jni.ctxDestroy0(ctx);
      throw UcxErrors.of("create ucx worker", e);
    }
    this.pool = new BufferPool(new UcxSlabAllocator(ctx),
        conf.getPositiveInt(TransportConf.SLAB_SIZE_KEY, TransportConf.SLAB_SIZE_DEFAULT),
        conf.getLong(TransportConf.MAX_REGISTERED_KEY, TransportConf.MAX_REGISTERED_DEFAULT));
    this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "hrdma-" + name() + "-timer");
      t.setDaemon(true);
      return t;
    });
    int readTimeoutMs = conf.getPositiveInt(TransportConf.READ_TIMEOUT_KEY, TransportConf.READ_TIMEOUT_DEFAULT);
    long period = Math.max(10, readTimeoutMs / 4);
    long timeoutNs = TimeUnit.MILLISECONDS.toNanos(readTimeoutMs);
    // a peer stalled in the middle of a message is closed within 1.25 read timeouts
    timer.scheduleWithFixedDelay(() -> executeQuietly(() -> {
      long now = System.nanoTime();
      for (UcxConnection c : List.copyOf(connections)) {
        c.checkStalled(now, timeoutNs, readTimeoutMs);
      }
    }), period, period, TimeUnit.MILLISECONDS);
  }

  /**
   * The UCX settings under which a buffer passed without a registration is registered for
   * its operation alone: without UCP's registration cache (which would hand back the
   * registration of the whole slab the buffer lies in, and keep it) and, on InfiniBand,
   * without the IB memory domain's own cache (same, one level down). Settings the user gave
   * win. The IB setting only where there is an RDMA device: without one no IB memory domain
   * takes it, and UCX warns of an invalid configuration at every worker.
   */
  static String scopedConfig(String user, boolean rdmaDevices) {
    StringBuilder b = new StringBuilder(user == null ? "" : user.trim());
    String[] scoping = rdmaDevices ? new String[] {"RCACHE_ENABLE=n", "IB_REG_METHODS=direct"}
        : new String[] {"RCACHE_ENABLE=n"};
    for (String kv : scoping) {
      String name = kv.substring(0, kv.indexOf('=') + 1);
      if (!(";" + b).contains(";" + name)) {
        if (b.length() > 0 && b.charAt(b.length() - 1) != ';') {
          b.append(';');
        }
        b.append(kv);
      }
    }
    return b.toString();
  }

  private static boolean hasRdmaDevices() {
    try {
      return !HrdmaNative.probeDevices().isBlank();
    } catch (NativeException e) {
      return true; // cannot tell: keep the setting (at worst UCX warns)
    }
  }

  /**
   * The registration to pass with an active message's buffer: the pool's (its slab's) only
   * when remote access is pool-scoped, else none (0), so that UCX registers the buffer for
   * that operation alone.
   */
  long amMemoryHandle(RegisteredBuffer b) {
    if (operationScoped) {
      return 0;
    }
    slabKeyed.incrementAndGet();
    return b.memoryHandle();
  }

  /** Active-message operations so far that passed a slab's registration (tests). */
  public long slabKeyedOperations() {
    return slabKeyed.get();
  }

  /** A new connection object of this transport's wire. */
  abstract UcxConnection newConnection(InetSocketAddress remote, EndpointHandler handler,
      boolean client, CompletableFuture<Endpoint> connected);

  @Override
  public Set<Capability> capabilities() {
    Set<Capability> s = EnumSet.of(Capability.ZERO_COPY);
    if (ucxConfig.contains("sm") || ucxConfig.contains("posix") || ucxConfig.contains("sysv")
        || !ucxConfig.contains("TLS=")) {
      s.add(Capability.SHARED_MEMORY);
    }
    return s;
  }

  @Override
  public BufferAllocator allocator() {
    return pool;
  }

  /** Native counters: bytes registered, regions, endpoints, workers. */
  public long[] nativeStats() {
    long[] out = new long[4];
    Jni.ctxStats0(ctx, out);
    return out;
  }

  /** Native endpoints not yet destroyed (counted by libhrdma). */
  public int openEndpoints() {
    return (int) nativeStats()[2];
  }

  /** Transports and devices UCX uses in this context. */
  public String ucxInfo() throws NativeException {
    return Jni.ctxInfo0(ctx);
  }

  void opened(UcxConnection c) {
    connections.add(c);
  }

  void closedConnection(UcxConnection c) {
    connections.remove(c);
  }

  private <T> T onLoop(java.util.concurrent.Callable<T> task) throws IOException {
    CompletableFuture<T> f = new CompletableFuture<>();
    try {
      loop.execute(() -> {
        try {
          f.complete(task.call());
        } catch (Throwable t) {
          f.completeExceptionally(t);
        }
      });
      return f.get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof IOException io) {
        throw io;
      }
      throw new TransportException(e.getCause().toString(), 0, e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TransportException.Closed("interrupted");
    } catch (TimeoutException e) {
      throw new TransportException.Timeout("ucx worker did not answer in 30 s");
    } catch (RuntimeException e) {
      throw new TransportException.Closed("transport closed");
    }
  }

  @Override
  public Listener listen(InetSocketAddress local, EndpointHandler handler) throws IOException {
    ensureOpen();
    String ip = local.getAddress() == null ? "0.0.0.0" : local.getAddress().getHostAddress();
    return onLoop(() -> {
      long token = loop.newToken();
      long l;
      try {
        l = Jni.listenerCreate0(loop.worker, ip, local.getPort(), token);
      } catch (NativeException e) {
        throw UcxErrors.of("listen on " + ip + ":" + local.getPort(), e);
      }
      int port = Jni.listenerPort0(l);
      UcxListener listener = new UcxListener(this, l, token,
          new InetSocketAddress(local.getAddress(), port), handler);
      loop.registerListener(token, listener);
      listeners.add(listener);
      return listener;
    });
  }

  /** A connection request arrived at {@code listener} (loop thread). */
  void accept(UcxListener listener, long request, String peer) {
    UcxConnection c = newConnection(parsePeer(peer), listener.handler, false,
        new CompletableFuture<>());
    long ep;
    try {
      ep = Jni.connAccept0(loop.worker, request, c.token);
    } catch (NativeException e) {
      LOG.warn("accept from {} failed: {}", peer, e.getMessage());
      return;
    }
    c.attach(ep);
    long token = c.token;
    pendingHellos.add(() -> !c.isOpen() && !c.isDestroyed(), () -> executeQuietly(() -> {
      if (!c.isOpen() && !c.isDestroyed()) {
        c.fail(new TransportException.Protocol("more than " + maxPendingHellos + " connections waiting for their hello ("
            + TransportConf.MAX_PENDING_HELLOS_KEY + "), the oldest closed: " + peer + ", connection " + token));
      }
    }));
    timer.schedule(() -> executeQuietly(() -> {
      if (!c.isOpen() && !c.isDestroyed()) {
        c.fail(new TransportException.Timeout("no hello from " + peer + " within "
            + helloTimeoutMs + " ms (" + TransportConf.HELLO_TIMEOUT_KEY + ", connection " + token + ")"));
      }
    }), helloTimeoutMs, TimeUnit.MILLISECONDS);
  }

  /** Accepted connections closed before their hello to bound those waiting for it ({@link PendingHellos}). */
  public long pendingHellosEvicted() {
    return pendingHellos.evicted();
  }

  void closeListener(UcxListener l) {
    Runnable r = () -> {
      if (listeners.remove(l)) {
        loop.unregisterListener(l.token);
        Jni.listenerDestroy0(l.handle);
      }
    };
    if (loop.inLoop()) {
      r.run();
    } else {
      try {
        onLoop(() -> {
          r.run();
          return null;
        });
      } catch (IOException e) {
        LOG.debug("listener close: {}", e.toString());
      }
    }
  }

  private static InetSocketAddress parsePeer(String peer) {
    try {
      int i = peer.lastIndexOf(':');
      if (i > 0) {
        String host = peer.substring(0, i).replace("[", "").replace("]", "");
        return new InetSocketAddress(InetAddress.getByName(host),
            Integer.parseInt(peer.substring(i + 1)));
      }
    } catch (IOException | NumberFormatException e) {
      // fall through
    }
    return InetSocketAddress.createUnresolved(peer.isEmpty() ? "unknown" : peer, 0);
  }

  @Override
  public CompletableFuture<Endpoint> connect(InetSocketAddress remote, EndpointHandler handler) {
    CompletableFuture<Endpoint> f = new CompletableFuture<>();
    if (closed) {
      f.completeExceptionally(new TransportException.Closed("transport closed"));
      return f;
    }
    if (remote.isUnresolved()) {
      f.completeExceptionally(new TransportException.Unreachable("cannot resolve "
          + remote.getHostString(), 0, null));
      return f;
    }
    String ip = remote.getAddress().getHostAddress();
    try {
      loop.execute(() -> {
        UcxConnection c = newConnection(remote, handler, true, f);
        try {
          c.attach(Jni.epConnect0(loop.worker, ip, remote.getPort(), c.token));
        } catch (NativeException e) {
          f.completeExceptionally(UcxErrors.of("connect to " + remote, e));
        }
      });
    } catch (RuntimeException e) {
      f.completeExceptionally(new TransportException.Closed("transport closed"));
      return f;
    }
    // The connect timeout bounds the wire-up; once our HELLO has left, the reply has its own,
    // longer wait (awaitHelloReply).
    timer.schedule(() -> {
      if (!f.isDone()) {
        executeQuietly(() -> {
          if (!f.isDone()) {
            UcxConnection mine = null;
            for (UcxConnection c : connections) {
              if (c.client && c.connectFuture() == f) {
                mine = c;
              }
            }
            if (mine != null && mine.helloSent()) {
              return;
            }
            TransportException t = new TransportException.Timeout("connect to " + remote
                + " over " + name() + " did not finish within " + connectTimeoutMs + " ms ("
                + TransportConf.CONNECT_TIMEOUT_KEY + ")");
            if (mine != null) {
              mine.fail(t);
            }
            f.completeExceptionally(t);
          }
        });
      }
    }, connectTimeoutMs, TimeUnit.MILLISECONDS);
    return f;
  }

  /**
   * Our HELLO on client connection {@code c} has left (loop thread): its reply is waited for
   * {@value TransportConf#HELLO_TIMEOUT_KEY}, as long as the peer waits for a hello and as stock's
   * client waits for a DataNode's responses (dfs.client.socket-timeout), so that a loaded but
   * honest DataNode is not left for the stock path after the connect timeout.
   */
  void awaitHelloReply(UcxConnection c) {
    timer.schedule(() -> executeQuietly(() -> {
      if (c.inHello()) {
        c.fail(new TransportException.Timeout("no hello reply from " + c.remoteAddress() + " over " + name()
            + " within " + helloTimeoutMs + " ms (" + TransportConf.HELLO_TIMEOUT_KEY + ")"));
      }
    }), helloTimeoutMs, TimeUnit.MILLISECONDS);
  }

  private void executeQuietly(Runnable r) {
    try {
      loop.execute(r);
    } catch (RuntimeException e) {
      // closed
    }
  }

  private void ensureOpen() throws TransportException {
    if (closed) {
      throw new TransportException.Closed("transport closed");
    }
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    timer.shutdownNow();
    try {
      onLoop(() -> {
        for (UcxListener l : new ArrayList<>(listeners)) {
          closeListener(l);
        }
        for (UcxConnection c : new ArrayList<>(connections)) {
          c.close();
        }
        if (!loop.drain(() -> connections.isEmpty(), 5000)) {
          for (UcxConnection c : new ArrayList<>(connections)) {
            c.fail(new TransportException.Closed("transport closed"));
          }
          loop.drain(() -> connections.isEmpty(), 5000);
        }
        return null;
      });
    } catch (IOException e) {
      LOG.warn("closing {} transport: {}", name(), e.getMessage());
    }
    try {
      loop.shutdown();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    pool.close();
    int st = Jni.ctxDestroy0(ctx);
    if (st < 0) {
      LOG.warn("ucx context destroy: {}", Jni.statusString0(st));
    }
  }
}
