package org.hdfsrdma.client;

import java.lang.management.ManagementFactory;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsException;
import org.apache.hadoop.metrics2.MetricsInfo;
import org.apache.hadoop.metrics2.MetricsRecordBuilder;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.metrics2.lib.Interns;
import org.hdfsrdma.protocol.metrics.HrdmaMetricsSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One {@link RdmaDistributedFileSystem}'s counters as a Hadoop metrics2 source named
 * {@code HrdmaClient-<n>} (JMX {@code Hadoop:service=<the process's metrics prefix>,name=HrdmaClient-<n>}):
 * an {@code HrdmaClient} record (bytes read over hrdma, short-circuit and stock, bytes
 * written, fallbacks, recoveries, checksum errors, connections) and one {@code HrdmaTransport}
 * record per transport (tag {@code Transport}: connections, registered buffers outstanding).
 * In a process whose metrics system is not running (a plain client JVM) it is started with
 * the prefix {@code HrdmaClient}, so the bean is there. Starting it and registering take a
 * fresh JVM a few hundred milliseconds of CPU (JMX, commons-configuration2: some 350 classes),
 * which a short command ({@code hadoop fs -put}) would spend for a bean nobody reads before it
 * exits, and which competes with that command's own start-up on a small machine. So both run
 * {@code hrdma.client.metrics.delay-ms} (10 s, one metrics period) after the file system was
 * created, on a daemon thread shared by the file systems of the JVM, and not at all when it is
 * closed first: a short command never pays, a long-lived client (a Spark executor, a region
 * server) has its bean from then on. Values are read from the file system when metrics are
 * collected; thread-safe.
 */
final class ClientMetrics extends HrdmaMetricsSource {
  private static final Logger LOG = LoggerFactory.getLogger(ClientMetrics.class);
  static final String PREFIX = "HrdmaClient-";
  static final String SYSTEM_PREFIX = "HrdmaClient";
  static final MetricsInfo TRANSPORT = Interns.info("Transport", "the transport's name");
  private static final AtomicInteger SEQ = new AtomicInteger();

  private final RdmaDistributedFileSystem fs;
  private volatile boolean closed; // written under this
  private Future<?> pending; // guarded by this

  private ClientMetrics(String name, RdmaDistributedFileSystem fs) {
    super(name);
    this.fs = fs;
  }

  /**
   * A source for {@code fs}, registered (the metrics system started first where none runs)
   * {@code delayMs} from now on the shared daemon thread; a failure is logged, never thrown.
   * {@link #close} undoes it, also when it comes first (then nothing is started).
   */
  static ClientMetrics register(RdmaDistributedFileSystem fs, long delayMs) {
    ClientMetrics m = new ClientMetrics(PREFIX + SEQ.incrementAndGet(), fs);
    synchronized (m) {
      m.pending = Scheduler.INSTANCE.schedule(m::start, Math.max(0, delayMs), TimeUnit.MILLISECONDS);
    }
    return m;
  }

  /** The daemon thread that registers sources; it ends when idle, so a JVM holds no thread for it. */
  private static final class Scheduler {
    static final ScheduledThreadPoolExecutor INSTANCE = make();

    private static ScheduledThreadPoolExecutor make() {
      ScheduledThreadPoolExecutor e = new ScheduledThreadPoolExecutor(1, r -> {
        Thread t = new Thread(r, "hrdma-client-metrics");
        t.setDaemon(true);
        return t;
      });
      e.setRemoveOnCancelPolicy(true); // a closed file system's task goes at once
      e.setKeepAliveTime(1, TimeUnit.SECONDS);
      e.allowCoreThreadTimeOut(true);
      return e;
    }
  }

  /** Returns once every registration due by now has run (for tests). */
  static void awaitDue() throws InterruptedException, java.util.concurrent.ExecutionException {
    Scheduler.INSTANCE.submit(() -> { }).get();
  }

  /** Whether the source is still to be registered (for tests). */
  synchronized boolean pending() {
    return pending != null && !pending.isDone();
  }

  private void start() {
    if (closed) {
      return;
    }
    try {
      // the slow part, outside the lock: a close (a JVM exiting) does not wait for it
      if (!metricsSystemRunning()) {
        DefaultMetricsSystem.initialize(SYSTEM_PREFIX);
      }
    } catch (RuntimeException e) { // MetricsException among them
      LOG.warn("hrdma client: cannot start a metrics system for {}: {}", name(), e.toString());
      return;
    }
    synchronized (this) {
      if (!closed) {
        register("hrdma client");
      }
    }
  }

  /** Unregisters the source, or keeps it from being registered if that has not happened yet. */
  synchronized void close() {
    closed = true;
    if (pending != null) {
      pending.cancel(false);
    }
    unregister();
  }

  /** Whether a metrics system runs in this JVM: its own statistics bean is registered once it started. */
  private static boolean metricsSystemRunning() {
    try {
      return !ManagementFactory.getPlatformMBeanServer()
          .queryNames(new ObjectName("Hadoop:name=MetricsSystem,sub=Stats,*"), null).isEmpty();
    } catch (MalformedObjectNameException e) {
      throw new AssertionError(e);
    }
  }

  @Override
  public void getMetrics(MetricsCollector collector, boolean all) {
    RdmaBlockClient c = fs.blockClientIfStarted();
    collector.addRecord("HrdmaClient").setContext("dfs")
        .addCounter(info("RdmaBytesRead", "bytes read over hrdma transports"), fs.rdmaBytesRead())
        .addCounter(info("LocalBytesRead", "bytes read by short-circuit from replica files"), fs.localBytesRead())
        .addCounter(info("ZeroCopyBytesRead", "bytes handed out as mapped slices of replica files"),
            fs.zeroCopyBytesRead())
        .addCounter(info("ZeroCopyFallbacks", "zero-copy reads served by a copying read"), fs.zeroCopyFallbacks())
        .addCounter(info("LocalBytesUnverified", "short-circuit bytes handed out without checksum work"),
            fs.localBytesUnverified())
        .addCounter(info("StockBytesRead", "bytes read through the stock data path"), fs.stockBytesRead())
        .addCounter(info("RdmaBytesWritten", "bytes written over hrdma transports"), fs.rdmaBytesWritten())
        .addCounter(info("StockFallbacks", "DataNodes that fell back to the stock data path"), fs.stockFallbacks())
        .addCounter(info("StartingFallbacks", "reads sent to the stock data path for a short while by a DataNode"
            + " plugin still starting"), fs.startingFallbacks())
        .addCounter(info("StockWriteFallbacks", "files written through the stock path"), fs.stockWriteFallbacks())
        .addCounter(info("PipelineRecoveries", "write pipelines set up again after a failure"),
            fs.pipelineRecoveries())
        .addCounter(info("ChecksumErrors", "checksum errors met by readers"), fs.checksumErrors())
        .addCounter(info("BadReplicasReported", "replicas reported corrupt"), fs.badReplicasReported())
        .addCounter(info("ShmReleaseBacklogs", "same-host connections closed: the DataNode took none of "
            + "more shared-memory releases than its segment holds"), c == null ? 0 : c.sharedMemoryReleaseBacklogs())
        .addGauge(info("FilesBeingWritten", "files open for writing under this client's lease"),
            fs.filesBeingWritten())
        .addGauge(info("OpenConnections", "DataNode connections open"), c == null ? 0 : c.openConnections())
        .addGauge(info("BuffersOutstanding", "registered buffers handed out and not returned"),
            c == null ? 0 : c.buffersOutstanding());
    if (c == null) {
      return;
    }
    Map<String, Integer> conns = c.connectionsByTransport();
    Map<String, Long> buffers = c.buffersByTransport();
    TreeMap<String, Boolean> names = new TreeMap<>();
    conns.keySet().forEach(n -> names.put(n, true));
    buffers.keySet().forEach(n -> names.put(n, true));
    for (String t : names.keySet()) {
      MetricsRecordBuilder rb = collector.addRecord("HrdmaTransport").setContext("dfs").tag(TRANSPORT, t);
      rb.addGauge(info("Connections", "connections open over this transport"), conns.getOrDefault(t, 0))
          .addGauge(info("BuffersOutstanding", "this transport's registered buffers handed out and not returned"),
              buffers.getOrDefault(t, 0L));
    }
  }
}
