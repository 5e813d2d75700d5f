package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSClientFaultInjector;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.tools.DFSAdmin;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.test.GenericTestUtils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A rolling upgrade's {@code hdfs dfsadmin -shutdownDatanode <dn> upgrade} of a DataNode in the
 * pipeline of a write through our client, as stock's DataNode and DataStreamer handle it: the
 * DataNode sends an OOB_RESTART ack (relayed by the DataNodes before it) and leaves its replica
 * RBW with a restart marker; the client, the DataNode being on its host (every DataNode of a
 * MiniDFSCluster is) or the only one, waits for it up to {@code dfs.client.datanode-restart.timeout}
 * and keeps it in the pipeline, or goes on without it after that timeout.
 */
@Timeout(240)
class RollingUpgradeWriteTest {
  private static final int BLOCK = PluginCluster.BLOCK;

  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private RdmaDistributedFileSystem fs;

  private void start(int dataNodes, long restartTimeoutSeconds) throws Exception {
    Configuration conf = PluginCluster.baseConf();
    conf.setInt(DFSConfigKeys.DFS_HEARTBEAT_INTERVAL_KEY, 1);
    cluster = PluginCluster.start(conf, getClass(), dataNodes);
    stock = cluster.getFileSystem();
    Configuration client = PluginCluster.rdmaClientConf(cluster);
    client.setLong(HdfsClientConfigKeys.DFS_CLIENT_DATANODE_RESTART_TIMEOUT_KEY, restartTimeoutSeconds);
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), client);
  }

  @AfterEach
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  private static RdmaOutputStream ours(FSDataOutputStream out) {
    return (RdmaOutputStream) out.getWrappedStream();
  }

  private int indexOf(DatanodeInfo node) {
    for (int i = 0; i < cluster.getDataNodes().size(); i++) {
      if (cluster.getDataNodes().get(i).getXferPort() == node.getXferPort()) {
        return i;
      }
    }
    throw new AssertionError("no running DataNode " + node);
  }

  /** {@code dfsadmin -shutdownDatanode <node> upgrade}, and waits until that DataNode has stopped; its index. */
  private int shutdownForUpgrade(DatanodeInfo node) throws Exception {
    int index = indexOf(node);
    DFSAdmin admin = new DFSAdmin(cluster.getConfiguration(0));
    assertEquals(0, admin.run(new String[] {"-shutdownDatanode", node.getIpcAddr(false), "upgrade"}));
    GenericTestUtils.waitForThreadTermination("Async datanode shutdown thread", 100, 30_000);
    return index;
  }

  private void restart(int index) throws Exception {
    assertTrue(cluster.restartDataNode(index, true));
    cluster.waitActive();
    PluginCluster.awaitPluginsServing(cluster);
  }

  /**
   * Writes half a block, hflushes, shuts pipeline DataNode {@code which} down for an upgrade,
   * restarts it, writes the rest and closes; checks the file and that the pipeline kept every
   * DataNode, the restarted one included, and nothing fell back to the stock path.
   */
  private void restartKeepsTheDataNode(int dataNodes, short replication, int which) throws Exception {
    start(dataNodes, 30);
    Path p = new Path("/upgrade/kept-" + which + "-of-" + replication);
    byte[] data = PluginCluster.random(BLOCK / 2, 11 + which);
    int cut = 70_000;
    DatanodeInfo restarted;
    try (FSDataOutputStream out = fs.create(p, replication)) {
      out.write(data, 0, cut);
      out.hflush();
      DatanodeInfo[] before = ours(out).pipeline();
      assertEquals(replication, before.length, Arrays.toString(before));
      restarted = before[which];
      restart(shutdownForUpgrade(restarted));
      out.write(data, cut, data.length - cut);
      out.hflush();
      DatanodeInfo[] after = ours(out).pipeline();
      assertEquals(Arrays.asList(before), Arrays.asList(after), "the pipeline after the restart");
    }
    assertEquals(0, fs.stockWriteFallbacks());
    assertTrue(fs.pipelineRecoveries() >= 1, "recoveries " + fs.pipelineRecoveries());
    assertEquals(data.length, stock.getFileStatus(p).getLen());
    assertArrayEquals(data, PluginCluster.readWhole(stock, p));
    LocatedBlock only = stock.getClient().getLocatedBlocks(p.toString(), 0).get(0);
    assertEquals(replication, only.getLocations().length, Arrays.toString(only.getLocations()));
    assertTrue(Arrays.asList(only.getLocations()).contains(restarted), restarted + " not among "
        + Arrays.toString(only.getLocations()));
  }

  /**
   * Three DataNodes, replication 3, the default replace policy: no DataNode could replace the
   * restarting one (the earlier code failed here with "Failed to replace a bad datanode"); the
   * first DataNode, on this host, is waited for and kept.
   */
  @Test
  void theFirstDataNodeRestartedForAnUpgradeIsKeptWhereNoneCouldReplaceIt() throws Exception {
    restartKeepsTheDataNode(3, (short) 3, 0);
  }

  /**
   * The middle DataNode restarts: its OOB_RESTART ack reaches the client relayed by the first
   * one (its own SUCCESS before it), which names the right DataNode to wait for.
   */
  @Test
  void theMiddleDataNodesRestartIsRelayedAndItIsKept() throws Exception {
    restartKeepsTheDataNode(3, (short) 3, 1);
  }

  /** Replication 1: the only DataNode is waited for (the earlier code failed: "All datanodes ... are bad"). */
  @Test
  void theOnlyDataNodeRestartedForAnUpgradeIsWaitedFor() throws Exception {
    restartKeepsTheDataNode(1, (short) 1, 0);
  }

  /**
   * The DataNode does not come back: the client waits for it up to the restart timeout (5 s
   * here), then, as stock's, takes it as failed and goes on with a replacement (a fourth
   * DataNode). The earlier code went on at once.
   */
  @Test
  void aDataNodeThatDoesNotComeBackIsDroppedAfterTheRestartTimeout() throws Exception {
    start(4, 5);
    Path p = new Path("/upgrade/gone");
    byte[] data = PluginCluster.random(BLOCK / 2, 21);
    int cut = 70_000;
    DatanodeInfo gone;
    long waitedNs;
    try (FSDataOutputStream out = fs.create(p, (short) 3)) {
      out.write(data, 0, cut);
      out.hflush();
      DatanodeInfo[] before = ours(out).pipeline();
      gone = before[0];
      shutdownForUpgrade(gone);
      long begin = System.nanoTime();
      out.write(data, cut, data.length - cut);
      out.hflush();
      waitedNs = System.nanoTime() - begin;
      DatanodeInfo[] after = ours(out).pipeline();
      assertEquals(3, after.length, Arrays.toString(after));
      assertFalse(Arrays.asList(after).contains(gone), Arrays.toString(after));
    }
    assertTrue(waitedNs >= TimeUnit.SECONDS.toNanos(4), "waited only " + waitedNs / 1_000_000 + " ms");
    assertEquals(0, fs.stockWriteFallbacks());
    assertArrayEquals(data, PluginCluster.readWhole(stock, p));
    LocatedBlock only = stock.getClient().getLocatedBlocks(p.toString(), 0).get(0);
    assertEquals(3, only.getLocations().length, Arrays.toString(only.getLocations()));
    assertFalse(Arrays.asList(only.getLocations()).contains(gone), Arrays.toString(only.getLocations()));
  }

  /**
   * Writes half a block to a 3-replica file on four DataNodes, hflushes, lets {@code stopFirst}
   * stop the pipeline's first DataNode, writes the rest and closes; returns how long the
   * write after the stop took, having checked that the pipeline went on without that
   * DataNode, with a replacement, and the file.
   */
  private long writeOnWithoutTheFirst(String name, java.util.function.Consumer<DatanodeInfo> stopFirst)
      throws Exception {
    Path p = new Path("/upgrade/" + name);
    byte[] data = PluginCluster.random(BLOCK / 2, name.hashCode());
    int cut = 70_000;
    DatanodeInfo gone;
    long tookNs;
    try (FSDataOutputStream out = fs.create(p, (short) 3)) {
      out.write(data, 0, cut);
      out.hflush();
      gone = ours(out).pipeline()[0];
      stopFirst.accept(gone);
      long begin = System.nanoTime();
      out.write(data, cut, data.length - cut);
      out.hflush();
      tookNs = System.nanoTime() - begin;
      DatanodeInfo[] after = ours(out).pipeline();
      assertEquals(3, after.length, Arrays.toString(after));
      assertFalse(Arrays.asList(after).contains(gone), Arrays.toString(after));
    }
    assertEquals(0, fs.stockWriteFallbacks());
    assertArrayEquals(data, PluginCluster.readWhole(stock, p));
    return tookNs;
  }

  /**
   * A restarting DataNode the client does not wait for (stock's fault injector takes every
   * DataNode as remote, as Hadoop's testPipelineRecoveryOnRemoteDatanodeUpgrade does) is a
   * failed one at once: the pipeline goes on without it, with a replacement, and no 4 s
   * pause for it.
   */
  @Test
  void aRemoteRestartingDataNodeIsDroppedAtOnce() throws Exception {
    start(4, 30);
    DFSClientFaultInjector old = DFSClientFaultInjector.get();
    DFSClientFaultInjector.set(new DFSClientFaultInjector() {
      @Override
      public boolean skipRollingRestartWait() {
        return true;
      }
    });
    try {
      long tookNs = writeOnWithoutTheFirst("remote", dn -> {
        try {
          shutdownForUpgrade(dn);
        } catch (Exception e) {
          throw new AssertionError(e);
        }
      });
      assertTrue(tookNs < TimeUnit.SECONDS.toNanos(4), "took " + tookNs / 1_000_000 + " ms");
    } finally {
      DFSClientFaultInjector.set(old);
    }
  }

  /**
   * A {@code shutdownDatanode upgrade} the DataNode refuses (not a superuser) leaves nothing
   * behind: that DataNode stopped afterwards for good sends no OOB ack, and the client drops it
   * at once instead of waiting for a restart.
   */
  @Test
  void aRefusedUpgradeShutdownIsForgotten() throws Exception {
    start(4, 30);
    long tookNs = writeOnWithoutTheFirst("refused", dn -> {
      try {
        int rc = UserGroupInformation.createRemoteUser("not-the-superuser").doAs(
            (java.security.PrivilegedExceptionAction<Integer>) () -> new DFSAdmin(cluster.getConfiguration(0))
                .run(new String[] {"-shutdownDatanode", dn.getIpcAddr(false), "upgrade"}));
        assertTrue(rc != 0, "the shutdown was not refused");
        int index = indexOf(dn);
        assertTrue(cluster.getDataNodes().get(index).isDatanodeUp(), "the DataNode stopped");
        cluster.stopDataNode(index);
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
    assertTrue(tookNs < TimeUnit.SECONDS.toNanos(4), "took " + tookNs / 1_000_000 + " ms");
  }
}
