package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.DataNodeFaultInjector;
import org.apache.hadoop.hdfs.tools.DFSAdmin;
import org.apache.hadoop.test.GenericTestUtils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * DataNodes that stop in the middle of a write or a read through our client,
 * on a MiniDFSCluster of five DataNodes with the plugin (a fresh one per
 * test): the user-visible outcome is a complete, byte-identical file, fully
 * replicated in the end, and a read that finishes from other replicas.
 *
 * <p>A DataNode is stopped with {@code MiniDFSCluster#stopDataNode}: its
 * plugin's listener and every connection close, as when the process dies
 * (a killed process is covered by the transport's peer-kill tests). It is
 * then marked dead at the NameNode so that re-replication need not wait for
 * the heartbeat expiry.
 */
@Timeout(240)
class DataNodeFailureTest {
  private static final int BLOCK = PluginCluster.BLOCK;

  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private RdmaDistributedFileSystem fs;

  private void start(Configuration extra) throws Exception {
    Configuration conf = PluginCluster.baseConf();
    conf.setInt(DFSConfigKeys.DFS_HEARTBEAT_INTERVAL_KEY, 1);
    conf.setInt(DFSConfigKeys.DFS_NAMENODE_REDUNDANCY_INTERVAL_SECONDS_KEY, 1);
    // a re-replication aimed at a node that still holds a stale replica fails; retry soon
    conf.setInt(DFSConfigKeys.DFS_NAMENODE_RECONSTRUCTION_PENDING_TIMEOUT_SEC_KEY, 3);
    for (var e : extra) {
      conf.set(e.getKey(), e.getValue());
    }
    cluster = PluginCluster.start(conf, getClass(), 5);
    stock = cluster.getFileSystem();
    Configuration client = PluginCluster.rdmaClientConf(cluster);
    for (var e : extra) {
      client.set(e.getKey(), e.getValue());
    }
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), client);
  }

  @AfterEach
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  /** Stops the DataNode {@code node} names and marks it dead at the NameNode; returns its xfer address. */
  private String kill(DatanodeInfo node) throws IOException {
    List<DataNode> dns = cluster.getDataNodes();
    for (int i = 0; i < dns.size(); i++) {
      DataNode dn = dns.get(i);
      if (dn.getXferPort() == node.getXferPort()) {
        var id = dn.getDatanodeId();
        assertNotNull(cluster.stopDataNode(i));
        cluster.setDataNodeDead(id);
        return node.getXferAddr();
      }
    }
    throw new AssertionError("no running DataNode " + node);
  }

  private static RdmaOutputStream ours(FSDataOutputStream out) {
    return (RdmaOutputStream) out.getWrappedStream();
  }

  /** Waits until every block of {@code p} has {@code n} replicas, none of them on {@code dead}. */
  private void awaitReplicated(Path p, int n, String dead) throws Exception {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    Supplier<String> state = () -> {
      try {
        StringBuilder sb = new StringBuilder();
        for (LocatedBlock lb : stock.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks()) {
          sb.append(lb.getBlock()).append(Arrays.toString(lb.getLocations())).append(' ');
        }
        return sb.toString();
      } catch (IOException e) {
        return e.toString();
      }
    };
    while (true) {
      boolean ok = true;
      for (LocatedBlock lb : stock.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks()) {
        ok &= lb.getLocations().length == n
            && Arrays.stream(lb.getLocations()).noneMatch(d -> d.getXferAddr().equals(dead));
      }
      if (ok) {
        return;
      }
      assertTrue(System.nanoTime() < end, "not replicated " + n + "x without " + dead + ": " + state.get());
      Thread.sleep(200);
    }
  }

  /**
   * The middle DataNode of the pipeline stops after an hflush: the writer
   * recovers with the two others plus a replacement (the default policy
   * replaces a node of a 3-replica pipeline once the file was hflushed), so
   * the file is complete, identical and on three live DataNodes at close.
   */
  @Test
  void aMiddleDataNodeStoppedMidWriteIsReplacedAndNothingIsLost() throws Exception {
    start(new Configuration(false));
    Path p = new Path("/fail/middle");
    byte[] data = PluginCluster.random(3 * BLOCK + 12345, 1);
    int cut = BLOCK + BLOCK / 2 + 100;
    String dead;
    try (FSDataOutputStream out = fs.create(p, (short) 3)) {
      out.write(data, 0, cut);
      out.hflush();
      DatanodeInfo[] pipeline = ours(out).pipeline();
      assertEquals(3, pipeline.length, Arrays.toString(pipeline));
      dead = kill(pipeline[1]);
      out.write(data, cut, data.length - cut);
      DatanodeInfo[] after = ours(out).pipeline(); // a later block's pipeline (allocated without the dead node)
      assertTrue(Arrays.stream(after).noneMatch(d -> d.getXferAddr().equals(dead)), Arrays.toString(after));
    }
    assertTrue(fs.pipelineRecoveries() >= 1, "recoveries " + fs.pipelineRecoveries());
    assertEquals(0, fs.stockWriteFallbacks());
    assertArrayEquals(data, PluginCluster.readWhole(stock, p));
    // the recovered block: three live replicas straight after close (the replacement got a copy)
    LocatedBlock second = stock.getClient().getLocatedBlocks(p.toString(), 0).get(1);
    assertEquals(3, second.getLocations().length, Arrays.toString(second.getLocations()));
    assertFalse(Arrays.stream(second.getLocations()).anyMatch(d -> d.getXferAddr().equals(dead)));
    awaitReplicated(p, 3, dead);
    assertEquals(stock.getFileChecksum(p), fs.getFileChecksum(p));
  }

  /**
   * {@code hdfs dfsadmin -evictWriters} on a DataNode of the pipeline (the first, then the
   * middle one of the new pipeline), as Hadoop's TestClientProtocolForPipelineRecovery
   * #testEvictWriter: as stock's xceivers, our writes there are stopped, and the writer
   * recovers without that DataNode (the DataNode itself keeps running); nothing is lost.
   */
  @Test
  void evictWritersDropsThatDataNodeFromThePipeline() throws Exception {
    start(new Configuration(false));
    Path p = new Path("/fail/evicted");
    byte[] data = PluginCluster.random(BLOCK / 2, 7);
    int[] cuts = {1000, 100_000, 300_000};
    try (FSDataOutputStream out = fs.create(p, (short) 3)) {
      out.write(data, 0, cuts[0]);
      out.hflush();
      for (int k = 0; k < 2; k++) {
        DatanodeInfo[] before = ours(out).pipeline();
        assertEquals(3, before.length, Arrays.toString(before));
        String evicted = before[k].getIpcAddr(false);
        DFSAdmin admin = new DFSAdmin(cluster.getConfiguration(0));
        assertEquals(0, admin.run(new String[] {"-evictWriters", evicted}));
        out.write(data, cuts[k], cuts[k + 1] - cuts[k]);
        out.hflush();
        DatanodeInfo[] after = ours(out).pipeline();
        assertTrue(after.length > 0);
        assertTrue(Arrays.stream(after).noneMatch(d -> d.getIpcAddr(false).equals(evicted)),
            "evicted " + evicted + ", pipeline " + Arrays.toString(after));
      }
      out.write(data, cuts[2], data.length - cuts[2]);
    }
    assertTrue(fs.pipelineRecoveries() >= 2, "recoveries " + fs.pipelineRecoveries());
    assertEquals(0, fs.stockWriteFallbacks());
    assertEquals(data.length, fs.rdmaBytesWritten(), "every byte went over hrdma");
    assertArrayEquals(data, PluginCluster.readWhole(stock, p));
  }

  /**
   * A rolling upgrade's {@code hdfs dfsadmin -shutdownDatanode <dn> upgrade} of the pipeline's
   * first DataNode, the DataNode started again, the write goes on (as Hadoop's
   * TestClientProtocolForPipelineRecovery#testPipelineRecoveryOnOOB, on a file our stream
   * creates). As stock's, the plugin sends its writer an OOB restart ack and leaves the replica
   * RBW with a restart marker, and the client, the DataNode being on its host, waits for it to
   * come back and keeps it in the pipeline: nothing is lost, the whole file is on three
   * DataNodes at close, the restarted one among them ({@link RollingUpgradeWriteTest} has the
   * other cases).
   */
  @Test
  void aDataNodeShutDownForUpgradeAndRestartedLosesNothing() throws Exception {
    start(new Configuration(false));
    Path p = new Path("/fail/upgrade");
    byte[] data = PluginCluster.random(BLOCK / 2, 9);
    int cut = 70_000;
    String down;
    try (FSDataOutputStream out = fs.create(p, (short) 3)) {
      out.write(data, 0, cut);
      out.hflush();
      DatanodeInfo[] before = ours(out).pipeline();
      assertEquals(3, before.length, Arrays.toString(before));
      down = before[0].getXferAddr();
      int index = -1;
      for (int i = 0; i < cluster.getDataNodes().size(); i++) {
        if (cluster.getDataNodes().get(i).getXferPort() == before[0].getXferPort()) {
          index = i;
        }
      }
      assertTrue(index >= 0);
      DFSAdmin admin = new DFSAdmin(cluster.getConfiguration(0));
      assertEquals(0, admin.run(new String[] {"-shutdownDatanode", before[0].getIpcAddr(false), "upgrade"}));
      GenericTestUtils.waitForThreadTermination("Async datanode shutdown thread", 100, 30_000);
      assertTrue(cluster.restartDataNode(index, true));
      cluster.waitActive();
      PluginCluster.awaitPluginsServing(cluster);
      out.write(data, cut, data.length - cut);
      out.hflush();
      DatanodeInfo[] after = ours(out).pipeline();
      assertEquals(Arrays.asList(before), Arrays.asList(after), "the pipeline after the restart");
    }
    assertEquals(0, fs.stockWriteFallbacks());
    assertEquals(data.length, stock.getFileStatus(p).getLen());
    assertArrayEquals(data, PluginCluster.readWhole(stock, p));
    LocatedBlock only = stock.getClient().getLocatedBlocks(p.toString(), 0).get(0);
    assertEquals(3, only.getLocations().length, Arrays.toString(only.getLocations()));
    assertTrue(fs.pipelineRecoveries() >= 1, "recoveries " + fs.pipelineRecoveries());
    org.slf4j.LoggerFactory.getLogger(DataNodeFailureTest.class).info("upgraded {}; replicas at close {}", down,
        Arrays.toString(only.getLocations()));
  }

  /**
   * The first DataNode of the pipeline stops mid-block, without an hflush:
   * the writer loses its connection, takes the first node as the bad one (as
   * stock does) and goes on with the other two (the default policy does not
   * replace one of three before an hflush); the NameNode re-replicates later.
   */
  @Test
  void theFirstDataNodeStoppedMidWriteLeavesTheOthersToFinish() throws Exception {
    start(new Configuration(false));
    Path p = new Path("/fail/first");
    byte[] data = PluginCluster.random(2 * BLOCK + 777, 2);
    int cut = BLOCK / 2;
    String dead;
    try (FSDataOutputStream out = fs.create(p, (short) 3)) {
      out.write(data, 0, cut);
      DatanodeInfo[] pipeline = ours(out).pipeline();
      dead = kill(pipeline[0]);
      out.write(data, cut, data.length - cut);
    }
    assertTrue(fs.pipelineRecoveries() >= 1, "recoveries " + fs.pipelineRecoveries());
    assertArrayEquals(data, PluginCluster.readWhole(stock, p));
    awaitReplicated(p, 3, dead);
    assertEquals(stock.getFileChecksum(p), fs.getFileChecksum(p));
  }

  /**
   * Replication 1: the only DataNode stops mid-block; no DataNode is left to
   * recover with, so the write fails with the stock client's words ("All
   * datanodes ... are bad").
   */
  @Test
  void theOnlyDataNodeStoppedMidWriteFailsTheWriteClearly() throws Exception {
    start(new Configuration(false));
    Path p = new Path("/fail/only");
    byte[] data = PluginCluster.random(BLOCK / 2, 3);
    FSDataOutputStream out = fs.create(p, (short) 1);
    out.write(data, 0, 1000);
    out.hflush();
    kill(ours(out).pipeline()[0]);
    IOException e = org.junit.jupiter.api.Assertions.assertThrows(IOException.class, () -> {
      out.write(data, 1000, data.length - 1000);
      out.close();
    });
    String all = e.toString() + (e.getCause() == null ? "" : e.getCause().toString());
    assertTrue(all.contains("All datanodes") && all.contains("are bad"), all);
    // as stock's (TestDFSOutputStream#testCloseTwice): a close throws the failure once at most
    // (the first close, when the write met the failure), every later one returns
    try {
      ours(out).close();
    } catch (IOException once) {
      assertTrue(String.valueOf(once.getMessage()).contains("are bad"), once.toString());
    }
    ours(out).close();
    ours(out).close();
  }

  /**
   * A DataNode in a 5-replica pipeline stops between blocks while the
   * NameNode still counts it live: the next block's pipeline cannot be set
   * up, so the block is abandoned and allocated again without that DataNode
   * (as stock), and the file completes.
   */
  @Test
  void aLaterBlockWhosePipelineCannotBeSetUpIsAllocatedAgainWithoutTheBadNode() throws Exception {
    Configuration extra = new Configuration(false);
    // replication 5 on 4 live DataNodes: the policy must not ask for a fifth
    extra.set(HdfsClientConfigKeys.BlockWrite.ReplaceDatanodeOnFailure.POLICY_KEY, "NEVER");
    start(extra);
    Path p = new Path("/fail/between");
    byte[] data = PluginCluster.random(2 * BLOCK + 99, 4);
    try (FSDataOutputStream out = fs.create(p, (short) 5)) {
      out.write(data, 0, BLOCK); // the first block ends; its pipeline is closed
      DatanodeInfo victim = stock.getClient().getLocatedBlocks(p.toString(), 0).get(0).getLocations()[2];
      List<DataNode> dns = cluster.getDataNodes();
      for (int i = 0; i < dns.size(); i++) {
        if (dns.get(i).getXferPort() == victim.getXferPort()) {
          cluster.stopDataNode(i); // not marked dead: the NameNode may still choose it
          break;
        }
      }
      out.write(data, BLOCK, data.length - BLOCK);
    }
    assertEquals(0, fs.stockWriteFallbacks());
    assertArrayEquals(data, PluginCluster.readWhole(stock, p));
    for (LocatedBlock lb : stock.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks().subList(1, 3)) {
      assertTrue(lb.getLocations().length >= 4, lb.toString());
    }
  }

  /**
   * The ack of the last packet fails at one DataNode after it finalized its
   * replica (the stock fault-injection point there throws once): every data
   * byte was acknowledged, so the writer recovers with
   * PIPELINE_CLOSE_RECOVERY (the others finalize with a new generation
   * stamp) and the file completes, identical, and ends up on three nodes.
   */
  @Test
  void aFailureAckingTheLastPacketIsACloseRecovery() throws Exception {
    start(new Configuration(false));
    Path p = new Path("/fail/close");
    byte[] data = PluginCluster.random(BLOCK / 2 + 3, 6);
    java.util.concurrent.atomic.AtomicInteger thrown = new java.util.concurrent.atomic.AtomicInteger();
    DataNodeFaultInjector old = DataNodeFaultInjector.get();
    DataNodeFaultInjector.set(new DataNodeFaultInjector() {
      @Override
      public void delayAckLastPacket() throws IOException {
        if (thrown.getAndIncrement() == 0) {
          throw new IOException("injected: the ack of the last packet fails");
        }
      }
    });
    try (FSDataOutputStream out = fs.create(p, (short) 3)) {
      out.write(data);
    } finally {
      DataNodeFaultInjector.set(old);
    }
    assertTrue(thrown.get() >= 1, "the injector never ran: our DataNodes did not call it");
    assertEquals(1, fs.pipelineRecoveries());
    assertArrayEquals(data, PluginCluster.readWhole(stock, p));
    LocatedBlock lb = stock.getClient().getLocatedBlocks(p.toString(), 0).get(0);
    assertTrue(lb.getBlock().getGenerationStamp() > 1001, lb.toString());
    awaitReplicated(p, 3, "none");
    assertEquals(stock.getFileChecksum(p), fs.getFileChecksum(p));
  }

  /**
   * The DataNode a read is served from stops in the middle: the stream goes
   * on from another replica over hrdma and the bytes are identical.
   */
  @Test
  void aDataNodeStoppedMidReadIsReplacedByAnotherReplica() throws Exception {
    start(new Configuration(false));
    Path p = new Path("/fail/read");
    byte[] data = PluginCluster.random(3 * BLOCK + 4321, 5);
    try (FSDataOutputStream out = stock.create(p, (short) 3)) {
      out.write(data);
    }
    byte[] got = new byte[data.length];
    long before = fs.rdmaBytesRead();
    try (FSDataInputStream in = fs.open(p)) {
      int first = BLOCK + 5000;
      in.readFully(got, 0, first);
      DatanodeInfo serving = ((RdmaInputStream) in.getWrappedStream()).currentDataNode();
      assertNotNull(serving, "the read is not served over hrdma");
      kill(serving);
      in.readFully(got, first, data.length - first);
      assertEquals(-1, in.read());
    }
    assertArrayEquals(data, got);
    assertEquals(data.length, fs.rdmaBytesRead() - before, () -> "every byte over hrdma (other replicas); stock "
        + fs.stockBytesRead() + " bytes, local " + fs.localBytesRead() + ", DataNodes fallen back "
        + fs.stockFallbacks());
    assertEquals(0, fs.stockBytesRead());
  }
}
