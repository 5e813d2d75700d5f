package org.hdfsrdma.datanode;

import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsInfo;
import org.apache.hadoop.metrics2.MetricsRecordBuilder;
import org.apache.hadoop.metrics2.lib.Interns;
import org.hdfsrdma.protocol.metrics.HrdmaMetricsSource;
import org.hdfsrdma.transport.select.HrdmaServer;
import org.hdfsrdma.transport.Transport;

/**
 * The plugin's counters as a Hadoop metrics2 source, and so as the JMX bean
 * {@code Hadoop:service=DataNode,name=HrdmaDataNode-<xfer port>}: one {@code HrdmaDataNode}
 * record (connections, open writes, shared memory, reads prepared ahead, buffers) and one
 * {@code HrdmaTransport} record per transport the plugin serves (tag {@code Transport}:
 * connections and registered buffers outstanding). The per-volume figures are
 * {@link org.hdfsrdma.datanode.disk.DiskMetrics}'. Values are read from the plugin when
 * metrics are collected; thread-safe.
 */
final class PluginMetrics extends HrdmaMetricsSource {
  static final String PREFIX = "HrdmaDataNode-";
  static final MetricsInfo TRANSPORT = Interns.info("Transport", "the transport's name");

  private final RdmaDataNodePlugin plugin;

  private PluginMetrics(String name, RdmaDataNodePlugin plugin) {
    super(name);
    this.plugin = plugin;
  }

  /** Registers the source of the plugin of the DataNode with this xfer port (a failure is logged, never thrown). */
  static PluginMetrics register(int xferPort, RdmaDataNodePlugin plugin) {
    PluginMetrics m = new PluginMetrics(PREFIX + xferPort, plugin);
    m.register("hrdma DataNode plugin");
    return m;
  }

  @Override
  public void getMetrics(MetricsCollector collector, boolean all) {
    RdmaDataNodePlugin.WriteShmStats w = plugin.writeShm();
    collector.addRecord("HrdmaDataNode").setContext("dfs")
        .addGauge(info("OpenConnections", "client and upstream DataNode connections open"), plugin.openConnections())
        .addGauge(info("OpenWrites", "block writes open"), plugin.openWrites())
        .addGauge(info("BuffersOutstanding", "registered buffers handed out and not returned"),
            plugin.buffersOutstanding())
        .addGauge(info("QueuedAnswers", "answers waiting for their peers' credits"), plugin.queuedAnswers())
        .addCounter(info("StalledConnectionsClosed", "connections closed that took none of what they were sent"
            + " for dfs.datanode.socket.write.timeout"), plugin.stalledConnectionsClosed())
        .addCounter(info("AnswerBacklogStalls", "times a peer owed a window of answers was granted no more credits"
            + " (all endpoints of the process)"), plugin.answerBacklogStalls())
        .addCounter(info("WritesForwardedOverStock", "writes forwarded to a next DataNode over stock's data transfer"
            + " protocol, that DataNode not being reachable over hrdma's transports"), plugin.stockForwards())
        .addCounter(info("ReadsPreparedAhead", "reads whose disk reads started before their turn"),
            plugin.readsPreparedAhead())
        .addCounter(info("ReadPacketsByReference", "read packets sent in shared memory to same-host clients"),
            plugin.readPacketsByReference())
        .addCounter(info("SharedSegmentsGranted", "shared-memory segments granted"), plugin.sharedSegmentsGranted())
        .addCounter(info("SharedSegmentsRefused", "shared-memory segment requests refused"),
            plugin.sharedSegmentsRefused())
        .addGauge(info("SharedSegmentBytes", "bytes of shared-memory segments mapped"), plugin.sharedSegmentBytes())
        .addCounter(info("WritePacketsByReference", "write packets received in shared memory from same-host senders"),
            w == null ? 0 : w.byReference())
        .addCounter(info("WritePacketsForwardedByReference", "write packets forwarded in shared memory downstream"),
            w == null ? 0 : w.forwardedByReference())
        .addCounter(info("WriteSegmentsGranted", "write segments granted"), w == null ? 0 : w.granted())
        .addCounter(info("WriteSegmentsRefused", "write segment requests refused"), w == null ? 0 : w.refused())
        .addCounter(info("WriteReferencesRefused", "malformed write references (each closed its connection)"),
            w == null ? 0 : w.badReferences())
        .addGauge(info("WriteSegmentBytes", "bytes of write segments mapped"), w == null ? 0 : w.bytes())
        .addCounter(info("ShortCircuitGranted", "short-circuit requests answered with the replica's descriptors"),
            plugin.shortCircuitGranted())
        .addCounter(info("ShortCircuitRefused", "short-circuit requests refused"), plugin.shortCircuitRefused())
        .addCounter(info("ShortCircuitVolumeTimeouts",
            "short-circuit requests refused because their volume did not open the replica in time"),
            plugin.shortCircuitVolumeTimeouts());
    Map<String, Integer> conns = plugin.connectionsByTransport();
    Map<String, Long> buffers = new TreeMap<>();
    HrdmaServer s = plugin.server();
    if (s != null) {
      for (Map.Entry<String, Transport> e : s.transports().entrySet()) {
        buffers.put(e.getKey(), e.getValue().allocator().buffersOutstanding());
      }
    }
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
