package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.StreamerProbe;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.HdfsConstants;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.BlockConstructionStage;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.server.blockmanagement.BlockManager;
import org.apache.hadoop.hdfs.server.blockmanagement.DatanodeDescriptor;
import org.apache.hadoop.hdfs.server.blockmanagement.DatanodeManager;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.DataNodeFaultInjector;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.test.Whitebox;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.mockito.Mockito;

/**
 * What a caller sees through {@code DFSOutputStream#getStreamer()} of our stream (Hadoop's
 * tests and tools ask it for the pipeline, the block, its token, the stage and the recovery
 * count): the answers of our writer, compared with what the NameNode and the DataNodes hold;
 * what it cannot answer throws. Also stock's AddBlockFlags from the create flags (Hadoop's
 * TestDFSOutputStream#testNoLocalWriteFlag), which our stream did not pass to addBlock.
 * A fresh MiniDFSCluster with the plugin per test.
 */
@Timeout(240)
class StreamerViewTest {
  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private RdmaDistributedFileSystem fs;

  private void start(int dataNodes, Configuration extra) throws Exception {
    Configuration conf = PluginCluster.baseConf();
    for (var e : extra) {
      conf.set(e.getKey(), e.getValue());
    }
    cluster = PluginCluster.start(conf, getClass(), dataNodes);
    stock = cluster.getFileSystem();
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), PluginCluster.rdmaClientConf(cluster));
  }

  @AfterEach
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  /** The NameNode's view of the file's last block (its expected locations while it is written). */
  private LocatedBlock lastBlockAtNameNode(Path p) throws IOException {
    return stock.getClient().getLocatedBlocks(p.toString(), 0).getLastLocatedBlock();
  }

  private DataNode dataNode(DatanodeInfo node) {
    for (DataNode dn : cluster.getDataNodes()) {
      if (dn.getDatanodeUuid().equals(node.getDatanodeUuid())) {
        return dn;
      }
    }
    throw new AssertionError("no running DataNode " + node);
  }

  /** Fails unless {@code node}'s DataNode accepts {@code token} for writing {@code block} (its check: keys, password, block, mode). */
  private void assertDataNodeAccepts(DatanodeInfo node, Token<BlockTokenIdentifier> token, ExtendedBlock block)
      throws IOException {
    dataNode(node).getBlockPoolTokenSecretManager().checkAccess(token, null, block,
        BlockTokenIdentifier.AccessMode.WRITE);
  }

  private static void await(BooleanSupplier c, String what) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!c.getAsBoolean()) {
      assertTrue(System.nanoTime() < end, "timed out waiting for " + what);
      Thread.sleep(20);
    }
  }

  private static String names(DatanodeInfo[] nodes) {
    return nodes == null ? "null" : Arrays.toString(Arrays.stream(nodes).map(DatanodeInfo::getXferAddr).toArray());
  }

  /**
   * Before the first block, while it is written and after close, the streamer answers with
   * our writer's pipeline (the NameNode's expected locations, their storages), block (id and
   * generation stamp as the NameNode's, length acknowledged), token (what the DataNodes accept,
   * and what DFSTestUtil.getBlockToken returns), stage.
   */
  @Test
  void theStreamerAnswersWithOurWritersPipelineBlockTokenAndStage() throws Exception {
    start(4, new Configuration(false));
    Path p = new Path("/view/answers");
    byte[] data = PluginCluster.random(PluginCluster.BLOCK + 5000, 7);
    try (FSDataOutputStream out = fs.create(p, (short) 3)) {
      assertInstanceOf(RdmaOutputStream.class, out.getWrappedStream());
      StreamerProbe view = StreamerProbe.of(out);
      assertNotNull(view.streamerClass(), "getStreamer() of our stream");
      // as stock's before its first block: no pipeline, no block, no token
      assertNull(view.nodes());
      assertNull(view.storageIds());
      assertNull(view.block());
      assertNull(view.token());
      assertEquals(BlockConstructionStage.PIPELINE_SETUP_CREATE, view.stage());
      assertEquals(0, view.recoveryCount());

      out.write(data, 0, 1000);
      out.hflush();
      DatanodeInfo[] nodes = view.nodes();
      assertArrayEquals(((RdmaOutputStream) out.getWrappedStream()).getPipeline(), nodes, "our writer's pipeline");
      assertEquals(3, nodes.length);
      LocatedBlock nn = lastBlockAtNameNode(p);
      Map<String, String> storageAtNameNode = new HashMap<>();
      for (int i = 0; i < nn.getLocations().length; i++) {
        storageAtNameNode.put(nn.getLocations()[i].getDatanodeUuid(), nn.getStorageIDs()[i]);
      }
      assertEquals(storageAtNameNode.keySet(),
          Arrays.stream(nodes).map(DatanodeInfo::getDatanodeUuid).collect(java.util.stream.Collectors.toSet()),
          "the NameNode's expected locations");
      String[] ids = view.storageIds();
      for (int i = 0; i < nodes.length; i++) {
        assertEquals(storageAtNameNode.get(nodes[i].getDatanodeUuid()), ids[i], "storage of " + nodes[i]);
      }
      ExtendedBlock b = view.block();
      assertEquals(nn.getBlock().getBlockId(), b.getBlockId());
      assertEquals(nn.getBlock().getGenerationStamp(), b.getGenerationStamp());
      assertEquals(1000, b.getNumBytes(), "the length every DataNode acknowledged");
      assertEquals(b, view.streamBlock(), "DFSOutputStream#getBlock, stock's, reads the streamer");
      Token<BlockTokenIdentifier> t = view.token();
      assertEquals(t, view.streamBlockToken(), "DFSOutputStream#getBlockToken (DFSTestUtil.getBlockToken)");
      BlockTokenIdentifier id = t.decodeIdentifier();
      assertEquals(b.getBlockId(), id.getBlockId());
      assertTrue(id.getAccessModes().contains(BlockTokenIdentifier.AccessMode.WRITE), id.toString());
      for (DatanodeInfo n : nodes) {
        assertDataNodeAccepts(n, t, b);
      }
      assertEquals(BlockConstructionStage.DATA_STREAMING, view.stage());
      assertEquals(0, view.recoveryCount());

      // the next block: another pipeline's answers
      out.write(data, 1000, data.length - 1000);
      out.hflush();
      ExtendedBlock second = view.block();
      assertNotEquals(b.getBlockId(), second.getBlockId());
      assertEquals(lastBlockAtNameNode(p).getBlock().getBlockId(), second.getBlockId());
      assertEquals(data.length - PluginCluster.BLOCK, second.getNumBytes());
      assertNotEquals(t, view.token(), "the second block's token");
      assertEquals(second.getBlockId(), view.token().decodeIdentifier().getBlockId());

      out.close();
      // as stock's after its last block: no pipeline, the last block (complete), its token
      assertNull(view.nodes());
      assertNull(view.storageIds());
      assertEquals(BlockConstructionStage.PIPELINE_SETUP_CREATE, view.stage());
      LocatedBlock last = lastBlockAtNameNode(p);
      assertEquals(last.getBlock(), view.block());
      assertEquals(data.length - PluginCluster.BLOCK, view.block().getNumBytes());
      assertEquals(second.getBlockId(), view.token().decodeIdentifier().getBlockId());
    }
    assertArrayEquals(data, PluginCluster.readWhole(stock, p));
  }

  /**
   * A DataNode stopped in the middle of a write: while the recovered pipeline has not yet
   * acknowledged the packet sent again, the streamer shows one recovery, the survivor as the
   * pipeline, the new generation stamp and the token the recovery got (which the survivor
   * accepts); once it is acknowledged the count is 0 again, as stock's.
   */
  @Test
  void aRecoveryShowsInTheCountPipelineStampAndTokenUntilTheNextAck() throws Exception {
    start(3, new Configuration(false));
    Path p = new Path("/view/recovery");
    byte[] data = PluginCluster.random(64 * 1024, 9);
    CountDownLatch release = new CountDownLatch(1);
    AtomicReference<StreamerProbe> probe = new AtomicReference<>();
    DataNodeFaultInjector old = DataNodeFaultInjector.get();
    try (FSDataOutputStream out = fs.create(p, (short) 2)) {
      StreamerProbe view = StreamerProbe.of(out);
      out.write(data, 0, 1000);
      out.hflush();
      DatanodeInfo[] before = view.nodes();
      assertEquals(2, before.length, names(before));
      ExtendedBlock b0 = view.block();
      Token<BlockTokenIdentifier> t0 = view.token();
      // the DataNodes hold their acks once our writer has begun a recovery: the count stays visible
      probe.set(view);
      DataNodeFaultInjector.set(new DataNodeFaultInjector() {
        @Override
        public void delaySendingAckToUpstream(String upstreamAddr) throws IOException {
          StreamerProbe v = probe.get();
          if (v != null && v.recoveryCount() > 0) {
            try {
              release.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
              throw new IOException("interrupted", e);
            }
          }
        }
      });
      DatanodeInfo gone = before[1];
      List<DataNode> dns = cluster.getDataNodes();
      for (int i = 0; i < dns.size(); i++) {
        if (dns.get(i).getDatanodeUuid().equals(gone.getDatanodeUuid())) {
          assertNotNull(cluster.stopDataNode(i));
          break;
        }
      }
      FutureTask<Void> writer = new FutureTask<>(() -> {
        out.write(data, 1000, data.length - 1000);
        out.hflush();
        return null;
      });
      new Thread(writer, "view-test-writer").start();
      await(() -> view.recoveryCount() > 0, "a recovery");
      await(() -> view.nodes() != null && view.nodes().length == 1, "the recovered pipeline");
      await(() -> view.block().getGenerationStamp() > b0.getGenerationStamp(), "the recovery's generation stamp");
      assertEquals(1, view.recoveryCount(), "recoveries since the last ack");
      DatanodeInfo[] after = view.nodes();
      assertEquals(before[0].getDatanodeUuid(), after[0].getDatanodeUuid(), "the survivor: " + names(after));
      ExtendedBlock b1 = view.block();
      assertEquals(b0.getBlockId(), b1.getBlockId());
      assertTrue(b1.getGenerationStamp() > b0.getGenerationStamp(), b0 + " -> " + b1);
      assertEquals(b1.getGenerationStamp(), lastBlockAtNameNode(p).getBlock().getGenerationStamp(),
          "the stamp the NameNode recorded with the new pipeline");
      Token<BlockTokenIdentifier> t1 = view.token();
      assertNotEquals(t0, t1, "the recovery's token (updateBlockForPipeline)");
      assertDataNodeAccepts(after[0], t1, b1);
      assertFalse(writer.isDone(), "the hflush waits for the held ack");

      release.countDown();
      writer.get(60, TimeUnit.SECONDS);
      assertEquals(0, view.recoveryCount(), "0 again once a data packet is acknowledged");
      assertEquals(data.length, view.block().getNumBytes());
    } finally {
      release.countDown();
      DataNodeFaultInjector.set(old);
    }
    assertArrayEquals(data, PluginCluster.readWhole(stock, p));
  }

  /** What the view cannot answer from our writer (stock's packet machinery) throws, naming the call. */
  @Test
  void whatOurWriterCannotAnswerThrowsUnsupportedOperation() throws Exception {
    start(1, new Configuration(false));
    try (FSDataOutputStream out = fs.create(new Path("/view/unsupported"), (short) 1)) {
      out.write(1);
      out.hflush();
      StreamerProbe view = StreamerProbe.of(out);
      List<Runnable> calls = new ArrayList<>();
      calls.add(view::errorState);
      calls.add(view::bytesCurBlock);
      calls.add(view::lastException);
      calls.add(() -> {
        try {
          view.waitForAckedSeqno(0);
        } catch (IOException e) {
          throw new AssertionError(e);
        }
      });
      String[] names = {"getErrorState", "getBytesCurBlock", "getLastException", "waitForAckedSeqno"};
      for (int i = 0; i < calls.size(); i++) {
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, calls.get(i)::run,
            names[i]);
        assertTrue(e.getMessage().contains("DataStreamer#" + names[i]), e.getMessage());
      }
      // and the stream is unharmed
      out.write(2);
    }
  }

  /**
   * Stock's create flags that steer placement reach the NameNode's addBlock (stock's
   * DFSOutputStream turns them into AddBlockFlags): with NO_LOCAL_WRITE no block's pipeline
   * (what addBlock chose) has the DataNode the NameNode takes for the writer's host, as in
   * Hadoop's TestDFSOutputStream#testNoLocalWriteFlag (whose spy this is). Each pipeline is
   * looked at while its block is open: the replicas the NameNode lists after close may still
   * lack a DataNode's report, or include a copy its redundancy monitor made meanwhile.
   */
  @Test
  void noLocalWriteKeepsEveryPipelineOffTheWritersDataNode() throws Exception {
    start(3, new Configuration(false)); // 512-byte blocks: the test resources' minimum block size is 0
    BlockManager bm = cluster.getNameNode().getNamesystem().getBlockManager();
    DatanodeManager dm = bm.getDatanodeManager();
    DatanodeDescriptor local = dm.getDatanodeListForReport(HdfsConstants.DatanodeReportType.LIVE).get(0);
    Path p = new Path("/view/no-local-write");
    byte[] data = PluginCluster.random(512 * 16, 3);
    List<String> pipelines = new ArrayList<>();
    try {
      DatanodeManager spy = Mockito.spy(dm);
      Mockito.doReturn(local).when(spy).getDatanodeByHost("127.0.0.1");
      Whitebox.setInternalState(bm, "datanodeManager", spy);
      try (FSDataOutputStream out = fs.create(p, FsPermission.getFileDefault(),
          EnumSet.of(CreateFlag.CREATE, CreateFlag.NO_LOCAL_WRITE), 4096, (short) 2, 512, null)) {
        assertInstanceOf(RdmaOutputStream.class, out.getWrappedStream());
        RdmaOutputStream ours = (RdmaOutputStream) out.getWrappedStream();
        for (int b = 0; b < 16; b++) {
          out.write(data, b * 512, 511);
          out.hflush(); // the block's pipeline is open until its last byte
          DatanodeInfo[] nodes = ours.getPipeline();
          pipelines.add(names(nodes));
          assertEquals(2, nodes.length, pipelines.toString());
          for (DatanodeInfo d : nodes) {
            assertNotEquals(local.getDatanodeUuid(), d.getDatanodeUuid(),
                "block " + b + "'s pipeline has the writer's DataNode " + local.getXferAddr() + ": " + pipelines);
          }
          out.write(data, b * 512 + 511, 1);
        }
      }
    } finally {
      Whitebox.setInternalState(bm, "datanodeManager", dm);
    }
    assertEquals(0, fs.stockWriteFallbacks(), "written over hrdma");
    assertEquals(16, stock.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks().size());
    assertArrayEquals(data, PluginCluster.readWhole(stock, p));
  }
}
