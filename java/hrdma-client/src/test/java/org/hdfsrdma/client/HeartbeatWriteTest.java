package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.EnumSet;
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
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.protocol.ClientProtocol;
import org.apache.hadoop.hdfs.protocol.HdfsFileStatus;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PipelineAckProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.io.EnumSetWritable;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.datanode.HrdmaDataNodeKeys;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.RdmaPorts;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Heartbeats on idle write pipelines, as stock's: a stream left idle longer than the DataNodes'
 * packet timeout keeps its pipeline and bytes (the client's heartbeats, at half the socket
 * timeout, are relayed and acked by every DataNode, sealed on an encrypted cluster), and a first
 * DataNode that drops heartbeats (stock's {@code dropHeartbeatPacket}) is the one replaced.
 *
 * <p>The client's socket timeout is 2 s here (a heartbeat every second) and the DataNodes'
 * packet timeout 6 s, short enough for the same test to show the loss without heartbeats. Not
 * both 3 s, as stock's test has them: then the first heartbeat is due 1.5 s before a DataNode
 * gives up, and a stall of the test JVM (client and DataNodes alike) longer than that on a
 * loaded machine fires both at once; the DataNode's timer won, the heartbeat met a closed
 * connection, and no heartbeat reached the hook (a 2.5 s SIGSTOP of the JVM landing between the
 * hflush and the first heartbeat did this). Here the margin is 5 s; the assertions are the same.
 */
@Timeout(180)
class HeartbeatWriteTest {
  private static final int TIMEOUT_MS = 2000; // the client's dfs.client.socket-timeout
  private static final int PACKET_TIMEOUT_MS = 6000; // the DataNodes'

  private final DataNodeFaultInjector before = DataNodeFaultInjector.get();
  private MiniDFSCluster cluster;

  @AfterEach
  void stop() throws IOException {
    DataNodeFaultInjector.set(before);
    PluginCluster.shutdown(null, cluster);
  }

  private static Configuration timeouts(Configuration conf) {
    conf.setLong(HrdmaDataNodeKeys.WRITE_PACKET_TIMEOUT_MS_KEY, PACKET_TIMEOUT_MS);
    // stock's DataNodes the same, should a write take the stock path
    conf.setInt(HdfsClientConfigKeys.DFS_CLIENT_SOCKET_TIMEOUT_KEY, PACKET_TIMEOUT_MS);
    // a loaded machine: a DataNode waits for a new connection's hello this long (the tests' 3 s
    // once sent a pipeline set-up to the stock path)
    conf.set(org.hdfsrdma.transport.TransportConf.CONNECT_TIMEOUT_KEY, "30000");
    return conf;
  }

  private RdmaDistributedFileSystem ours() throws IOException {
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    c.setInt(HdfsClientConfigKeys.DFS_CLIENT_SOCKET_TIMEOUT_KEY, TIMEOUT_MS);
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
    idleStreamKeepsItsPipeline(new Path("/hb/idle"), 2L * PACKET_TIMEOUT_MS + 1500);
  }

  @Test
  void anIdleStreamKeepsItsPipelineOnAnEncryptedCluster() throws Exception {
    // heartbeats are sealed like any packet: an unsealed one would close the connection
    cluster = PluginCluster.start(timeouts(WireProtectionTest.encrypted(PluginCluster.baseConf())), getClass(), 3);
    idleStreamKeepsItsPipeline(new Path("/hb/idle-encrypted"), 2L * PACKET_TIMEOUT_MS + 1500);
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
      // the second DataNode hears nothing and times out; the first then closes its connection.
      // Waited for rather than slept through: a write before both are done would reach the
      // second DataNode and keep the pipeline
      Thread.sleep(PACKET_TIMEOUT_MS);
      long until = System.nanoTime() + 60_000_000_000L;
      while (RdmaDataNodePlugin.running().stream().anyMatch(p -> p.openWrites() > 0)) {
        assertTrue(System.nanoTime() < until, "the DataNodes' writes did not end");
        Thread.sleep(50);
      }
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

  /**
   * After the writer's last packet no packet or heartbeat comes; a downstream DataNode that is
   * slow but acks (each of its acks held 0.7 s, the packets' in all over twice the first
   * DataNode's 2 s packet timeout) is progress to the first DataNode, as stock's PacketResponder
   * counts it: every packet is acked, the last one too, and the write is not timed out. On the
   * wire, a writer that sends its packets and the last one at once.
   */
  @Test
  void aSlowButAckingDownstreamKeepsTheWriteAliveAfterTheLastPacket() throws Exception {
    Configuration conf = timeouts(PluginCluster.baseConf());
    long packetTimeoutMs = 2000;
    conf.setLong(HrdmaDataNodeKeys.WRITE_PACKET_TIMEOUT_MS_KEY, packetTimeoutMs);
    cluster = PluginCluster.start(conf, getClass(), 2);
    AtomicInteger delayed = new AtomicInteger();
    DataNodeFaultInjector.set(new DataNodeFaultInjector() {
      @Override
      public void delaySendingAckToUpstream(String upstream) {
        // the last DataNode acks on its volume's write executor, after the packet's disk write
        String t = Thread.currentThread().getName();
        if (t.startsWith("hrdma-dn-write-") && !t.startsWith("hrdma-dn-write-setup-")) {
          delayed.incrementAndGet();
          try {
            Thread.sleep(700);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }
    });
    ClientProtocol nn = cluster.getFileSystem().getClient().getNamenode();
    String client = cluster.getFileSystem().getClient().getClientName();
    String path = "/hb/slow-downstream";
    HdfsFileStatus st = nn.create(path, FsPermission.getFileDefault(), client,
        new EnumSetWritable<>(EnumSet.of(CreateFlag.CREATE)), true, (short) 2, PluginCluster.BLOCK,
        org.apache.hadoop.crypto.CryptoProtocolVersion.supported(), null, null);
    LocatedBlock lb = nn.addBlock(path, client, null, null, st.getFileId(), null, null);
    DatanodeInfo first = lb.getLocations()[0];
    int packets = 6;
    try (RawPlugin raw = new RawPlugin(new java.net.InetSocketAddress(first.getIpAddr(),
        RdmaPorts.pluginPort(first, cluster.getConfiguration(0))))) {
      raw.ep.send(MessageCodec.encode(raw.ep.transport().allocator(), MessageKind.WRITE_REQUEST, 1,
          BlockOps.writeBlock(lb.getBlock(), lb.getBlockToken(), client, lb.getLocations(), lb.getStorageTypes(),
              lb.getStorageIDs(), DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, PluginCluster.BPC)), null));
      Message r = raw.next();
      assertEquals(MessageKind.WRITE_RESPONSE, r.kind());
      assertEquals(Status.SUCCESS, r.writeResponse().getStatus(), r.writeResponse().getMessage());
      for (int i = 0; i < packets; i++) {
        byte[] data = PluginCluster.random(PluginCluster.BPC, 10 + i);
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(data);
        ByteBuffer body = ByteBuffer.allocate(4 + data.length).putInt((int) crc.getValue()).put(data).flip();
        send(raw, 1, BlockOps.packetHeader(i, (long) i * data.length, false, data.length, false), body);
      }
      send(raw, 1, BlockOps.packetHeader(packets, (long) packets * PluginCluster.BPC, true, 0, false), null);
      long t0 = System.nanoTime();
      for (int i = 0; i <= packets; i++) {
        PipelineAckProto a = ack(raw);
        assertEquals(i, a.getSeqno());
        assertEquals(List.of(Status.SUCCESS, Status.SUCCESS), BlockOps.ackStatuses(a));
      }
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertTrue(delayed.get() > packets, "the downstream's acks were not held: " + delayed.get());
      assertTrue(ms > packetTimeoutMs, "the acks came too fast to show anything: " + ms + " ms");
    }
  }

  private static void send(RawPlugin raw, long id, org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos
      .PacketHeaderProto h, ByteBuffer payload) throws IOException {
    raw.ep.send(MessageCodec.encode(raw.ep.transport().allocator(), MessageKind.DATA_PACKET, id, h, payload));
  }

  private static PipelineAckProto ack(RawPlugin raw) throws Exception {
    Message m = raw.next();
    assertEquals(MessageKind.PIPELINE_ACK, m.kind(), String.valueOf(m));
    return m.pipelineAck();
  }

  /**
   * The DataNode's side, on the wire: the WRITE_RESPONSE of a pipeline of ours offers heartbeats;
   * a heartbeat within the write is acked in its turn by every node (seqno -1) and leaves the
   * replica's acknowledged length alone; one for no open write is dropped unanswered; one that
   * carries data is a protocol error that fails the write.
   */
  @Test
  void aDataNodeAcksHeartbeatsOnlyWithinAWriteWithoutTouchingTheReplica() throws Exception {
    cluster = PluginCluster.start(timeouts(PluginCluster.baseConf()), getClass(), 2);
    ClientProtocol nn = cluster.getFileSystem().getClient().getNamenode();
    String client = cluster.getFileSystem().getClient().getClientName();
    String path = "/hb/raw";
    HdfsFileStatus st = nn.create(path, FsPermission.getFileDefault(), client,
        new EnumSetWritable<>(EnumSet.of(CreateFlag.CREATE)), true, (short) 2, PluginCluster.BLOCK,
        org.apache.hadoop.crypto.CryptoProtocolVersion.supported(), null, null);
    LocatedBlock lb = nn.addBlock(path, client, null, null, st.getFileId(), null, null);
    DatanodeInfo first = lb.getLocations()[0];
    DataNode dn = cluster.getDataNode(first.getIpcPort());
    try (RawPlugin raw = new RawPlugin(new java.net.InetSocketAddress(first.getIpAddr(),
        RdmaPorts.pluginPort(first, cluster.getConfiguration(0))))) {
      // a heartbeat before any write: nothing is open, nothing answers
      send(raw, 7, BlockOps.heartbeatHeader(), null);
      assertEquals(null, raw.poll(1000), "a heartbeat for no open write was answered");

      raw.ep.send(MessageCodec.encode(raw.ep.transport().allocator(), MessageKind.WRITE_REQUEST, 1,
          BlockOps.writeBlock(lb.getBlock(), lb.getBlockToken(), client, lb.getLocations(), lb.getStorageTypes(),
              lb.getStorageIDs(), DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, PluginCluster.BPC)), null));
      Message r = raw.next();
      assertEquals(MessageKind.WRITE_RESPONSE, r.kind());
      assertEquals(Status.SUCCESS, r.writeResponse().getStatus(), r.writeResponse().getMessage());
      assertTrue(BlockOps.takesHeartbeats(r.writeResponse()), "a pipeline of ours does not offer heartbeats");

      send(raw, 1, BlockOps.heartbeatHeader(), null);
      PipelineAckProto a = ack(raw);
      assertEquals(BlockOps.HEARTBEAT_SEQNO, a.getSeqno());
      assertEquals(List.of(Status.SUCCESS, Status.SUCCESS), BlockOps.ackStatuses(a));

      byte[] data = PluginCluster.random(PluginCluster.BPC, 5);
      java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
      crc.update(data);
      ByteBuffer body = ByteBuffer.allocate(4 + data.length).putInt((int) crc.getValue()).put(data).flip();
      send(raw, 1, BlockOps.packetHeader(0, 0, false, data.length, false), body);
      a = ack(raw);
      assertEquals(0, a.getSeqno());
      assertEquals(List.of(Status.SUCCESS, Status.SUCCESS), BlockOps.ackStatuses(a));
      long acked = dn.getFSDataset().getReplicaVisibleLength(lb.getBlock());
      assertEquals(data.length, acked);

      // heartbeats are not in the seqno sequence and leave the acknowledged length alone
      send(raw, 1, BlockOps.heartbeatHeader(), null);
      send(raw, 1, BlockOps.heartbeatHeader(), null);
      for (int i = 0; i < 2; i++) {
        a = ack(raw);
        assertEquals(BlockOps.HEARTBEAT_SEQNO, a.getSeqno());
        assertEquals(List.of(Status.SUCCESS, Status.SUCCESS), BlockOps.ackStatuses(a));
      }
      assertEquals(data.length, dn.getFSDataset().getReplicaVisibleLength(lb.getBlock()));

      // a "heartbeat" with data: the write fails with an error ack
      send(raw, 1, BlockOps.packetHeader(BlockOps.HEARTBEAT_SEQNO, 0, false, 4, false),
          ByteBuffer.allocate(8));
      a = ack(raw);
      assertEquals(BlockOps.HEARTBEAT_SEQNO, a.getSeqno());
      assertEquals(Status.ERROR, BlockOps.ackStatuses(a).get(0));
      assertEquals(data.length, dn.getFSDataset().getReplicaVisibleLength(lb.getBlock()));
    }
  }
}
