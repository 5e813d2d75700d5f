package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongSupplier;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PacketHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.test.GenericTestUtils;
import org.hdfsrdma.datanode.HrdmaDataNodeKeys;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.nativelib.NativeShm;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.RdmaPorts;
import org.hdfsrdma.protocol.SameHost;
import org.hdfsrdma.transport.Endpoint;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Same-host reads by reference: a DataNode with an SSD and a DISK volume on
 * this host; the client's connection maps a shared-memory segment, the
 * DataNode reads packets into it (O_DIRECT on SSD, buffered on DISK) and
 * sends where they are; the client verifies and copies them in place and
 * gives each slot back. Reads are byte-identical, the DataNode holds no more
 * of a read than the client has not given back, bad releases are refused,
 * and every segment is unmapped once its connection and its packets are gone.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class ShmReadTest {
  private static final int BLOCK = 8 << 20;
  private static final int IN_FLIGHT = 3;

  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private Configuration conf;
  private RdmaDataNodePlugin plugin;

  @BeforeAll
  void start() throws Exception {
    conf = PluginCluster.baseConf();
    conf.setInt("hrdma.datanode.read.packets-in-flight", IN_FLIGHT);
    File base = new File("target/test-dir/" + getClass().getSimpleName());
    cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(1).storagesPerDatanode(2)
        .storageTypes(new StorageType[] {StorageType.SSD, StorageType.DISK}).build();
    cluster.waitActive();
    PluginCluster.awaitPluginsServing(cluster);
    stock = cluster.getFileSystem();
    plugin = RdmaDataNodePlugin.running().stream()
        .filter(p -> cluster.getDataNodes().get(0).getDatanodeUuid().equals(p.datanodeUuid())).findFirst()
        .orElseThrow();
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(null, cluster);
  }

  private Path write(String policy, String name, byte[] data) throws IOException {
    Path dir = new Path("/shm/" + policy);
    stock.mkdirs(dir);
    stock.setStoragePolicy(dir, policy);
    Path p = new Path(dir, name);
    try (OutputStream out = stock.create(p, true, 4096, (short) 1, BLOCK)) {
      out.write(data);
    }
    return p;
  }

  /** Shared-memory files of this JVM's DataNodes still in /dev/shm. */
  private static List<String> segmentFiles() throws IOException {
    String mine = "hrdma-read-" + ProcessHandle.current().pid() + "-";
    try (var s = Files.list(java.nio.file.Path.of("/dev/shm"))) {
      return s.map(f -> f.getFileName().toString()).filter(n -> n.startsWith(mine)).toList();
    }
  }

  private LocatedBlock firstBlock(Path p) throws IOException {
    return stock.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks().get(0);
  }

  private InetSocketAddress pluginAddress(LocatedBlock lb) {
    return new InetSocketAddress(lb.getLocations()[0].getIpAddr(), RdmaPorts.pluginPort(lb.getLocations()[0], conf));
  }

  /** Once the connections are closed: no segment mapped on either side, no buffer held by the DataNode. */
  private void awaitNothingHeld(long mapped0) throws InterruptedException {
    await(plugin::sharedSegmentBytes, 0, "the DataNode's segments unmapped once the connection closed");
    await(NativeShm::mappedBytes, mapped0, "nothing of either side left mapped");
    await(plugin::buffersOutstanding, 0, "the DataNode's transport buffers");
  }

  private static void await(LongSupplier value, long want, String what) throws InterruptedException {
    long until = System.nanoTime() + 20_000_000_000L;
    while (value.getAsLong() != want && System.nanoTime() < until) {
      Thread.sleep(20);
    }
    assertEquals(want, value.getAsLong(), what);
  }

  @ParameterizedTest
  @ValueSource(strings = {"ALL_SSD", "HOT"})
  void readsGoByReferenceByteIdenticalAndLeaveNothingMapped(String policy) throws Exception {
    byte[] data = PluginCluster.random(2 * BLOCK + 12345, policy.length());
    Path p = write(policy, "whole", data);
    LocatedBlock lb = firstBlock(p);
    assertEquals(StorageType.valueOf(policy.equals("HOT") ? "DISK" : "SSD"), lb.getStorageTypes()[0]);
    long mapped0 = NativeShm.mappedBytes();
    long segments0 = plugin.sharedSegmentsGranted();
    long refs0 = plugin.readPacketsByReference();
    byte[] got = new byte[data.length];
    try (RdmaDistributedFileSystem fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(),
        PluginCluster.rdmaClientConf(cluster))) {
      try (FSDataInputStream in = fs.open(p)) {
        in.readFully(got);
        byte[] part = new byte[5000];
        in.readFully(BLOCK - 2000, part); // positional, across the block boundary
        assertArrayEquals(Arrays.copyOfRange(data, BLOCK - 2000, BLOCK + 3000), part);
      }
      assertEquals(data.length + 5000L, fs.rdmaBytesRead(), "every byte over the plugin's read path");
      assertEquals(segments0 + 1, plugin.sharedSegmentsGranted(), "one segment for the client's connection");
      assertTrue(fs.blockClient().readsByReference(lb.getLocations()[0]));
      // 1 MiB - 12 KiB of data per packet, fitting a 1 MiB slot: more packets than MiB read
      assertTrue(plugin.readPacketsByReference() - refs0 > data.length >> 20,
          "packets by reference: " + (plugin.readPacketsByReference() - refs0));
      assertEquals(List.of(), segmentFiles(), "a mapped segment's file is gone at once");
      assertTrue(NativeShm.mappedBytes() > mapped0, "both sides map it while connected");
    }
    assertArrayEquals(data, got);
    awaitNothingHeld(mapped0);
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void aConnectionThatClosesUnderAReaderLeavesNothingMapped(boolean byValue) throws Exception {
    byte[] data = PluginCluster.random(2 * BLOCK, 77);
    Path p = write("ALL_SSD", "closed-" + byValue, data);
    long mapped0 = NativeShm.mappedBytes();
    long refs0 = plugin.readPacketsByReference();
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    c.setBoolean(RdmaBlockClient.SHM_READS_KEY, !byValue);
    try (RdmaDistributedFileSystem fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c)) {
      LocatedBlock lb = firstBlock(p);
      try (RdmaBlockReader r = fs.blockClient().open(lb, lb.getLocations()[0], 0, BLOCK)) {
        byte[] head = new byte[1000];
        r.readFully(head, 0, head.length); // a packet is held, others queued behind it
        assertArrayEquals(Arrays.copyOf(data, 1000), head);
        fs.blockClient().closeConnections();
        byte[] rest = new byte[BLOCK - 1000];
        try {
          r.readFully(rest, 0, rest.length);
          // by value, the transport may have delivered the whole block before the close
          assertTrue(byValue, "by reference, the DataNode cannot have sent more than its window");
          assertArrayEquals(Arrays.copyOfRange(data, 1000, BLOCK), rest);
        } catch (IOException e) {
          assertTrue(e.getMessage().contains("closed"), e.getMessage());
        }
      }
    }
    assertEquals(byValue, plugin.readPacketsByReference() == refs0, "by reference unless turned off");
    awaitNothingHeld(mapped0);
  }

  /**
   * A DataNode that refuses the segment (here the user's budget, held by other connections)
   * leaves the connection reading by value, byte-identical; the client counts every refusal and
   * logs the DataNode's reason once at INFO, so that an operator sees why reads go by value.
   */
  @Test
  void aRefusedSegmentIsCountedAndItsReasonLoggedOnce() throws Exception {
    byte[] data = PluginCluster.random(BLOCK, 97);
    Path p = write("ALL_SSD", "refused", data);
    LocatedBlock lb = firstBlock(p);
    InetSocketAddress addr = pluginAddress(lb);
    long mapped0 = NativeShm.mappedBytes();
    int holders = (int) (HrdmaDataNodeKeys.READ_SHM_MAX_BYTES_PER_CLIENT_DEFAULT
        / HrdmaDataNodeKeys.READ_SHM_SEGMENT_BYTES_DEFAULT);
    List<RawPlugin> raws = new ArrayList<>();
    List<NativeShm.Segment> maps = new ArrayList<>();
    GenericTestUtils.LogCapturer logs = GenericTestUtils.LogCapturer.captureLogs(
        org.slf4j.LoggerFactory.getLogger(RdmaBlockClient.class));
    try {
      for (int i = 0; i < holders; i++) { // the same user's segments, mapped: they stay
        RawPlugin raw = new RawPlugin(addr);
        raws.add(raw);
        send(raw.ep, MessageKind.SHM_REQUEST, 1, DataNodeConnection.shmRequest(lb.getBlock(), lb.getBlockToken()));
        Message grant = raw.next();
        assertEquals(MessageKind.SHM_GRANT, grant.kind(), grant.toString());
        HrdmaProtos.ShmGrant g = grant.shmGrant();
        maps.add(NativeShm.open(java.nio.file.Path.of(g.getPath()), g.getBytes()));
        send(raw.ep, MessageKind.SHM_MAPPED, 1, null);
      }
      long refs0 = plugin.readPacketsByReference();
      try (RdmaDistributedFileSystem fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(),
          PluginCluster.rdmaClientConf(cluster))) {
        for (int i = 0; i < 2; i++) { // two connections, each refused
          byte[] got = new byte[data.length];
          try (FSDataInputStream in = fs.open(p)) {
            in.readFully(got);
          }
          assertArrayEquals(data, got);
          assertFalse(fs.blockClient().readsByReference(lb.getLocations()[0]));
          fs.blockClient().closeConnections();
        }
        assertEquals(data.length * 2L, fs.rdmaBytesRead(), "over the plugin's read path, by value");
        assertEquals(2, fs.blockClient().sharedMemoryRefusals());
      }
      assertEquals(refs0, plugin.readPacketsByReference(), "no packet by reference");
      String out = logs.getOutput();
      String line = "reads by value, the DataNode refused a shared-memory segment";
      assertEquals(1, out.split(java.util.regex.Pattern.quote(line), -1).length - 1, "logged once: " + out);
      assertTrue(out.contains(HrdmaDataNodeKeys.READ_SHM_MAX_BYTES_PER_CLIENT_KEY), "with the DataNode's reason: " + out);
      assertTrue(out.contains(" INFO "), out);
    } finally {
      logs.stopCapturing();
      for (NativeShm.Segment m : maps) {
        m.close();
      }
      for (RawPlugin r : raws) {
        r.close();
      }
    }
    awaitNothingHeld(mapped0);
  }

  /**
   * The protocol, by hand: a segment only for this host and once per connection; packets
   * named by DATA_REF hold their slots until released (the DataNode stops at its window of
   * {@value #IN_FLIGHT} unreleased), releases of nothing held are refused without harm.
   */
  @Test
  void theDataNodeWaitsForReleasesAndRefusesBadOnes() throws Exception {
    byte[] data = PluginCluster.random(BLOCK, 99);
    Path p = write("ALL_SSD", "raw", data);
    LocatedBlock lb = firstBlock(p);
    InetSocketAddress addr = pluginAddress(lb);
    long mapped0 = NativeShm.mappedBytes();
    try (RawPlugin raw = new RawPlugin(addr)) {
      Endpoint ep = raw.ep;
      HrdmaProtos.ShmRequest good = DataNodeConnection.shmRequest(lb.getBlock(), lb.getBlockToken());
      send(ep, MessageKind.SHM_REQUEST, 1, good.toBuilder().setHost("elsewhere").build());
      Message refused = raw.next();
      assertEquals(MessageKind.ERROR, refused.kind());
      assertEquals(Status.ERROR_UNSUPPORTED, refused.error().getStatus());
      // tokens are on: no token, no block, or a token not valid for the block are refused as for a read
      long refused0 = plugin.sharedSegmentsRefused();
      byte[] pw = lb.getBlockToken().getPassword().clone();
      pw[0] ^= 1;
      org.apache.hadoop.security.token.Token<org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier> forged =
          new org.apache.hadoop.security.token.Token<>(lb.getBlockToken().getIdentifier(), pw,
              lb.getBlockToken().getKind(), lb.getBlockToken().getService());
      for (HrdmaProtos.ShmRequest bad : List.of(good.toBuilder().clearToken().build(),
          good.toBuilder().clearBlock().clearToken().build(),
          DataNodeConnection.shmRequest(lb.getBlock(), forged))) {
        send(ep, MessageKind.SHM_REQUEST, 1, bad);
        Message e = raw.next();
        assertEquals(MessageKind.ERROR, e.kind(), e.toString());
        assertEquals(Status.ERROR_ACCESS_TOKEN, e.error().getStatus(), e.error().getMessage());
      }
      assertEquals(refused0 + 3, plugin.sharedSegmentsRefused());
      send(ep, MessageKind.SHM_REQUEST, 2, good);
      Message grant = raw.next();
      assertEquals(MessageKind.SHM_GRANT, grant.kind(), grant.toString());
      HrdmaProtos.ShmGrant g = grant.shmGrant();
      send(ep, MessageKind.SHM_REQUEST, 3, good);
      Message twice = raw.next();
      assertEquals(Status.ERROR_INVALID, twice.error().getStatus(), "one segment per connection");
      try (NativeShm.Segment seg = NativeShm.open(java.nio.file.Path.of(g.getPath()), g.getBytes())) {
        send(ep, MessageKind.SHM_MAPPED, 2, null);
        ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.READ_REQUEST, 4,
            BlockOps.readBlock(lb.getBlock(), lb.getBlockToken(), "shm-test", 0, BLOCK), null));
        Message resp = raw.next();
        assertEquals(MessageKind.READ_RESPONSE, resp.kind(), resp.toString());
        List<HrdmaProtos.ShmRef> held = new ArrayList<>();
        for (int i = 0; i < IN_FLIGHT; i++) {
          Message ref = raw.next();
          assertEquals(MessageKind.DATA_REF, ref.kind(), ref.toString());
          assertEquals(4, ref.requestId());
          held.add(ref.shmRef());
        }
        assertFalse(Files.exists(java.nio.file.Path.of(g.getPath())), "the file goes once mapped");
        // nothing released: the DataNode waits (its read-ahead is in the segment, not on the wire)
        assertNull(raw.poll(500), "no packet beyond the window of unreleased ones");
        send(ep, MessageKind.SHM_RELEASE, 4, HrdmaProtos.ShmRelease.newBuilder().setOffset(g.getBytes() + 7)
            .build());
        Message bad = raw.next();
        assertEquals(MessageKind.ERROR, bad.kind(), bad.toString());
        assertEquals(Status.ERROR_INVALID, bad.error().getStatus());
        long at = 0;
        int received = IN_FLIGHT;
        long firstOffset = held.get(0).getOffset();
        while (true) {
          HrdmaProtos.ShmRef r = held.remove(0);
          // the packet, read in place, as the client does
          ByteBuffer msg = seg.buffer().slice((int) r.getOffset(), r.getLength());
          Message pkt = MessageCodec.decode(msg);
          assertEquals(MessageKind.DATA_PACKET, pkt.kind());
          assertEquals(4, pkt.requestId());
          PacketHeaderProto h = pkt.packetHeader();
          assertEquals(at, h.getOffsetInBlock());
          byte[] bytes = new byte[h.getDataLen()];
          pkt.payload().position(pkt.payload().limit() - bytes.length).get(bytes);
          assertArrayEquals(Arrays.copyOfRange(data, (int) at, (int) at + bytes.length), bytes, "at " + at);
          at += bytes.length;
          send(ep, MessageKind.SHM_RELEASE, 4, HrdmaProtos.ShmRelease.newBuilder().setOffset(r.getOffset()).build());
          if (h.getLastPacketInBlock()) {
            break;
          }
          int total = (data.length + h.getDataLen() - 1) / h.getDataLen(); // every packet but the last is full
          if (received < total) {
            Message next = raw.next(); // one more for the one released
            assertEquals(MessageKind.DATA_REF, next.kind(), next.toString());
            held.add(next.shmRef());
            received++;
          }
        }
        assertEquals(data.length, at);
        assertTrue(held.isEmpty());
        send(ep, MessageKind.SHM_RELEASE, 4, HrdmaProtos.ShmRelease.newBuilder().setOffset(firstOffset).build());
        assertEquals(Status.ERROR_INVALID, raw.next().error().getStatus(), "a second release of a packet");
      }
    }
    awaitNothingHeld(mapped0);
  }

  /**
   * A client that cannot map its segment (another user's file) declines it: the DataNode frees
   * it at once, not when the connection ends, and the connection's reads go by value.
   */
  @Test
  void aDeclinedSegmentIsFreedAtOnceAndReadsGoByValue() throws Exception {
    byte[] data = PluginCluster.random(BLOCK, 98);
    Path p = write("ALL_SSD", "declined", data);
    LocatedBlock lb = firstBlock(p);
    InetSocketAddress addr = pluginAddress(lb);
    long segmentBytes0 = plugin.sharedSegmentBytes();
    try (RawPlugin raw = new RawPlugin(addr)) {
      Endpoint ep = raw.ep;
      send(ep, MessageKind.SHM_REQUEST, 1, DataNodeConnection.shmRequest(lb.getBlock(), lb.getBlockToken()));
      HrdmaProtos.ShmGrant g = raw.next().shmGrant();
      assertTrue(plugin.sharedSegmentBytes() > segmentBytes0);
      send(ep, MessageKind.SHM_DECLINED, 1, null);
      await(plugin::sharedSegmentBytes, segmentBytes0, "a declined segment is unmapped while connected");
      assertFalse(Files.exists(java.nio.file.Path.of(g.getPath())), "and its file removed");
      ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.READ_REQUEST, 2,
          BlockOps.readBlock(lb.getBlock(), lb.getBlockToken(), "shm-test", 0, 5000), null));
      assertEquals(MessageKind.READ_RESPONSE, raw.next().kind());
      Message pkt = raw.next();
      assertEquals(MessageKind.DATA_PACKET, pkt.kind(), "by value: " + pkt);
      assertTrue(pkt.packetHeader().getLastPacketInBlock());
    }
  }

  private static void send(Endpoint ep, MessageKind kind, long id, com.google.protobuf.MessageLite header)
      throws IOException {
    ep.send(MessageCodec.encode(ep.transport().allocator(), kind, id, header));
  }
}
