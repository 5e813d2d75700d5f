package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * A mixed cluster: two DataNodes with the plugin and one without (as during a rolling install,
 * or a DataNode whose plugin failed to start). A write over hrdma whose pipeline has the
 * plugin-less DataNode second or last is forwarded to it over stock's DataTransferProtocol by
 * the DataNode before it: the client writes over hrdma, without falling back, and every block
 * gets all its replicas (before, that DataNode was named firstBadLink: the client wrote the file
 * through the stock path or left a healthy DataNode out). A file whose pipeline starts at the
 * plugin-less DataNode is the client's own fallback and not what is tested here: it is skipped,
 * and the test asserts that the case it is about was met.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(300)
class StockMirrorWriteTest {
  private static final int FILES = 8;
  // short, so that an idle write lives on heartbeats only (clients send them at half of it)
  private static final int SOCKET_TIMEOUT_MS = 6000;

  MiniDFSCluster cluster;
  private DataNode plain; // the DataNode without the plugin
  private MiniDFSCluster.DataNodeProperties stopped;
  private RdmaDistributedFileSystem fs;

  /** The cluster's settings (the encrypted variant adds to them). */
  Configuration conf() {
    return PluginCluster.baseConf();
  }

  @BeforeAll
  void start() throws Exception {
    Configuration conf = conf();
    conf.setInt(HdfsClientConfigKeys.DFS_CLIENT_SOCKET_TIMEOUT_KEY, SOCKET_TIMEOUT_MS);
    cluster = PluginCluster.start(conf, getClass(), 2);
    Configuration noPlugin = new Configuration(conf);
    noPlugin.unset(DFSConfigKeys.DFS_DATANODE_PLUGINS_KEY);
    cluster.startDataNodes(noPlugin, 1, true, null, null);
    cluster.waitActive();
    plain = cluster.getDataNodes().get(2);
    assertEquals(2, RdmaDataNodePlugin.running().size(), "plugins of the first two DataNodes only");
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    // the pipeline goes on without a DataNode that fails (three in all: no replacement)
    c.setBoolean(HdfsClientConfigKeys.BlockWrite.ReplaceDatanodeOnFailure.ENABLE_KEY, false);
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  private static long stockForwards() {
    long n = 0;
    for (RdmaDataNodePlugin p : RdmaDataNodePlugin.running()) {
      n += p.stockForwards();
    }
    return n;
  }

  /** The sender and ack reader of each write forwarded over stock's protocol end with it. */
  private static void awaitNoStockLinkThreads() throws InterruptedException {
    PluginCluster.awaitValue(() -> Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().startsWith("hrdma-stock-mirror-")).count(), 0, "stock link threads left");
  }

  private InetSocketAddress[] favored(int replication) {
    List<InetSocketAddress> a = new ArrayList<>();
    for (DataNode d : cluster.getDataNodes()) {
      if (d != plain && a.size() < replication - 1) {
        a.add(d.getXferAddress());
      }
    }
    a.add(plain.getXferAddress());
    return a.toArray(new InetSocketAddress[0]);
  }

  private boolean onPlain(LocatedBlock lb) {
    for (DatanodeInfo d : lb.getLocations()) {
      if (d.getDatanodeUuid().equals(plain.getDatanodeUuid())) {
        return true;
      }
    }
    return false;
  }

  @Test
  @Order(1)
  void writesReachTheDataNodeWithoutThePluginOverStocksProtocol() throws Exception {
    long forwardsBefore = stockForwards();
    long expectForwards = 0;
    for (short replication : new short[] {2, 3}) {
      int met = 0;
      for (int i = 0; i < FILES; i++) {
        Path p = new Path("/mixed/r" + replication + "-" + i);
        byte[] data = PluginCluster.random(300_000 + 7 * i, 70L * replication + i);
        long fallbacks = fs.stockWriteFallbacks();
        long written = fs.rdmaBytesWritten();
        try (FSDataOutputStream out = fs.create(p, FsPermission.getFileDefault(), true, 4096, replication,
            PluginCluster.BLOCK, null, favored(replication))) {
          out.write(data);
        }
        DFSTestUtil.waitReplication(fs, p, replication);
        assertArrayEquals(data, PluginCluster.readWhole(fs, p), p.toString());
        if (fs.stockWriteFallbacks() != fallbacks) {
          continue; // the pipeline started at the plugin-less DataNode: the client's fallback
        }
        assertEquals(data.length, fs.rdmaBytesWritten() - written, p + " written over hrdma");
        List<LocatedBlock> blocks = fs.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks();
        assertEquals(1, blocks.size());
        assertEquals(replication, blocks.get(0).getLocations().length, p + ": every replica");
        if (onPlain(blocks.get(0))) {
          met++;
          expectForwards++; // the DataNode before it forwarded once over stock's protocol
        }
      }
      assertTrue(met > 0, "no write at replication " + replication + " had the plugin-less DataNode after"
          + " another in its pipeline");
    }
    assertEquals(expectForwards, stockForwards() - forwardsBefore, "forwards over stock's protocol counted");
    awaitNoStockLinkThreads();
  }

