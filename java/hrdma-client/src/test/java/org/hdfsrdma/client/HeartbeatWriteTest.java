package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSOutputStream;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.server.datanode.DataNodeFaultInjector;
import org.hdfsrdma.datanode.HrdmaDataNodeKeys;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Heartbeats on idle write pipelines, as stock's: a stream left idle longer than the DataNodes'
 * packet timeout keeps its pipeline and bytes (the client's heartbeats, at half the socket
 * timeout, are relayed and acked by every DataNode, sealed on an encrypted cluster), and a first
 * DataNode that drops heartbeats (stock's {@code dropHeartbeatPacket}) is the one replaced.
 * Timeouts are 3 s here (the DataNodes' packet timeout set as well, so that the same test shows
 * the loss without heartbeats).
 */
@Timeout(180)
class HeartbeatWriteTest {
  private static final int TIMEOUT_MS = 3000;

  private final DataNodeFaultInjector before = DataNodeFaultInjector.get();
  private MiniDFSCluster cluster;

  @AfterEach
  void stop() throws IOException {
    DataNodeFaultInjector.set(before);
    PluginCluster.shutdown(null, cluster);
  }

  private static Configuration timeouts(Configuration conf) {
    conf.setInt(HdfsClientConfigKeys.DFS_CLIENT_SOCKET_TIMEOUT_KEY, TIMEOUT_MS);
    conf.setLong(HrdmaDataNodeKeys.WRITE_PACKET_TIMEOUT_MS_KEY, TIMEOUT_MS);
    return conf;
  }

  private RdmaDistributedFileSystem ours() throws IOException {
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    c.set(org.hdfsrdma.transport.TransportConf.CONNECT_TIMEOUT_KEY, "30000"); // a loaded machine
    return (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
  }

  private static DatanodeInfo[] pipeline(FSDataOutputStream out) {
    return ((DFSOutputStream) out.getWrappedStream()).getPipeline();
  }

  private byte[] readBack(Path f) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    try (FSDataInputStream in = cluster.getFileSystem().open(f)) {
      in.transferTo(b);
    }
    return b.toByteArray();
  }

  /** Writes, hflushes, idles {@code idleMs}, writes and hflushes again: the pipeline and bytes stay. */
  private void idleStreamKeepsItsPipeline(Path f, long idleMs) throws Exception {
    byte[] a = PluginCluster.random(100_000, 1);
    byte[] b = PluginCluster.random(70_001, 2);
    try (RdmaDistributedFileSystem fs = ours()) {
      FSDataOutputStream out = fs.create(f, (short) 3);
      assertTrue(out.getWrappedStream() instanceof RdmaOutputStream, "not our stream");
      out.write(a);
      out.hflush();
      DatanodeInfo[] first = pipeline(out);
      assertEquals(3, first.length);
      Thread.sleep(idleMs); // over twice the DataNodes' packet timeout: only heartbeats keep the write open
      out.write(b);
      out.hflush();
      assertArrayEquals(first, pipeline(out), "the pipeline changed while the stream was idle");
      assertEquals(0, fs.pipelineRecoveries(), "the idle stream's pipeline was recovered");
      out.close();
      assertEquals(0, fs.pipelineRecoveries(), "the idle stream's pipeline was recovered at close");
    }
    byte[] all = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, all, a.length, b.length);
    assertArrayEquals(all, readBack(f));
  }

  @Test
  void anIdleStreamKeepsItsPipelineAndBytes() throws Exception {
    cluster = PluginCluster.start(timeouts(PluginCluster.baseConf()), getClass(), 3);
    idleStreamKeepsItsPipeline(new Path("/hb/idle"), 2L * TIMEOUT_MS + 1500);
  }

  @Test
  void anIdleStreamKeepsItsPipelineOnAnEncryptedCluster() throws Exception {
    // heartbeats are sealed like any packet: an unsealed one would close the connection
    cluster = PluginCluster.start(timeouts(WireProtectionTest.encrypted(PluginCluster.baseConf())), getClass(), 3);
    idleStreamKeepsItsPipeline(new Path("/hb/idle-encrypted"), 2L * TIMEOUT_MS + 1500);
  }

  /**
   * Stock's TestClientProtocolForPipelineRecovery#testPacketTransmissionDelay on our path: the
   * first DataNode drops heartbeats, so the second hears nothing and times out; the first, which
   * sent it nothing for that long, passes the error up by closing its connection, and the client
   * replaces the first DataNode (no node named) and keeps the second.
   */
  @Test
  void aFirstDataNodeThatDropsHeartbeatsIsReplaced() throws Exception {
    cluster = PluginCluster.start(timeouts(PluginCluster.baseConf()), getClass(), 2);
    AtomicInteger dropped = new AtomicInteger();
    DataNodeFaultInjector.set(new DataNodeFaultInjector() {
      @Override
      public boolean dropHeartbeatPacket() {
        dropped.incrementAndGet();
        return true;
      }
    });
    Path f = new Path("/hb/dropped");
    try (RdmaDistributedFileSystem fs = ours()) {
      FSDataOutputStream out = fs.create(f, (short) 2);
      out.write(0x31);
      out.hflush();
      DatanodeInfo[] first = pipeline(out);
      assertEquals(2, first.length);
      Thread.sleep(TIMEOUT_MS + 1500);
      out.write(0x32);
      out.hflush();
      DatanodeInfo[] now = pipeline(out);
      out.close();
      assertTrue(dropped.get() > 0, "no heartbeat reached the hook");
      List<DatanodeInfo> after = Arrays.asList(now);
      assertFalse(after.contains(first[0]), "the first DataNode was not replaced: " + after);
      assertTrue(after.contains(first[1]), "the second DataNode was not kept: " + after);
      assertEquals(1, fs.pipelineRecoveries());
    }
    assertArrayEquals(new byte[] {0x31, 0x32}, readBack(f));
  }
}
