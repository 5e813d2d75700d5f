package org.hdfsrdma.client;

import java.lang.management.ManagementFactory;
import java.util.Map;
import java.util.TreeMap;
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
 * fresh JVM a few hundred milliseconds of class loading (JMX, commons-configuration2), so both
 * run on a daemon thread of their own, not in {@code FileSystem.initialize}: a short command
 * ({@code hadoop fs -put}) does not wait for them. Values are read from the file system when
 * metrics are collected; thread-safe.
 */
final class ClientMetrics extends HrdmaMetricsSource {
  private static final Logger LOG = LoggerFactory.getLogger(ClientMetrics.class);
  static final String PREFIX = "HrdmaClient-";
  static final String SYSTEM_PREFIX = "HrdmaClient";
  static final MetricsInfo TRANSPORT = Interns.info("Transport", "the transport's name");
  private static final AtomicInteger SEQ = new AtomicInteger();

  private final RdmaDistributedFileSystem fs;
  private volatile boolean closed; // written under this

  private ClientMetrics(String name, RdmaDistributedFileSystem fs) {
    super(name);
    this.fs = fs;
  }

  /**
   * A source for {@code fs}, registered (the metrics system started first where none runs) on a
   * daemon thread started here; a failure is logged, never thrown. {@link #close} undoes it,
   * also when it comes first.
   */
  static ClientMetrics register(RdmaDistributedFileSystem fs) {
    ClientMetrics m = new ClientMetrics(PREFIX + SEQ.incrementAndGet(), fs);
    Thread t = new Thread(m::start, "hrdma-client-metrics-" + m.name());
    t.setDaemon(true);
    t.start();
    return m;
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
