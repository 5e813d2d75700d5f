package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.select.SharedTransports;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The default ({@code hrdma.datanode.share-transports=auto}) in a MiniDFSCluster: the three
 * DataNodes' servers run on the same transports, and a DataNode forwards writes on them too
 * (its connector leases the transports its server runs, so packets go downstream from the
 * buffer they arrived in). Restarting one DataNode, as Hadoop's tests do, while a stream keeps
 * writing through the other two: the stream never notices (no pipeline recovery, every byte over
 * our transports), the restarted DataNode leases the same transports again and takes part in
 * writes, and the last DataNode to stop closes them. Also: our client in that JVM
 * ({@code hrdma.client.share-transports=auto}) connects on the DataNodes' transports.
 */
@Timeout(240)
class SharedTransportsRestartTest {
  private MiniDFSCluster cluster;
  private RdmaDistributedFileSystem fs;

  @AfterEach
  void tearDown() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  private static RdmaDataNodePlugin pluginOf(DataNode dn) {
    return RdmaDataNodePlugin.running().stream().filter(p -> dn.getDatanodeUuid().equals(p.datanodeUuid()))
        .findFirst().orElseThrow(() -> new AssertionError("no plugin for " + dn));
  }

  private static void assertSameTransports(Map<String, Transport> expected, Map<String, Transport> actual,
      String what) {
    assertEquals(expected.keySet(), actual.keySet(), what);
    expected.forEach((n, t) -> assertSame(t, actual.get(n), what + ": " + n + " is one object"));
  }

