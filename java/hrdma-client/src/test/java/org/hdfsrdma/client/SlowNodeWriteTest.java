package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.datatransfer.PipelineAck;
import org.apache.hadoop.hdfs.server.datanode.DataNodeFaultInjector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Stock's slow-node handling in the write pipeline, on ours (as Hadoop's
 * TestClientProtocolForPipelineRecovery#testPipelineRecoveryWithSlowNode): the DataNode before
 * the last one flags its mirror SLOW in its acks through stock's
 * {@code DataNodeFaultInjector#markSlow}; the flag is relayed to the client, which takes a node
 * flagged in {@code dfs.client.mark.slownode.as.badnode.threshold} consecutive acks as bad and
 * replaces it (four DataNodes, so there is one to add), and starts counting again when an ack
 * does not flag it. Every byte goes over hrdma and the file is whole.
 */
@Timeout(180)
class SlowNodeWriteTest {
  private static final int THRESHOLD = 3;
  private static final int ONE_WRITE = 5000;

  private final DataNodeFaultInjector before = DataNodeFaultInjector.get();
  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private RdmaDistributedFileSystem fs;

  @BeforeEach
  void start() throws Exception {
    cluster = PluginCluster.start(PluginCluster.baseConf(), getClass(), 4);
    stock = cluster.getFileSystem();
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    c.setInt(HdfsClientConfigKeys.DFS_CLIENT_MARK_SLOWNODE_AS_BADNODE_THRESHOLD_KEY, THRESHOLD);
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
  }

  @AfterEach
  void stop() throws IOException {
    DataNodeFaultInjector.set(before);
    PluginCluster.shutdown(fs, cluster);
  }

  private static RdmaOutputStream ours(FSDataOutputStream out) {
    return (RdmaOutputStream) out.getWrappedStream();
  }

  /** Flags the last DataNode SLOW in the acks of the one before it, on the calls {@code flag} picks (1, 2, ...). */
  private static final class MarkLastSlow extends DataNodeFaultInjector {
    final String lastDn;
    final java.util.function.IntPredicate flag;
    final AtomicInteger calls = new AtomicInteger();
    final AtomicInteger flagged = new AtomicInteger();

    MarkLastSlow(String lastDn, java.util.function.IntPredicate flag) {
      this.lastDn = lastDn;
      this.flag = flag;
    }

    @Override
    public void markSlow(String mirrorAddr, int[] replies) {
      if (!lastDn.equals(mirrorAddr)) {
        return;
      }
      assertEquals(2, replies.length, Arrays.toString(replies));
      if (flag.test(calls.incrementAndGet())) {
        flagged.incrementAndGet();
        replies[1] = PipelineAck.setSLOWForHeader(replies[1], PipelineAck.SLOW.SLOW);
      }
    }
  }

  @Test
  void aDataNodeFlaggedSlowInThresholdConsecutiveAcksIsReplaced() throws Exception {
    Path p = new Path("/slow/replaced");
    byte[] data = PluginCluster.random(5 + 2 * THRESHOLD * ONE_WRITE, 3);
    String lastDn;
    MarkLastSlow slow;
    try (FSDataOutputStream out = fs.create(p, (short) 3)) {
      out.write(data, 0, 5);
      out.hflush();
      DatanodeInfo[] pipeline = ours(out).pipeline();
      assertEquals(3, pipeline.length, Arrays.toString(pipeline));
      lastDn = pipeline[2].getXferAddr(false);
      slow = new MarkLastSlow(lastDn, n -> true);
      DataNodeFaultInjector.set(slow);
      int off = 5;
      for (int i = 1; i <= THRESHOLD; i++) {
        out.write(data, off, ONE_WRITE);
        off += ONE_WRITE;
        out.hflush();
        DatanodeInfo[] now = ours(out).pipeline();
        if (i < THRESHOLD) {
          // flagged in fewer consecutive acks than the threshold: still in the pipeline
          assertEquals(lastDn, now[2].getXferAddr(false), "after " + i + " slow acks: " + Arrays.toString(now));
        }
      }
      DatanodeInfo[] after = ours(out).pipeline();
      assertEquals(3, after.length, "replaced, not only dropped: " + Arrays.toString(after));
      assertTrue(Arrays.stream(after).noneMatch(d -> d.getXferAddr(false).equals(lastDn)),
          "slow " + lastDn + " still in " + Arrays.toString(after));
      DataNodeFaultInjector.set(before);
      out.write(data, off, data.length - off);
    }
    assertTrue(slow.flagged.get() >= THRESHOLD, "flagged " + slow.flagged.get());
    assertTrue(fs.pipelineRecoveries() >= 1, "recoveries " + fs.pipelineRecoveries());
    assertEquals(0, fs.stockWriteFallbacks());
    assertEquals(data.length, fs.rdmaBytesWritten(), "every byte went over hrdma");
    assertArrayEquals(data, PluginCluster.readWhole(stock, p));
  }

  @Test
  void aNodeNotFlaggedInConsecutiveAcksStays() throws Exception {
    Path p = new Path("/slow/kept");
    int writes = 3 * THRESHOLD;
    byte[] data = PluginCluster.random(5 + writes * ONE_WRITE, 4);
    MarkLastSlow slow;
    try (FSDataOutputStream out = fs.create(p, (short) 3)) {
      out.write(data, 0, 5);
      out.hflush();
      DatanodeInfo[] pipeline = ours(out).pipeline();
      String lastDn = pipeline[2].getXferAddr(false);
      // flagged in THRESHOLD - 1 acks, then one not: the count starts again every time
      slow = new MarkLastSlow(lastDn, n -> n % THRESHOLD != 0);
      DataNodeFaultInjector.set(slow);
      for (int i = 0; i < writes; i++) {
        out.write(data, 5 + i * ONE_WRITE, ONE_WRITE);
        out.hflush();
      }
      assertEquals(Arrays.asList(pipeline), Arrays.asList(ours(out).pipeline()));
      DataNodeFaultInjector.set(before);
    }
    assertTrue(slow.flagged.get() >= writes * (THRESHOLD - 1) / THRESHOLD, "flagged " + slow.flagged.get());
    assertEquals(0, fs.pipelineRecoveries());
    assertArrayEquals(data, PluginCluster.readWhole(stock, p));
  }
}
