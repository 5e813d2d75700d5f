package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.transport.Transport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * A DataNode makes the transport it forwards writes on at its first write, whatever its place in
 * the pipeline, not at the first write it forwards: a DataNode that was only ever the last of a
 * pipeline (here the only one, replication 1) has it ready, the first of its order that runs here,
 * so its first forwarded write does not wait for a transport's start. Only that one: the bootstrap
 * hello needs no tcp transport, so none is made where another transport comes first.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class ConnectorPrepareTest {
  private MiniDFSCluster cluster;
  private FileSystem fs;

  @BeforeAll
  void start() throws Exception {
    cluster = PluginCluster.start(PluginCluster.baseConf(), getClass(), 1);
    fs = FileSystem.get(cluster.getURI(), PluginCluster.rdmaClientConf(cluster));
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  @Test
  void theFirstWriteMakesTheForwardingTransportsEvenWithNothingToForward() throws Exception {
    RdmaDataNodePlugin plugin = RdmaDataNodePlugin.running().stream()
        .filter(p -> cluster.getDataNodes().get(0).getDatanodeUuid().equals(p.datanodeUuid())).findFirst()
        .orElseThrow();
    assertEquals(Map.of(), plugin.connectorTransports(), "no connector before any write");
    byte[] data = PluginCluster.random(64 * 1024, 3);
    Path p = new Path("/prepare/one");
    try (FSDataOutputStream out = fs.create(p, (short) 1)) {
      out.write(data);
    }
    assertArrayEquals(data, PluginCluster.readWhole(fs, p));
    String want = HrdmaNative.isAvailable() ? "ucx" : "tcp"; // the order's first that runs here
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    Map<String, Transport> t = plugin.connectorTransports();
    while (!t.containsKey(want) && System.nanoTime() < until) {
      Thread.sleep(20);
      t = plugin.connectorTransports();
    }
    assertEquals(java.util.Set.of(want), t.keySet(), "forwarding transports made");
  }
}