  @Test
  void oneDataNodeRestartsWhileWritesGoOnThroughTheOthers() throws Exception {
    int openBefore = SharedTransports.openCount();
    Configuration conf = PluginCluster.baseConf(); // hrdma.datanode.share-transports left at its default
    cluster = PluginCluster.start(conf, getClass(), 3);
    List<DataNode> dns = cluster.getDataNodes();
    RdmaDataNodePlugin p0 = pluginOf(dns.get(0));
    Map<String, Transport> shared = pluginOf(dns.get(1)).transports();
    assertFalse(shared.isEmpty());
    for (DataNode dn : dns) {
      assertSameTransports(shared, pluginOf(dn).transports(), "the servers of " + dn);
    }

    fs = (RdmaDistributedFileSystem) org.apache.hadoop.fs.FileSystem.get(cluster.getURI(),
        PluginCluster.rdmaClientConf(cluster));
    byte[] first = PluginCluster.random(PluginCluster.BLOCK + 4321, 11);
    Path f1 = new Path("/restart/first");
    try (FSDataOutputStream out = fs.create(f1, (short) 3)) {
      out.write(first);
    }
    int forwarding = 0;
    for (DataNode dn : dns) {
      Map<String, Transport> conn = pluginOf(dn).connectorTransports();
      if (!conn.isEmpty()) {
        forwarding++;
        conn.forEach((n, t) -> assertSame(shared.get(n), t, dn + " forwards on the transports its server runs: " + n));
      }
    }
    assertTrue(forwarding >= 2, "a pipeline of three has two forwarding DataNodes: " + forwarding);

    // a stream on DataNodes 1 and 2 only, writing while DataNode 0 restarts
    InetSocketAddress[] favored = {dns.get(1).getXferAddress(), dns.get(2).getXferAddress()};
    Path f2 = new Path("/restart/during");
    byte[] during = PluginCluster.random(6 * PluginCluster.BLOCK + 999, 12);
    long writtenBefore = fs.rdmaBytesWritten();
    long recoveriesBefore = fs.pipelineRecoveries();
    FSDataOutputStream out = fs.create(f2, FsPermission.getFileDefault(), true, 4096, (short) 2,
        PluginCluster.BLOCK, null, favored);
    int half = during.length / 2;
    out.write(during, 0, half);
    out.hflush();
    String dn0 = dns.get(0).getDatanodeUuid();
    CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
      try {
        for (int off = half; off < during.length; off += 64 * 1024) {
          out.write(during, off, Math.min(64 * 1024, during.length - off));
          out.hflush();
          Thread.sleep(5); // spread over the restart
        }
        out.close();
      } catch (IOException | InterruptedException e) {
        throw new RuntimeException(e);
      }
    });
    assertTrue(cluster.restartDataNode(0, false));
    cluster.waitActive();
    PluginCluster.awaitPluginsServing(cluster);
    writer.get(120, TimeUnit.SECONDS);
    assertEquals(RdmaDataNodePlugin.State.STOPPED, p0.state());
    for (LocatedBlock b : fs.getClient().getLocatedBlocks(f2.toString(), 0).getLocatedBlocks()) {
      for (DatanodeInfo d : b.getLocations()) {
        assertFalse(d.getDatanodeUuid().equals(dn0), "favored nodes ignored: " + b);
      }
    }
    assertEquals(recoveriesBefore, fs.pipelineRecoveries(), "the stream through the other two never recovered");
    assertTrue(fs.rdmaBytesWritten() - writtenBefore >= during.length, "written over our transports");
    assertArrayEquals(during, readAll(f2, during.length));

    // the restarted DataNode (last in the list now) serves on the same transports and takes part in writes
    DataNode again = cluster.getDataNodes().get(2);
    assertEquals(dn0, again.getDatanodeUuid());
    RdmaDataNodePlugin p0again = pluginOf(again);
    assertNotSame(p0, p0again);
    assertEquals(RdmaDataNodePlugin.State.SERVING, p0again.state());
    assertSameTransports(shared, p0again.transports(), "the restarted DataNode's server");
    byte[] last = PluginCluster.random(2 * PluginCluster.BLOCK + 77, 13);
    Path f3 = new Path("/restart/after");
    writtenBefore = fs.rdmaBytesWritten();
    try (FSDataOutputStream o = fs.create(f3, (short) 3)) {
      o.write(last);
    }
    assertEquals(recoveriesBefore, fs.pipelineRecoveries());
    assertTrue(fs.rdmaBytesWritten() - writtenBefore >= last.length, "written over our transports");
    assertArrayEquals(last, readAll(f3, last.length));
    assertArrayEquals(first, readAll(f1, first.length));

    fs.close();
    fs = null;
    cluster.shutdown();
    cluster = null;
    assertEquals(openBefore, SharedTransports.openCount(), "the last DataNode closed them: " + SharedTransports.open());
  }

  /**
   * hrdma.client.share-transports=auto: our client in the DataNodes' JVM connects on the
   * transports they serve on (none of its own), writes and reads over them, and its close leaves them
   * open for the DataNodes; with false (the default) it makes its own.
   */
  @Test
  void aClientInTheDataNodesJvmConnectsOnTheirTransports() throws Exception {
    cluster = PluginCluster.start(PluginCluster.baseConf(), getClass(), 3);
    Map<String, Transport> shared = pluginOf(cluster.getDataNodes().get(0)).transports();
    int open = SharedTransports.openCount();
    Configuration auto = PluginCluster.rdmaClientConf(cluster);
    auto.set(HrdmaClientKeys.SHARE_TRANSPORTS_KEY, "auto");
    fs = (RdmaDistributedFileSystem) org.apache.hadoop.fs.FileSystem.get(cluster.getURI(), auto);
    byte[] data = PluginCluster.random(2 * PluginCluster.BLOCK + 5, 21);
    Path f = new Path("/client-shares/f");
    try (FSDataOutputStream out = fs.create(f, (short) 3)) {
      out.write(data);
    }
    assertTrue(fs.rdmaBytesWritten() >= data.length, "written over our transports");
    assertArrayEquals(data, readAll(f, data.length));
    assertTrue(fs.rdmaBytesRead() >= data.length, "read over our transports");
    Map<String, Transport> mine = fs.blockClientIfStarted().transports();
    assertFalse(mine.isEmpty());
    mine.forEach((n, t) -> assertSame(shared.get(n), t, "the client's " + n + " is the DataNodes'"));
    assertEquals(open, SharedTransports.openCount(), "no transport made for the client");
    fs.close();
    fs = null;
    assertEquals(open, SharedTransports.openCount(), "still open for the DataNodes");

    Configuration own = PluginCluster.rdmaClientConf(cluster); // the default: false
    fs = (RdmaDistributedFileSystem) org.apache.hadoop.fs.FileSystem.get(cluster.getURI(), own);
    assertArrayEquals(data, readAll(f, data.length), "the DataNodes serve on");
    Map<String, Transport> its = fs.blockClientIfStarted().transports();
    assertFalse(its.isEmpty());
    its.forEach((n, t) -> assertNotSame(shared.get(n), t, "false: the client's own " + n));
  }

  private byte[] readAll(Path file, int n) throws IOException {
    byte[] got = new byte[n];
    try (var in = fs.open(file)) {
      in.readFully(0, got);
    }
    return got;
  }
}
