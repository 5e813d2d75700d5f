package org.hdfsrdma.datanode;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.util.ServicePlugin;
import org.hdfsrdma.datanode.compat.DataNodeAccess;
import org.hdfsrdma.datanode.compat.ClientDatanodeHook;
import org.hdfsrdma.datanode.disk.DiskIo;
import org.hdfsrdma.datanode.disk.DiskMetrics;
import org.hdfsrdma.datanode.disk.DiskSettings;
import org.hdfsrdma.nativelib.UcxStartEnvironment;
import org.hdfsrdma.protocol.HadoopTransportConf;
import org.hdfsrdma.protocol.RdmaPorts;
import org.hdfsrdma.protocol.wire.ServerGate;
import org.hdfsrdma.protocol.wire.WireProtection;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.select.HrdmaConnector;
import org.hdfsrdma.transport.select.HrdmaServer;
import org.hdfsrdma.transport.select.StartingHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves a stock DataNode's blocks over hrdma transports; enabled with
 * {@code dfs.datanode.plugins=org.hdfsrdma.datanode.RdmaDataNodePlugin}.
 *
 * <p>{@link #start} checks the settings and starts an {@link HrdmaServer} on
 * {@link RdmaPorts#pluginPort}, bound to the host of the DataNode's xfer address (or
 * {@value #BIND_HOST_KEY}), before the DataNode registers with the NameNode; transport settings
 * are the DataNode configuration's {@code hrdma.*} keys. The DataNode calls it before its dataset
 * and UUID exist, so until the plugin serves, the server answers every hello with a refusal a
 * client tells apart ({@link StartingHandler}: REFUSED, STARTING), and a starter thread waits for
 * them (at most {@value #START_TIMEOUT_KEY} ms), builds the executors, runs the warm-up and then
 * serves. A plugin that does not get to serve closes its server: its port is free again and
 * clients meet no listener, as on a DataNode without the plugin.
 *
 * <p>Requests go to a {@link RequestDispatcher}, which admits connections within the
 * {@link DataNodeLimits} and hands each message to its operation's handler: INFO is
 * answered on the I/O thread, block reads run on their volume's bounded executor
 * ({@value ReadSettings#THREADS_KEY} threads per volume, see {@link BlockReadTask}),
 * block writes on another ({@value #WRITE_THREADS_KEY} threads, see
 * {@link BlockWriteTask}); a write forwarded downstream connects to the next
 * DataNode's plugin with an {@link HrdmaConnector} of this plugin. A timer thread closes
 * idle connections and fails writes that stopped receiving packets.
 *
 * <p>Nothing here can stop the DataNode: a failure to start is logged once
 * and the stock data path keeps serving. {@link #stop} is idempotent and
 * thread-safe.
 */
public final class RdmaDataNodePlugin implements ServicePlugin {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaDataNodePlugin.class);

  /** How long to wait for the DataNode's dataset and UUID before giving up. */
  public static final String START_TIMEOUT_KEY = HrdmaDataNodeKeys.START_TIMEOUT_KEY;
  public static final long START_TIMEOUT_DEFAULT = HrdmaDataNodeKeys.START_TIMEOUT_DEFAULT;
  /** Address to listen on; empty means the host of the DataNode's xfer address. */
  public static final String BIND_HOST_KEY = HrdmaDataNodeKeys.BIND_HOST_KEY;
  public static final String BIND_HOST_DEFAULT = HrdmaDataNodeKeys.BIND_HOST_DEFAULT;

  /** Threads that set up pipelines and write received packets to disk (per plugin). */
  public static final String WRITE_THREADS_KEY = HrdmaDataNodeKeys.WRITE_THREADS_KEY;
  public static final int WRITE_THREADS_DEFAULT = HrdmaDataNodeKeys.WRITE_THREADS_DEFAULT;
  /** How long a write's setup waits for the downstream DataNode's WRITE_RESPONSE. */
  public static final String WRITE_SETUP_TIMEOUT_KEY = HrdmaDataNodeKeys.WRITE_SETUP_TIMEOUT_KEY;
  public static final long WRITE_SETUP_TIMEOUT_DEFAULT = HrdmaDataNodeKeys.WRITE_SETUP_TIMEOUT_DEFAULT;

  /**
   * Whether plugins in one JVM share its transports ({@link org.hdfsrdma.transport.select.SharedTransports}):
   * auto, true or false ({@link Sharing}).
   */
  public static final String SHARE_TRANSPORTS_KEY = HrdmaDataNodeKeys.SHARE_TRANSPORTS_KEY;
  public static final String SHARE_TRANSPORTS_DEFAULT = HrdmaDataNodeKeys.SHARE_TRANSPORTS_DEFAULT;

  /** The values of {@value #SHARE_TRANSPORTS_KEY}. */
  public enum Sharing {
    /**
     * Servers on the JVM's shared transports (alone in the JVM: the only holder, as if its own); a
     * forwarding connector shares them when another DataNode plugin runs in the JVM, else owns its own.
     */
    AUTO,
    /**
     * Servers and forwarding connectors on the JVM's shared transports, also for a lone DataNode (the
     * default): its writes are forwarded and their acks relayed on its server's I/O thread.
     */
    TRUE,
    /** Every server and connector its own transports. */
    FALSE;

    /** {@code v} (auto, true or false, any case). */
    static Sharing parse(String v) {
      for (Sharing s : values()) {
        if (s.name().equalsIgnoreCase(v.trim())) {
          return s;
        }
      }
      throw new IllegalArgumentException(SHARE_TRANSPORTS_KEY + " must be auto, true or false, not '" + v + "'");
    }
  }

  private static final long POLL_MS = 50;
  /** What {@link #warmUp} runs: {@link DataNodeWarmUp#run()}; tests make it fail. */
  static volatile java.util.concurrent.Callable<Integer> warmUpBody = DataNodeWarmUp::run;
  /** Plugins started in this JVM and not yet stopped, for status and tests. */
  private static final List<RdmaDataNodePlugin> RUNNING = new CopyOnWriteArrayList<>();

  /**
   * Where the plugin is in its life: WAITING from {@link #start} until it serves, listening
   * (refusing every hello as starting) once start returned.
   */
  public enum State { NEW, WAITING, SERVING, FAILED, STOPPED }

  private final Object lock = new Object();
  private DataNodeAccess dn;        // set in start
  private Thread starter;           // guarded by lock
  private HrdmaServer server;       // guarded by lock; set when SERVING
  private HrdmaServer listening;    // guarded by lock; bound in start, refusing as starting until SERVING
  private StartingHandler starting; // guarded by lock; listening's handler, handed the real one to serve
  private ThreadPoolExecutor readExecutor; // guarded by lock
  private ThreadPoolExecutor writeExecutor; // guarded by lock
  private ScheduledThreadPoolExecutor timer; // guarded by lock
  private VolumeExecutors volumeExecutors; // guarded by lock
  private HrdmaConnector connector;         // guarded by lock; created on the first forwarded write
  private TransportConf tconf;              // set before SERVING
  private Sharing sharing;                  // set before SERVING
  private RequestDispatcher dispatcher;    // guarded by lock
  private ClientDatanodeHook ipcHook;       // guarded by lock; null when the DataNode has no IPC server
  private ServerGate gate;                  // guarded by lock; null without data transfer protection
  private DiskIo disk;                      // guarded by lock
  private DiskMetrics metrics;              // guarded by lock
  private PluginMetrics pluginMetrics;      // guarded by lock
  private ShortCircuitServer shortCircuit;  // guarded by lock; null when off or it could not start
  private volatile State state = State.NEW;
  private volatile String failure;
  private volatile String warmUpResult;

  @Override
  public void start(Object service) {
    synchronized (lock) {
      if (state != State.NEW) {
        LOG.warn("hrdma datanode plugin: start called in state {}, ignored", state);
        return;
      }
      try {
        dn = DataNodeAccess.of(service);
      } catch (IllegalArgumentException e) {
        fail("hrdma datanode plugin: not starting: " + e.getMessage(), null);
        return;
      }
      state = State.WAITING;
      RUNNING.add(this);
    }
    // Listen now, on the DataNode's thread: stock's runDatanodeDaemon calls the plugins after it
    // started the threads that register with the NameNode, which first load the storage; until
    // the plugin serves, every hello is refused as "starting" (clients take the stock path for
    // that operation and come back shortly), where a closed port would send them away for long.
    Settings settings = settings(dn.conf());
    if (settings == null) {
      return;
    }
    StartingHandler gate = new StartingHandler();
    HrdmaServer s;
    try {
      // auto too: DataNodes started later in this JVM (a MiniDFSCluster) then lease these, while a
      // lone DataNode holds the only lease, the same as transports of its own
      s = settings.sharing() != Sharing.FALSE
          ? HrdmaServer.startShared(settings.tconf(), gate, settings.bindHost(), settings.port())
          : HrdmaServer.start(settings.tconf(), gate, settings.bindHost(), settings.port());
    } catch (Exception | LinkageError e) {
      fail("hrdma datanode plugin: cannot listen on " + settings.bindHost() + ":" + settings.port() + ": " + e
          + "; not serving, the stock data path is unaffected", null);
      return;
    }
    synchronized (lock) {
      if (state != State.WAITING) { // stopped meanwhile
        s.close();
        return;
      }
      listening = s;
      starting = gate;
      starter = new Thread(() -> startWhenReady(settings), "hrdma-dn-starter-" + dn.xferPort());
      starter.setDaemon(true);
      starter.start();
    }
    LOG.info("hrdma datanode plugin: listening on {} with {}, refusing connections as starting until it serves",
        s.serviceAddress(), s.offers().stream().map(a -> a.getTransport() + ":" + a.getPort()).toList());
  }

  /**
   * The plugin's settings from the DataNode's configuration, everything checked before it
   * listens; null when they are bad (failed, logged).
   */
  private Settings settings(Configuration conf) {
    try {
      int port = RdmaPorts.pluginPort(dn.xferPort(), conf);
      WireProtection wire = WireProtection.forDataNode(conf, port);
      if (wire.refusal() != null) {
        fail("hrdma datanode plugin: not serving: " + wire.refusal() + ". Make the plugin port privileged"
            + " (" + RdmaPorts.class.getSimpleName() + ", as stock's dfs.datanode.address) or set"
            + " dfs.data.transfer.protection; the stock data path is unaffected", null);
        return null;
      }
      Settings s = new Settings(bindHost(conf), port, transportConf(conf), ReadSettings.of(conf),
          DiskSettings.of(conf), DataNodeLimits.from(conf),
          Sharing.parse(conf.get(SHARE_TRANSPORTS_KEY, SHARE_TRANSPORTS_DEFAULT)), WriteShmGrants.of(conf), wire,
          conf.getInt(WRITE_THREADS_KEY, WRITE_THREADS_DEFAULT),
          conf.getLong(WRITE_SETUP_TIMEOUT_KEY, WRITE_SETUP_TIMEOUT_DEFAULT),
          conf.getInt(HrdmaDataNodeKeys.WRITE_MAX_SETUPS_KEY, HrdmaDataNodeKeys.WRITE_MAX_SETUPS_DEFAULT),
          conf.getInt(HrdmaDataNodeKeys.WRITE_MIRROR_POOL_KEY, HrdmaDataNodeKeys.WRITE_MIRROR_POOL_DEFAULT),
          conf.getLong(HrdmaDataNodeKeys.WRITE_MIRROR_IDLE_KEY, HrdmaDataNodeKeys.WRITE_MIRROR_IDLE_DEFAULT));
      if (s.writeThreads() < 1 || s.setupTimeoutMs() < 1 || s.maxSetups() < 1 || s.mirrorPool() < 0
          || s.mirrorIdleMs() < 1) {
        fail("hrdma datanode plugin: bad configuration, not serving: " + WRITE_THREADS_KEY + "=" + s.writeThreads()
            + ", " + WRITE_SETUP_TIMEOUT_KEY + "=" + s.setupTimeoutMs() + ", "
            + HrdmaDataNodeKeys.WRITE_MAX_SETUPS_KEY + "=" + s.maxSetups() + ", "
            + HrdmaDataNodeKeys.WRITE_MIRROR_POOL_KEY + "=" + s.mirrorPool() + ", "
            + HrdmaDataNodeKeys.WRITE_MIRROR_IDLE_KEY + "=" + s.mirrorIdleMs(), null);
        return null;
      }
      return s;
    } catch (IllegalArgumentException e) {
      fail("hrdma datanode plugin: bad configuration, not serving: " + e.getMessage(), null);
      return null;
    }
  }

  /** What {@link #start} read of the configuration for the starter thread. */
  private record Settings(String bindHost, int port, TransportConf tconf, ReadSettings read, DiskSettings disk,
      DataNodeLimits limits, Sharing sharing, WriteShmGrants writeShm, WireProtection wire, int writeThreads,
      long setupTimeoutMs, int maxSetups, int mirrorPool, long mirrorIdleMs) {}

  /**
   * The starter thread: serves once the DataNode is ready, else fails; either way the port is
   * released unless the plugin serves (a plugin that cannot start leaves no port refusing as
   * "starting" behind it).
   */
  private void startWhenReady(Settings s) {
    boolean serving = false;
    try {
      serving = serveWhenReady(s);
    } catch (RuntimeException | Error e) {
      if (state == State.WAITING) {
        fail("hrdma datanode plugin: cannot start: " + e + "; not serving, the stock data path is unaffected", e);
      }
      if (e instanceof VirtualMachineError) {
        throw e;
      }
    } finally {
      if (!serving) {
        HrdmaServer l;
        synchronized (lock) {
          l = listening;
          listening = null;
        }
        if (l != null) {
          l.close();
          LOG.info("hrdma datanode plugin: stopped listening on {}", l.serviceAddress());
        }
      }
    }
  }

  /** Waits for the DataNode, builds what serves it, warms up and serves; false when it does not serve. */
  private boolean serveWhenReady(Settings s) {
    Configuration conf = dn.conf();
    long timeoutMs = conf.getLong(START_TIMEOUT_KEY, START_TIMEOUT_DEFAULT);
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    LOG.info("hrdma datanode plugin: waiting up to {} ms for the DataNode's dataset and UUID", timeoutMs);
    try {
      while (!dn.isReady()) {
        if (System.nanoTime() > deadline) {
          fail("hrdma datanode plugin: the DataNode's dataset and UUID did not appear within " + timeoutMs
              + " ms (" + START_TIMEOUT_KEY + "); not serving, the stock data path is unaffected", null);
          return false;
        }
        Thread.sleep(POLL_MS);
      }
    } catch (InterruptedException e) {
      return false; // stop() during the wait
    }
    this.tconf = s.tconf();
    this.sharing = s.sharing();
    ReadSettings settings = s.read();
    DataNodeLimits limits = s.limits();
    long mirrorIdleMs = s.mirrorIdleMs();
    ThreadPoolExecutor executor = newExecutor(settings.threads(), "hrdma-dn-read-" + dn.xferPort() + "-");
    // a write's set-up (token, replica, downstream) runs here, on a thread of its own: creating the
    // replica touches a volume not known before, so a hung one holds only that thread; its packets
    // then run on its volume's threads
    ThreadPoolExecutor wexecutor = newSetupExecutor(s.maxSetups(), "hrdma-dn-write-setup-" + dn.xferPort() + "-");
    DiskIo diskIo = new DiskIo(s.disk(), dn.volumes());
    VolumeExecutors vexecutors = new VolumeExecutors(settings.threads(), s.writeThreads(), dn.xferPort());
    RequestDispatcher d = new RequestDispatcher(new OpContext(dn, settings, limits, executor, vexecutors, wexecutor,
        this::connector, s.setupTimeoutMs(), diskIo, s.writeShm(), new MirrorPool(s.mirrorPool(), mirrorIdleMs)));
    ScheduledThreadPoolExecutor timer = newTimer("hrdma-dn-timer-" + dn.xferPort());
    // a tenth of the shorter timeout: a write times out at most 10% late (stock's is on the socket read)
    long sweepMs = Math.max(50, Math.min(1000, Math.min(Math.min(Math.min(limits.idleTimeoutMs(),
        limits.packetTimeoutMs()), mirrorIdleMs), limits.writeTimeoutMs() > 0 ? limits.writeTimeoutMs()
            : Long.MAX_VALUE) / 10));
    timer.scheduleWithFixedDelay(() -> {
      try {
        d.sweep();
        d.context().mirrors().expire();
      } catch (RuntimeException e) {
        LOG.warn("hrdma datanode plugin: the timeout sweep failed", e);
      }
    }, sweepMs, sweepMs, TimeUnit.MILLISECONDS);
    EndpointHandler handler;
    ShortCircuitServer scr = null;
    HrdmaServer srv = null;
    boolean ok = false;
    try {
      handler = connectionHandler(d, s.wire(), dn);
      if (conf.getBoolean(HrdmaDataNodeKeys.WARM_UP_KEY, HrdmaDataNodeKeys.WARM_UP_DEFAULT)) {
        warmUp();
      }
      scr = startShortCircuit(conf, settings, s.writeShm(), vexecutors);
      synchronized (lock) {
        if (state == State.WAITING) {
          shortCircuit = scr;
          srv = listening;
          server = srv;
          listening = null;
          disk = diskIo;
          metrics = DiskMetrics.register("HrdmaDisk-" + dn.xferPort(), diskIo);
          pluginMetrics = PluginMetrics.register(dn.xferPort(), this);
          readExecutor = executor;
          writeExecutor = wexecutor;
          this.timer = timer;
          volumeExecutors = vexecutors;
          dispatcher = d;
          gate = handler instanceof ServerGate g ? g : null;
          // dfsadmin -evictWriters evicts our writes as the DataNode's own; -shutdownDatanode upgrade restarts them
          ipcHook = dn.hookClientDatanodeProtocol(d::evictWriters);
          state = State.SERVING;
          // last: a connection admitted from here on finds the plugin serving (a forwarded write its connector)
          starting.serve(handler);
          ok = true;
        }
      }
    } finally {
      if (!ok) { // stopped meanwhile, or a failure the caller reports
        timer.shutdownNow();
        vexecutors.close();
        if (scr != null) {
          scr.close();
        }
        executor.shutdownNow();
        wexecutor.shutdownNow();
        diskIo.close();
      }
    }
    if (!ok) {
      return false;
    }
    LOG.info("hrdma datanode plugin: serving DataNode {} (xfer port {}) on {} with {}, data transfer protection {}",
        dn.datanodeUuid(), dn.xferPort(), srv.serviceAddress(), srv.offers().stream()
            .map(a -> a.getTransport() + ":" + a.getPort()).toList(), s.wire());
    List<String> unset = UcxStartEnvironment.missing();
    if (!unset.isEmpty()) {
      LOG.warn("hrdma datanode plugin: {} not in the DataNode's start environment: libhrdma-preload set them while"
          + " the DataNode's threads ran (glibc's setenv is not safe against their getenv); export {} in"
          + " hadoop-env.sh (docs/install.md)", unset, UcxStartEnvironment.VARIABLES.entrySet().stream()
              .map(e -> e.getKey() + "=" + e.getValue()).collect(java.util.stream.Collectors.joining(" ")));
    }
    return true;
  }

  /**
   * Runs {@link DataNodeWarmUp} on this (the starter's) thread before the plugin serves; a
   * failure is logged, and the plugin serves as it would have without the warm-up.
   */
  private void warmUp() {
    long t0 = System.nanoTime();
    try {
      int n = warmUpBody.call();
      warmUpResult = "ok";
      LOG.info("hrdma datanode plugin: warmed up the write path ({} messages) in {} ms", n,
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
    } catch (Exception | LinkageError e) {
      warmUpResult = "failed: " + e;
      LOG.warn("hrdma datanode plugin: the warm-up failed ({}); serving without it", e.toString(), e);
    }
  }

  /** "ok" or "failed: why" once the warm-up ran, null when it did not (off, or not started yet); for tests and status. */
  public String warmUpResult() {
    return warmUpResult;
  }

  /**
   * The handler the server runs on every transport: the place where a connection-level step
   * (an authentication handshake) wraps the dispatcher. Whatever wraps it must pass on
   * {@link org.hdfsrdma.transport.EndpointHandler#admit} (the connection cap) and call the
   * dispatcher's {@code onConnected} only once the connection is authenticated: the dispatcher
   * runs no operation handler for a connection it was not told of.
   */
  private static EndpointHandler connectionHandler(RequestDispatcher d, WireProtection wire, DataNodeAccess dn) {
    return ServerGate.wrap(d, wire, dn.wireSecrets(), dn.datanodeUuid());
  }

  private static ScheduledThreadPoolExecutor newTimer(String name) {
    ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
      Thread th = new Thread(r, name);
      th.setDaemon(true);
      return th;
    });
    t.setRemoveOnCancelPolicy(true);
    return t;
  }

  /** The short-circuit server, or null when off or it cannot start (logged: clients read over the transports). */
  private ShortCircuitServer startShortCircuit(Configuration conf, ReadSettings settings, WriteShmGrants writeShm,
      VolumeExecutors volumes) {
    if (!settings.localReads() && !writeShm.enabled()) {
      return null;
    }
    String path = org.hdfsrdma.protocol.ShortCircuitSocket.path(conf, dn.xferPort());
    try {
      ShortCircuitServer scr = ShortCircuitServer.start(dn, path,
          conf.getLong(ShortCircuitServer.TIMEOUT_KEY, ShortCircuitServer.TIMEOUT_DEFAULT),
          conf.getInt(ShortCircuitServer.MAX_CONNECTIONS_KEY, ShortCircuitServer.MAX_CONNECTIONS_DEFAULT),
          org.hdfsrdma.protocol.SocketPaths.stickyAllowedForServer(conf), settings.localReads(), writeShm,
          volumes::of); // a request's opens run on its replica's volume's read threads
      LOG.info("hrdma datanode plugin: short-circuit reads on {}", scr.path());
      return scr;
    } catch (IOException | RuntimeException | LinkageError e) {
      LOG.warn("hrdma datanode plugin: no short-circuit reads (clients read over the transports): {}",
          e.toString());
      return null;
    }
  }

  private String bindHost(Configuration conf) {
    String host = conf.getTrimmed(BIND_HOST_KEY, BIND_HOST_DEFAULT);
    if (!host.isEmpty()) {
      return host;
    }
    InetSocketAddress xfer = dn.xferAddress();
    InetAddress a = xfer.getAddress();
    return a != null ? a.getHostAddress() : xfer.getHostString();
  }

  /**
   * The {@code hrdma.*} entries of the DataNode's configuration (with the hello wait computed
   * where it is unset: {@link HadoopTransportConf#of}).
   */
  static TransportConf transportConf(Configuration conf) {
    return HadoopTransportConf.of(conf);
  }

  /** The connector for forwarding writes downstream (the client's code path), made on first use. */
  private HrdmaConnector connector() {
    synchronized (lock) {
      if (state != State.SERVING) {
        throw new IllegalStateException("the plugin is not serving (" + state + ")");
      }
      if (connector == null) {
        connector = new HrdmaConnector(tconf, sharesConnector());
      }
      return connector;
    }
  }

  /**
   * Whether the forwarding connector leases the JVM's transports. Decided when the first write is
   * forwarded, when the DataNodes of a MiniDFSCluster have all started.
   */
  private boolean sharesConnector() {
    return sharesConnector(sharing, RUNNING.stream().anyMatch(p -> p != this));
  }

  /**
   * With {@code s}, whether a DataNode's forwarding connector leases the JVM's transports; {@code others}:
   * another DataNode plugin runs in the JVM. With auto only then, so that a DataNode alone in its JVM
   * forwards on transports of its connector's own; with true (the default) also then, on its server's.
   */
  static boolean sharesConnector(Sharing s, boolean others) {
    return switch (s) {
      case TRUE -> true;
      case FALSE -> false;
      case AUTO -> others;
    };
  }

  /** The transports of the connector that forwards writes downstream, by name; empty before the first (tests, status). */
  public java.util.Map<String, Transport> connectorTransports() {
    synchronized (lock) {
      return connector == null ? java.util.Map.of() : connector.transports();
    }
  }

  /**
   * One thread per task in progress, up to {@code max}, reused while busy and gone after 30 s
   * idle; one task more is refused (RejectedExecutionException), never queued behind a hung one.
   */
  static ThreadPoolExecutor newSetupExecutor(int max, String prefix) {
    AtomicInteger n = new AtomicInteger();
    return new ThreadPoolExecutor(0, max, 30, TimeUnit.SECONDS, new java.util.concurrent.SynchronousQueue<>(), r -> {
      Thread t = new Thread(r, prefix + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * A read or write executor: a fixed number of daemon threads and a bounded
   * queue (a full queue refuses the request with an error; it never blocks an
   * I/O thread).
   */
  private static ThreadPoolExecutor newExecutor(int threads, String prefix) {
    AtomicInteger n = new AtomicInteger();
    ThreadPoolExecutor e = new ThreadPoolExecutor(threads, threads, 30,
        TimeUnit.SECONDS, new ArrayBlockingQueue<>(1024), r -> {
          Thread t = new Thread(r, prefix + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
    e.allowCoreThreadTimeOut(true);
    return e;
  }

  private void fail(String message, Throwable t) {
    failure = message;
    state = State.FAILED;
    if (t == null) {
      LOG.error(message);
    } else {
      LOG.error(message, t);
    }
  }

  @Override
  public void stop() {
    Thread t;
    HrdmaServer s;
    ThreadPoolExecutor ex;
    ThreadPoolExecutor wex;
    ScheduledThreadPoolExecutor tm;
    VolumeExecutors vex;
    HrdmaConnector conn;
    DiskIo dio;
    DiskMetrics m;
    PluginMetrics pm;
    ShortCircuitServer scr;
    ClientDatanodeHook evict;
    RequestDispatcher disp;
    synchronized (lock) {
      if (state == State.STOPPED) {
        return;
      }
      scr = shortCircuit;
      shortCircuit = null;
      dio = disk;
      m = metrics;
      pm = pluginMetrics;
      disk = null;
      metrics = null;
      pluginMetrics = null;
      state = State.STOPPED;
      t = starter;
      s = server != null ? server : listening;
      listening = null;
      ex = readExecutor;
      wex = writeExecutor;
      tm = timer;
      timer = null;
      vex = volumeExecutors;
      volumeExecutors = null;
      conn = connector;
      starter = null;
      server = null;
      readExecutor = null;
      writeExecutor = null;
      connector = null;
      disp = dispatcher;
      dispatcher = null;
      evict = ipcHook;
      ipcHook = null;
    }
    RUNNING.remove(this);
    if (evict != null) {
      if (evict.shutdownForUpgrade() && disp != null) {
        // stock's DataNode#shutdown for an upgrade: its writers learn of the restart before it stops
        disp.restartWritersForUpgrade(dn.restartReplicaExpiryMs());
      }
      evict.close();
    }
    if (t != null) {
      t.interrupt();
      try {
        t.join(TimeUnit.SECONDS.toMillis(30));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (t.isAlive()) {
        LOG.warn("hrdma datanode plugin: starter thread {} did not end", t.getName());
      }
    }
    if (tm != null) {
      tm.shutdownNow();
    }
    if (s != null) {
      s.close();
      LOG.info("hrdma datanode plugin: stopped serving on {}", s.serviceAddress());
    }
    if (scr != null) {
      scr.close();
    }
    for (ThreadPoolExecutor e : new ThreadPoolExecutor[] {ex, wex}) {
      if (e != null) {
        e.shutdownNow();
        try {
          if (!e.awaitTermination(10, TimeUnit.SECONDS)) {
            LOG.warn("hrdma datanode plugin: worker threads did not end within 10 s");
          }
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
        }
      }
    }
    if (vex != null) {
      try {
        vex.shutdown(10_000);
      } catch (InterruptedException ie) {
        Thread.currentThread().interrupt();
      }
    }
    if (disp != null) {
      disp.context().mirrors().close(); // before the connector whose connections they are
    }
    if (conn != null) {
      conn.close();
    }
    if (m != null) {
      m.unregister();
    }
    if (pm != null) {
      pm.unregister();
    }
    if (dio != null) {
      dio.close(); // after the executors: nothing waits on a scheduler any more
    }
  }

  @Override
  public void close() {
    stop();
  }

  public State state() {
    return state;
  }

  /** Why the plugin is {@link State#FAILED}, else null. */
  public String failure() {
    return failure;
  }

  /** The tcp service address while {@link State#SERVING}, else null. */
  public InetSocketAddress serviceAddress() {
    synchronized (lock) {
      return server == null ? null : server.serviceAddress();
    }
  }

  /**
   * Hellos refused because the plugin did not serve yet (the "starting" refusal) since it
   * started listening (tests, status).
   */
  public long refusedStarting() {
    synchronized (lock) {
      return starting == null ? 0 : starting.refusedStarting();
    }
  }

  /** The tcp service address once {@link #start} listens, while WAITING or SERVING, else null (tests, status). */
  public InetSocketAddress listeningAddress() {
    synchronized (lock) {
      HrdmaServer s = server != null ? server : listening;
      return s == null ? null : s.serviceAddress();
    }
  }

  /** The DataNode's UUID, null before it exists. */
  public String datanodeUuid() {
    return dn == null ? null : dn.datanodeUuid();
  }

  /** The running server, or null. */
  HrdmaServer server() {
    synchronized (lock) {
      return server;
    }
  }

  /**
   * The transports the server runs, by name, while serving (else empty). Unless
   * {@value #SHARE_TRANSPORTS_KEY} is false they are the JVM's shared ones: the same objects in
   * every plugin of this JVM with the same transport settings (tests, status).
   */
  public java.util.Map<String, Transport> transports() {
    synchronized (lock) {
      return server == null ? java.util.Map.of() : server.transports();
    }
  }

  /**
   * Registered buffers the server's transports, and those of the connector
   * that forwards writes downstream, have handed out and not got back (leak checks);
   * with shared transports, those of every plugin sharing them.
   */
  public long buffersOutstanding() {
    // a transport shared by the server and the connector (or other plugins) counted once
    java.util.Set<Transport> all = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    synchronized (lock) {
      if (server != null) {
        all.addAll(server.transports().values());
      }
      if (connector != null) {
        all.addAll(connector.transports().values());
      }
    }
    long n = 0;
    for (Transport t : all) {
      n += t.allocator().buffersOutstanding();
    }
    return n;
  }

  /** Block writes open now (tests). */
  public int openWrites() {
    synchronized (lock) {
      return dispatcher == null ? 0 : dispatcher.openWrites();
    }
  }

  /**
   * Writes this DataNode forwarded to the next DataNode over stock's DataTransferProtocol, that
   * DataNode not being reachable over our transports (tests, status, metrics).
   */
  public long stockForwards() {
    synchronized (lock) {
      return dispatcher == null ? 0 : dispatcher.context().stockForwards();
    }
  }

  /** Reads whose O_DIRECT reads started ahead of their turn on their connection (tests, status). */
  public long readsPreparedAhead() {
    synchronized (lock) {
      return dispatcher == null ? 0 : dispatcher.context().readsPreparedAhead();
    }
  }

  /** Read packets sent by reference, in shared memory, to clients on this host (tests, status). */
  public long readPacketsByReference() {
    synchronized (lock) {
      return dispatcher == null ? 0 : dispatcher.context().shm().packetsByReference();
    }
  }

  /** Shared-memory segments granted to clients on this host so far (tests, status). */
  public long sharedSegmentsGranted() {
    synchronized (lock) {
      return dispatcher == null ? 0 : dispatcher.context().shm().granted();
    }
  }

  /** Shared-memory segment requests refused so far: token, budgets, another host (tests, status, metrics). */
  public long sharedSegmentsRefused() {
    synchronized (lock) {
      return dispatcher == null ? 0 : dispatcher.segmentsRefused();
    }
  }

  /** Granted shared-memory segments freed because the client did not map them in time (tests, status). */
  public long sharedSegmentMapTimeouts() {
    synchronized (lock) {
      return dispatcher == null ? 0 : dispatcher.segmentMapTimeouts();
    }
  }

  /** Same-host writes by reference: this DataNode's write segments (tests, status); null before it serves. */
  public WriteShmStats writeShm() {
    synchronized (lock) {
      if (dispatcher == null) {
        return null;
      }
      WriteShmGrants g = dispatcher.context().writeShm();
      ShortCircuitServer scr = shortCircuit;
      return new WriteShmStats(g.segments(), g.bytesMapped(), g.pendingGrants(), g.granted(), g.refused(),
          scr == null ? 0 : scr.segmentsPassed(), g.mapTimeouts(), g.packetsByReference(), g.badReferences(),
          dispatcher.forwardedByReference(), dispatcher.forwardSegments());
    }
  }

  /**
   * Counts of same-host writes by reference: {@code segments} mapped now and their {@code bytes},
   * {@code pending} grants not fetched yet, {@code granted}, {@code refused}, descriptors
   * {@code passed} on the domain socket, grants freed for the {@code mapTimeouts}, packets
   * {@code byReference} received, {@code badReferences} refused; {@code forwardedByReference}
   * packets this DataNode sent downstream by reference and the {@code forwardSegments} it maps now
   * as a sender.
   */
  public record WriteShmStats(long segments, long bytes, long pending, long granted, long refused, long passed,
      long mapTimeouts, long byReference, long badReferences, long forwardedByReference, long forwardSegments) {}

  /** The connections to next DataNodes kept between blocks (tests, status); null before it serves. */
  public MirrorStats mirrors() {
    synchronized (lock) {
      if (dispatcher == null) {
        return null;
      }
      MirrorPool p = dispatcher.context().mirrors();
      return new MirrorStats(p.opened(), p.reused(), p.expired(), p.idleConnections(), p.liveConnections());
    }
  }

  /**
   * A forwarding DataNode's connections downstream: {@code opened} in all, writes that
   * {@code reused} a kept one, {@code expired} idle ones closed, {@code idle} kept now, {@code live}
   * not closed yet (idle or carrying a write).
   */
  public record MirrorStats(long opened, long reused, long expired, long idle, long live) {}

  /** Bytes of shared-memory segments mapped now (leak checks: 0 once no client is connected). */
  public long sharedSegmentBytes() {
    synchronized (lock) {
      return dispatcher == null ? 0 : dispatcher.context().shm().bytesMapped();
    }
  }

  /** Connections refused at the hello for {@value DataNodeLimits#MAX_CONNECTIONS_KEY} (tests, status). */
  public long refusedConnections() {
    synchronized (lock) {
      return dispatcher == null ? 0 : dispatcher.refusedConnections();
    }
  }

  /**
   * Connections closed because they took none of what they were sent for
   * {@value DataNodeLimits#WRITE_TIMEOUT_KEY} (tests, metrics).
   */
  public long stalledConnectionsClosed() {
    synchronized (lock) {
      return dispatcher == null ? 0 : dispatcher.stalledClosed();
    }
  }

  /** Connections closed for {@value DataNodeLimits#IDLE_TIMEOUT_KEY} (tests, status). */
  public long idleConnectionsClosed() {
    synchronized (lock) {
      return dispatcher == null ? 0 : dispatcher.idleClosed();
    }
  }

  /**
   * Answers queued on this DataNode's connections for lack of their peers' credits, now (tests,
   * metrics): a peer that takes none of its answers is owed at most two credit windows of them
   * (the transport stops granting it credits, docs/transport.md).
   */
  public int queuedAnswers() {
    synchronized (lock) {
      return dispatcher == null ? 0 : dispatcher.queuedAnswers();
    }
  }

  /**
   * Times, in this process, an endpoint stopped granting credits to a peer that took none of what it
   * was sent (every endpoint of the JVM: DataNodes sharing it count together).
   */
  public long answerBacklogStalls() {
    return org.hdfsrdma.transport.AbstractEndpoint.backlogStalls();
  }

  /** Messages over their kind's size bound; each closed its connection (tests, status). */
  public long oversizedMessages() {
    synchronized (lock) {
      return dispatcher == null ? 0 : dispatcher.oversizedMessages();
    }
  }

  /** Connections that completed the data transfer protection handshake (0 when not required). */
  public long wireHandshakes() {
    synchronized (lock) {
      return gate == null ? 0 : gate.handshakesCompleted();
    }
  }

  /** Connections refused for an op before the handshake, or for not finishing it in time. */
  public long wireUnprotectedRefused() {
    synchronized (lock) {
      return gate == null ? 0 : gate.unprotectedRefused();
    }
  }

  /** Handshakes refused: wrong key, expired or unknown block token, bad message. */
  public long wireHandshakesFailed() {
    synchronized (lock) {
      return gate == null ? 0 : gate.handshakesFailed();
    }
  }

  /** Connections served without a handshake on a trusted channel (dfs.trustedchannel.resolver.class). */
  public long wireTrustedChannels() {
    synchronized (lock) {
      return gate == null ? 0 : gate.trustedChannels();
    }
  }

  /** Connections closed on a message that failed its authentication tag. */
  public long wireBadTags() {
    synchronized (lock) {
      return gate == null ? 0 : gate.badTags();
    }
  }

  /** Short-circuit requests answered with the replica's descriptors so far (tests, status). */
  public long shortCircuitGranted() {
    synchronized (lock) {
      return shortCircuit == null ? 0 : shortCircuit.granted();
    }
  }

  /** Of {@link #shortCircuitGranted}, those whose replica this DataNode caches (the client skips checksums). */
  public long shortCircuitGrantedCached() {
    synchronized (lock) {
      return shortCircuit == null ? 0 : shortCircuit.grantedCached();
    }
  }

  /** Short-circuit requests that asked how much of a range of the block is in the page cache (tests, status). */
  public long shortCircuitProbes() {
    synchronized (lock) {
      return shortCircuit == null ? 0 : shortCircuit.probes();
    }
  }

  /** Short-circuit requests refused so far: token, replica not finalized, bad request (tests, status). */
  public long shortCircuitRefused() {
    synchronized (lock) {
      return shortCircuit == null ? 0 : shortCircuit.refused();
    }
  }

  /**
   * Short-circuit requests refused because their replica's volume did not open it within
   * {@code hrdma.datanode.short-circuit.timeout-ms} (a hung volume; tests, status, metrics).
   */
  public long shortCircuitVolumeTimeouts() {
    synchronized (lock) {
      return shortCircuit == null ? 0 : shortCircuit.volumeTimeouts();
    }
  }

  /**
   * Short-circuit requests whose volume did its work (the opens) only after they were refused
   * for its timeout or their client went; what it opened was closed then (tests, status).
   */
  public long shortCircuitLateLookups() {
    synchronized (lock) {
      return shortCircuit == null ? 0 : shortCircuit.lateLookups();
    }
  }

  /**
   * Descriptors the short-circuit server has opened to pass and not closed yet (leak checks: 0
   * once no exchange is in progress and every volume has answered).
   */
  public long shortCircuitDescriptorsOpen() {
    synchronized (lock) {
      return shortCircuit == null ? 0 : shortCircuit.descriptorsOpen();
    }
  }

  /** The short-circuit socket's path while it listens, else null. */
  public java.nio.file.Path shortCircuitPath() {
    synchronized (lock) {
      return shortCircuit == null ? null : shortCircuit.path();
    }
  }

  /** Client connections open now. */
  public int openConnections() {
    synchronized (lock) {
      return dispatcher == null ? 0 : dispatcher.connections();
    }
  }

  /**
   * Connections holding a place in the connection cap now ({@code hrdma.datanode.max-connections}):
   * those still in the data transfer protection handshake as well as those served.
   */
  public int admittedConnections() {
    synchronized (lock) {
      return dispatcher == null ? 0 : dispatcher.admittedConnections();
    }
  }

  /** Client connections open now, per transport name (metrics). */
  java.util.Map<String, Integer> connectionsByTransport() {
    synchronized (lock) {
      return dispatcher == null ? java.util.Map.of() : dispatcher.connectionsByTransport();
    }
  }

  /** The name of the plugin's metrics2 source (JMX {@code Hadoop:service=DataNode,name=...}), null when not serving. */
  public String metricsName() {
    synchronized (lock) {
      return pluginMetrics == null ? null : pluginMetrics.name();
    }
  }

  /** The per-volume disk schedulers while serving, else null. */
  public DiskIo disk() {
    synchronized (lock) {
      return disk;
    }
  }

  /** Plugins started in this JVM and not stopped yet. */
  public static List<RdmaDataNodePlugin> running() {
    return List.copyOf(RUNNING);
  }

  @Override
  public String toString() {
    return "RdmaDataNodePlugin[" + state + (dn == null ? "" : ", " + dn) + "]";
  }
}