  /**
   * A write to the plugin-less DataNode over stock's protocol, idle for well over the socket
   * timeout (so only relayed heartbeats keep it alive there) and hsynced, goes on without a
   * pipeline recovery (which would change the block's generation stamp) and keeps its replicas.
   */
  @Test
  @Order(2)
  void heartbeatsAndHsyncGoThroughToTheDataNodeWithoutThePlugin() throws Exception {
    for (int attempt = 0; attempt < 10; attempt++) {
      Path p = new Path("/mixed/idle-" + attempt);
      byte[] data = PluginCluster.random(700_000, 80 + attempt);
      long fallbacks = fs.stockWriteFallbacks();
      long forwards = stockForwards();
      long gs;
      try (FSDataOutputStream out = fs.create(p, FsPermission.getFileDefault(), true, 4096, (short) 3,
          PluginCluster.BLOCK, null, favored(3))) {
        out.write(data, 0, 200_000);
        out.hflush();
        if (fs.stockWriteFallbacks() != fallbacks) {
          continue; // the pipeline started at the plugin-less DataNode: try another file
        }
        assertEquals(forwards + 1, stockForwards(), "the plugin-less DataNode is downstream over stock's protocol");
        gs = lastBlock(p).getBlock().getGenerationStamp();
        Thread.sleep(2L * SOCKET_TIMEOUT_MS + 2000);
        out.write(data, 200_000, 300_000);
        out.hsync();
        Thread.sleep(SOCKET_TIMEOUT_MS + 2000);
        out.write(data, 500_000, data.length - 500_000);
      }
      assertEquals(fallbacks, fs.stockWriteFallbacks(), "no stock write fallback");
      LocatedBlock lb = lastBlock(p);
      assertEquals(gs, lb.getBlock().getGenerationStamp(), "no pipeline recovery");
      DFSTestUtil.waitReplication(fs, p, (short) 3);
      assertTrue(onPlain(lastBlock(p)));
      assertArrayEquals(data, PluginCluster.readWhole(fs, p));
      return;
    }
    throw new AssertionError("no write had the plugin-less DataNode after another in its pipeline");
  }

  private LocatedBlock lastBlock(Path p) throws IOException {
    List<LocatedBlock> blocks = fs.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks();
    assertEquals(1, blocks.size());
    return blocks.get(0);
  }

  @Test
  @Order(3)
  void theDataNodeWithoutThePluginStoppedMidBlockIsLeftOutByPipelineRecovery() throws Exception {
    for (int attempt = 0; attempt < 10; attempt++) {
      Path p = new Path("/mixed/stopped-" + attempt);
      byte[] data = PluginCluster.random(900_000, 90 + attempt);
      long fallbacks = fs.stockWriteFallbacks();
      long forwards = stockForwards();
      long written = fs.rdmaBytesWritten();
      FSDataOutputStream out = fs.create(p, FsPermission.getFileDefault(), true, 4096, (short) 3,
          PluginCluster.BLOCK, null, favored(3));
      try {
        out.write(data, 0, 300_000);
        out.hflush();
        if (fs.stockWriteFallbacks() != fallbacks) {
          continue; // the pipeline started at the plugin-less DataNode: try another file
        }
        assertEquals(forwards + 1, stockForwards(), "the plugin-less DataNode is downstream over stock's protocol");
        stopped = cluster.stopDataNode(plain.getDatanodeId().getXferAddr());
        out.write(data, 300_000, data.length - 300_000);
      } finally {
        out.close();
      }
      assertEquals(fallbacks, fs.stockWriteFallbacks(), "no stock write fallback");
      assertEquals(data.length, fs.rdmaBytesWritten() - written, "written over hrdma");
      assertArrayEquals(data, PluginCluster.readWhole(fs, p));
      List<LocatedBlock> blocks = fs.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks();
      assertEquals(1, blocks.size());
      assertTrue(!onPlain(blocks.get(0)), "the stopped DataNode left the pipeline");
      assertEquals(2, blocks.get(0).getLocations().length, "the DataNodes with the plugin kept theirs");
      awaitNoStockLinkThreads();
      // back for the next test, still without the plugin
      String uuid = plain.getDatanodeUuid();
      assertTrue(cluster.restartDataNode(stopped, true));
      cluster.waitActive();
      plain = cluster.getDataNodes().stream().filter(d -> d.getDatanodeUuid().equals(uuid)).findFirst().orElseThrow();
      return;
    }
    throw new AssertionError("no write had the plugin-less DataNode after another in its pipeline");
  }

