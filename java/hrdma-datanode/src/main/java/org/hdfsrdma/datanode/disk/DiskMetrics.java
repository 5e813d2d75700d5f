package org.hdfsrdma.datanode.disk;

import java.util.Map;
import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsInfo;
import org.apache.hadoop.metrics2.MetricsRecordBuilder;
import org.apache.hadoop.metrics2.lib.Interns;
import org.hdfsrdma.protocol.metrics.HrdmaMetricsSource;

/**
 * The volumes' scheduler statistics as a Hadoop metrics2 source (one record
 * per volume, tagged with its storage id and policy), and so as the JMX bean
 * {@code Hadoop:service=DataNode,name=HrdmaDisk-<xfer port>}.
 */
public final class DiskMetrics extends HrdmaMetricsSource {

  static final MetricsInfo STORAGE = Interns.info("StorageId", "the volume's storage id");
  static final MetricsInfo POLICY = Interns.info("Policy", "the volume's scheduling policy");

  private final DiskIo disk;

  private DiskMetrics(String name, DiskIo disk) {
    super(name);
    this.disk = disk;
  }

  /** Registers with the process's metrics system (a failure is logged, never thrown). */
  public static DiskMetrics register(String name, DiskIo disk) {
    DiskMetrics m = new DiskMetrics(name, disk);
    m.register("hrdma per-volume disk schedulers");
    return m;
  }

  @Override
  public void getMetrics(MetricsCollector collector, boolean all) {
    for (Map.Entry<String, VolumeScheduler> e : disk.schedulers().entrySet()) {
      VolumeStats.Snapshot s = e.getValue().stats().snapshot();
      MetricsRecordBuilder rb = collector.addRecord("HrdmaDiskVolume").setContext("dfs")
          .tag(STORAGE, e.getKey()).tag(POLICY, e.getValue().policy().name());
      rb.addGauge(info("QueueDepth", "requests queued"), s.queued())
          .addGauge(info("InFlight", "requests on the device"), s.inFlight())
          .addGauge(info("MaxQueued", "most requests queued at once"), s.maxQueued())
          .addCounter(info("Requests", "requests served"), s.requests())
          .addCounter(info("BytesRead", "bytes read"), s.bytesRead())
          .addCounter(info("BytesWritten", "bytes written"), s.bytesWritten())
          .addGauge(info("LatencyP50Us", "request latency (queue and device), median, us"), s.latencyP50Us())
          .addGauge(info("LatencyP90Us", "request latency, 90th percentile, us"), s.latencyP90Us())
          .addGauge(info("LatencyP99Us", "request latency, 99th percentile, us"), s.latencyP99Us())
          .addGauge(info("BusyThroughput", "bytes per second while busy"), s.busyBytesPerSec())
          .addGauge(info("AvgSequentialRunBytes", "average sequential run"), s.avgRunBytes())
          .addCounter(info("SequentialRuns", "sequential runs ended"), s.runs())
          .addCounter(info("SequentialRunBytes", "bytes in the sequential runs ended"), s.runBytes())
          .addCounter(info("FinalizedBlocks", "blocks finalized"), s.finalizedBlocks())
          .addGauge(info("ExtentsPerBlock", "average extents per finalized block"), s.avgExtentsPerBlock())
          .addGauge(info("MaxExtentsPerBlock", "most extents of a finalized block"), s.maxExtentsPerBlock())
          .addCounter(info("DepthRaises", "adaptive raises of depth and request size"), s.depthRaises())
          .addCounter(info("DepthLowers", "adaptive lowerings"), s.depthLowers())
          .addGauge(info("Depth", "requests allowed in flight now"), s.depth())
          .addGauge(info("RequestBytes", "request size for read-ahead now"), s.requestBytes())
          .addCounter(info("StarvationGuards", "requests served early for waiting too long"),
              s.starvationGuards())
          .addCounter(info("Fallbacks", "fallocate/FIEMAP/fadvise not supported, fell back"), s.fallbacks());
    }
  }
}
