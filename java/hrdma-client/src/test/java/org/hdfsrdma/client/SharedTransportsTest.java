package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.select.SharedTransports;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Three DataNodes in one JVM (a MiniDFSCluster) share the JVM's transports: one of each
 * (one UCX context per UCX transport, one tcp event-loop group), leased by every plugin's
 * server and by the connectors that forward writes, while each DataNode keeps its own
 * ports. Data written with replication 3 (forwarded DataNode to DataNode over the shared
 * transports) reads back identical, also after one DataNode stopped (its lease given back,
 * the others serving on); the last DataNode to stop closes them, nothing left.
 */
@Timeout(180)
class SharedTransportsTest {
  private MiniDFSCluster cluster;
  private FileSystem fs;

  @AfterEach
  void tearDown() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  private List<RdmaDataNodePlugin> plugins() {
    return cluster.getDataNodes().stream().map(dn -> RdmaDataNodePlugin.running().stream()
        .filter(p -> dn.getDatanodeUuid().equals(p.datanodeUuid())).findFirst().orElseThrow()).toList();
  }

  private static Map<String, Integer> leasesOf(Map<String, Transport> inUse) {
    Map<String, Integer> open = SharedTransports.open();
    return inUse.keySet().stream().collect(java.util.stream.Collectors.toMap(n -> n, n -> open.getOrDefault(n, 0)));
  }

  @Test
  void threeDataNodesShareOneOfEachTransportAndTheLastClosesThem() throws Exception {
    int openBefore = SharedTransports.openCount();
    long createdBefore = SharedTransports.createdCount();
    long contextsBefore = HrdmaNative.processStats().contexts();

    Configuration conf = PluginCluster.baseConf();
    conf.set("hrdma.datanode.share-transports", "true");
    cluster = PluginCluster.start(conf, getClass(), 3);
    List<RdmaDataNodePlugin> ps = plugins();
    Map<String, Transport> first = ps.get(0).transports();
    assertFalse(first.isEmpty());
    assertTrue(first.containsKey("tcp"), "transports " + first);
    Set<Object> ports = new HashSet<>();
    for (RdmaDataNodePlugin p : ps) {
      assertEquals(first.keySet(), p.transports().keySet());
      for (String name : first.keySet()) {
        assertSame(first.get(name), p.transports().get(name), name + " is one object in every plugin");
      }
      assertTrue(ports.add(p.serviceAddress()), "each DataNode its own service address: " + ports);
    }
    long ucx = first.keySet().stream().filter(n -> !n.equals("tcp")).count();
    assertEquals(first.size(), SharedTransports.createdCount() - createdBefore, "one of each transport, not three");
    assertEquals(openBefore + first.size(), SharedTransports.openCount());
    assertEquals(ucx, HrdmaNative.processStats().contexts() - contextsBefore,
        "one UCX context per UCX transport for the three DataNodes");
    leasesOf(first).forEach((n, leases) -> assertEquals(3, leases, n + ": one lease per DataNode"));

    Configuration cc = PluginCluster.rdmaClientConf(cluster);
    fs = FileSystem.get(cluster.getURI(), cc);
    byte[] data = PluginCluster.random(3 * PluginCluster.BLOCK + 12345, 7);
    Path file = new Path("/shared/f");
    try (FSDataOutputStream out = fs.create(file, (short) 3)) {
      out.write(data);
    }
    assertTrue(((RdmaDistributedFileSystem) fs).rdmaBytesWritten() >= data.length, "written over our transports");
    assertArrayEquals(data, readAll(file, data.length));
    assertTrue(((RdmaDistributedFileSystem) fs).rdmaBytesRead() >= data.length, "read over our transports");
    // the forwarding connectors leased the same transports: none created, a lease more each
    assertEquals(first.size(), SharedTransports.createdCount() - createdBefore);
    leasesOf(first).forEach((n, leases) -> assertTrue(leases >= 3, n + ": " + leases));

    DataNode stopped = cluster.getDataNodes().get(0);
    RdmaDataNodePlugin gone = ps.get(0);
    Map<String, Integer> before = leasesOf(first);
    cluster.stopDataNode(0);
    assertEquals(RdmaDataNodePlugin.State.STOPPED, gone.state(), stopped.toString());
    Map<String, Integer> after = leasesOf(first);
    for (String n : first.keySet()) {
      assertTrue(after.get(n) < before.get(n) && after.get(n) >= 2, n + ": " + before + " -> " + after);
    }
    assertEquals(openBefore + first.size(), SharedTransports.openCount(), "still open for the other two");
    fs.close();
    fs = FileSystem.get(cluster.getURI(), cc);
    assertArrayEquals(data, readAll(file, data.length), "the other DataNodes serve on");

    fs.close();
    fs = null;
    cluster.shutdown();
    cluster = null;
    assertEquals(openBefore, SharedTransports.openCount(), "the last DataNode closed them: " + SharedTransports.open());
    String left = org.hdfsrdma.transport.ProcessResources.awaitNothingLeft(20_000,
        () -> HrdmaNative.processStats().contexts() == contextsBefore, () -> "UCX contexts "
            + HrdmaNative.processStats().contexts() + " (before: " + contextsBefore + ")");
    if (contextsBefore == 0) {
      assertNull(left, "left: " + left);
    } else {
      assertEquals(contextsBefore, HrdmaNative.processStats().contexts());
    }
  }

  private byte[] readAll(Path file, int n) throws IOException {
    byte[] got = new byte[n];
    try (FSDataInputStream in = fs.open(file)) {
      in.readFully(0, got);
      assertEquals(-1, in.read(n, new byte[1], 0, 1), "nothing past the end");
    }
    return got;
  }
}