  private static RdmaDataNodePlugin pluginOf(DataNode d) {
    return RdmaDataNodePlugin.running().stream().filter(p -> d.getDatanodeUuid().equals(p.datanodeUuid()))
        .findFirst().orElseThrow();
  }

  private static long hrdmaForwards(RdmaDataNodePlugin p) {
    RdmaDataNodePlugin.MirrorStats m = p.mirrors();
    return m.opened() + m.reused();
  }

  /**
   * A pipeline recovery (PIPELINE_SETUP_STREAMING_RECOVERY) whose new pipeline goes from a
   * DataNode with the plugin to the plugin-less one is forwarded there over stock's protocol
   * too: the DataNode with the plugin that is not first is stopped mid-block, the first one
   * forwards the recovery to the plugin-less one, and the write completes on both.
   */
  @Test
  @Order(4)
  void aPipelineRecoveryIsForwardedToTheDataNodeWithoutThePlugin() throws Exception {
    for (int attempt = 0; attempt < 10; attempt++) {
      Path p = new Path("/mixed/recovered-" + attempt);
      byte[] data = PluginCluster.random(900_000, 110 + attempt);
      long fallbacks = fs.stockWriteFallbacks();
      List<DataNode> withPlugin = new ArrayList<>();
      for (DataNode d : cluster.getDataNodes()) {
        if (d != plain) {
          withPlugin.add(d);
        }
      }
      long[] stockBefore = new long[2];
      long[] hrdmaBefore = new long[2];
      for (int i = 0; i < 2; i++) {
        stockBefore[i] = pluginOf(withPlugin.get(i)).stockForwards();
        hrdmaBefore[i] = hrdmaForwards(pluginOf(withPlugin.get(i)));
      }
      long written = fs.rdmaBytesWritten();
      FSDataOutputStream out = fs.create(p, FsPermission.getFileDefault(), true, 4096, (short) 3,
          PluginCluster.BLOCK, null, favored(3));
      DataNode first;
      try {
        out.write(data, 0, 300_000);
        out.hflush();
        if (fs.stockWriteFallbacks() != fallbacks) {
          continue; // the pipeline started at the plugin-less DataNode: try another file
        }
        // the DataNode before the plugin-less one forwarded over stock's protocol; if the other one
        // forwarded over ours, it is first ([other, that one, plugin-less]), else that one is
        // ([that one, plugin-less, other])
        int before = pluginOf(withPlugin.get(0)).stockForwards() > stockBefore[0] ? 0 : 1;
        assertEquals(stockBefore[before] + 1, pluginOf(withPlugin.get(before)).stockForwards());
        int other = 1 - before;
        boolean otherFirst = hrdmaForwards(pluginOf(withPlugin.get(other))) > hrdmaBefore[other];
        first = withPlugin.get(otherFirst ? other : before);
        DataNode second = withPlugin.get(otherFirst ? before : other);
        long firstStock = pluginOf(first).stockForwards();
        cluster.stopDataNode(second.getDatanodeId().getXferAddr());
        out.write(data, 300_000, data.length - 300_000);
        out.close();
        assertEquals(firstStock + 1, pluginOf(first).stockForwards(),
            "the recovery went from the first DataNode to the plugin-less one over stock's protocol");
      } finally {
        out.close();
      }
      assertEquals(fallbacks, fs.stockWriteFallbacks(), "no stock write fallback");
      assertEquals(data.length, fs.rdmaBytesWritten() - written, "written over hrdma");
      assertArrayEquals(data, PluginCluster.readWhole(fs, p));
      LocatedBlock lb = lastBlock(p);
      assertEquals(2, lb.getLocations().length, "the first DataNode and the plugin-less one");
      assertTrue(onPlain(lb), "the plugin-less DataNode kept its replica");
      awaitNoStockLinkThreads();
      return;
    }
    throw new AssertionError("no write had the plugin-less DataNode after another in its pipeline");
  }
}
