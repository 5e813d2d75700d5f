package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfoWithStorage;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PacketHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.datanode.disk.VolumeScheduler;
import org.hdfsrdma.datanode.disk.VolumeStats;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.RdmaPorts;
import org.hdfsrdma.transport.Endpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * DataNodes with an SSD and a DISK volume each; HDFS storage policies set
 * through the stock NameNode; files written through our write path land on
 * the storage type and storage id the NameNode assigned, on the volume's
 * scheduler with the type's policy.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class StoragePolicyTest {
  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private FileSystem fs;
  private Configuration conf;

  @BeforeAll
  void start() throws Exception {
    conf = PluginCluster.baseConf();
    // a window that holds a whole 64 MiB test block: a read issues all its disk reads at once,
    // so the next one prepares however far its sending has got
    conf.setLong(org.hdfsrdma.datanode.disk.DiskSettings.READ_AHEAD_BYTES_KEY, 80L << 20);
    File base = new File("target/test-dir/" + getClass().getSimpleName());
    cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(3).storagesPerDatanode(2)
        .storageTypes(new StorageType[] {StorageType.SSD, StorageType.DISK}).build();
    cluster.waitActive();
    PluginCluster.awaitPluginsServing(cluster);
    stock = cluster.getFileSystem();
    fs = FileSystem.get(cluster.getURI(), PluginCluster.rdmaClientConf(cluster));
  }

  @AfterAll
  void stop() throws IOException {
    if (fs != null) {
      fs.close();
    }
    if (cluster != null) {
      cluster.shutdown();
    }
  }

  private RdmaDataNodePlugin plugin(DataNode dn) {
    return RdmaDataNodePlugin.running().stream().filter(p -> dn.getDatanodeUuid().equals(p.datanodeUuid()))
        .findFirst().orElseThrow();
  }

  /** Bytes each storage id's scheduler has written so far, over all DataNodes. */
  private Map<String, Long> writtenByStorage() {
    Map<String, Long> m = new TreeMap<>();
    for (DataNode dn : cluster.getDataNodes()) {
      for (Map.Entry<String, VolumeScheduler> e : plugin(dn).disk().schedulers().entrySet()) {
        m.put(e.getKey(), e.getValue().stats().snapshot().bytesWritten());
      }
    }
    return m;
  }

  @ParameterizedTest
  @CsvSource({"ALL_SSD, SSD SSD SSD", "ONE_SSD, SSD DISK DISK", "HOT, DISK DISK DISK"})
  void policiesChosenAtTheNameNodeAreWhereOurWritesGo(String policy, String types) throws Exception {
    Path dir = new Path("/policy/" + policy);
    stock.mkdirs(dir);
    stock.setStoragePolicy(dir, policy);
    Path p = new Path(dir, "f");
    byte[] data = PluginCluster.random(3 * PluginCluster.BLOCK / 2, policy.hashCode());
    Map<String, Long> before = writtenByStorage();
    try (OutputStream out = fs.create(p)) {
      out.write(data);
    }
    Map<String, Long> after = writtenByStorage();
    List<String> want = Arrays.asList(types.split(" "));
    // close() returns once the NameNode has the minimum replication; the other replicas' reports may lag
    List<LocatedBlock> located = stock.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks();
    long until = System.nanoTime() + 20_000_000_000L;
    while (located.stream().anyMatch(b -> b.getLocations().length < want.size()) && System.nanoTime() < until) {
      Thread.sleep(100);
      located = stock.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks();
    }
    for (LocatedBlock b : located) {
      List<String> got = new ArrayList<>();
      for (StorageType t : b.getStorageTypes()) {
        got.add(t.name());
      }
      got.sort(null);
      List<String> w = new ArrayList<>(want);
      w.sort(null);
      assertEquals(w, got, policy + ": storage types of " + b.getBlock());
      for (DatanodeInfoWithStorage loc : b.getLocations()) {
        DataNode dn = cluster.getDataNode(loc.getIpcPort());
        // the replica is on the very volume the NameNode assigned
        String onDisk = dn.getFSDataset().getVolume(b.getBlock()).getStorageID();
        assertEquals(loc.getStorageID(), onDisk, policy + ": " + b.getBlock() + " on " + dn.getDisplayName());
        assertEquals(loc.getStorageType(), dn.getFSDataset().getVolume(b.getBlock()).getStorageType());
        // and it went through that volume's scheduler, with the policy of its type
        VolumeScheduler s = plugin(dn).disk().schedulers().get(onDisk);
        assertEquals(loc.getStorageType() == StorageType.SSD ? "adaptive" : "rotational", s.policy().name());
        assertTrue(after.get(onDisk) > before.getOrDefault(onDisk, 0L), policy + ": nothing written via " + onDisk);
      }
    }
    byte[] got = new byte[data.length];
    try (InputStream in = stock.open(p)) {
      org.apache.hadoop.io.IOUtils.readFully(in, got, 0, got.length);
    }
    assertArrayEquals(data, got);

    // our read path: on SSD volumes O_DIRECT through io_uring, elsewhere buffered; a read from
    // the start of the file goes straight into the packets sent
    long directBefore = directBytes(false);
    long packetsBefore = directBytes(true);
    byte[] ours = new byte[data.length];
    try (InputStream in = fs.open(p)) {
      org.apache.hadoop.io.IOUtils.readFully(in, ours, 0, ours.length);
      assertEquals(-1, in.read());
    }
    assertArrayEquals(data, ours);
    long intoPackets = directBytes(true) - packetsBefore;
    long windowBefore = directBytes(false) - directBytes(true);
    // unaligned positional reads (O_DIRECT reads whole aligned pages around them, into a window)
    try (org.apache.hadoop.fs.FSDataInputStream in = fs.open(p)) {
      for (int off : new int[] {12_345, PluginCluster.BLOCK - 700, data.length - 3000}) {
        byte[] part = new byte[Math.min(100_000, data.length - off)];
        in.readFully(off, part);
        assertArrayEquals(Arrays.copyOfRange(data, off, off + part.length), part, policy + " at " + off);
      }
    }
    long direct = directBytes(false) - directBefore;
    long viaWindow = directBytes(false) - directBytes(true) - windowBefore;
    if (types.startsWith("SSD SSD")) {
      assertTrue(direct >= data.length, policy + ": read directly " + direct + " of " + data.length);
      assertTrue(intoPackets >= data.length, policy + ": read into the packets " + intoPackets + " of "
          + data.length);
      assertTrue(viaWindow > 0, policy + ": reads from unaligned offsets went through the window");
    } else if (!types.contains("SSD")) {
      assertEquals(0, direct, policy + ": no direct reads on DISK");
    }
  }

  /**
   * Several requests queued on one connection for a replica on SSD: each one after the first
   * may open its files and start its O_DIRECT reads while the one before still sends (it is
   * prepared ahead of its turn), yet what goes on the wire keeps the requests' order, a
   * refusal included, and a prepared read the client withdraws gives back all it took.
   */
  @Test
  void queuedReadsPrepareAheadOfTheirTurnAndAnswerInOrder() throws Exception {
    Path dir = new Path("/prepared");
    stock.mkdirs(dir);
    stock.setStoragePolicy(dir, "ALL_SSD");
    Path p = new Path(dir, "f");
    // one block of 65 packets: more than the loopback connection buffers while the test holds it
    int len = 64 << 20;
    byte[] data = PluginCluster.random(len, 23);
    try (OutputStream out = fs.create(p, true, 4096, (short) 1, len, null)) {
      out.write(data);
    }
    LocatedBlock lb = stock.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks().get(0);
    assertEquals(StorageType.SSD, lb.getStorageTypes()[0]);
    DataNode dn = cluster.getDataNode(lb.getLocations()[0].getIpcPort());
    RdmaDataNodePlugin plugin = plugin(dn);
    long preparedBefore = plugin.readsPreparedAhead();
    InetSocketAddress addr = new InetSocketAddress(lb.getLocations()[0].getIpAddr(),
        RdmaPorts.pluginPort(lb.getLocations()[0], conf));
    try (RawPlugin raw = new RawPlugin(addr)) {
      Endpoint ep = raw.ep;
      // all sent at once: 1 and 2 the whole block, 3 past its end (refused), 4 its first 1000
      // bytes; the connection held at request 1's first packet until request 2 is prepared
      // (its disk reads begun while 1 cannot finish sending: nothing of 2 may be on the wire)
      raw.holdAt(m -> m.requestId() == 1 && m.kind() == MessageKind.DATA_PACKET);
      for (long[] a : new long[][] {{1, len}, {2, len}, {3, 2L * len}, {4, 1000}}) {
        sendRead(ep, lb, a[0], a[1]);
      }
      awaitCount(plugin::readsPreparedAhead, preparedBefore + 1, "request 2 prepared while request 1 sends");
      raw.release();
      expectWholeBlock(raw, 1, data);
      expectWholeBlock(raw, 2, data);
      Message refused = raw.next();
      assertEquals(MessageKind.ERROR, refused.kind(), refused.toString());
      assertEquals(3, refused.requestId());
      assertTrue(refused.error().getMessage().contains("don't match block"), refused.error().getMessage());
      Message resp4 = raw.next();
      assertEquals(MessageKind.READ_RESPONSE, resp4.kind(), resp4.toString());
      assertEquals(4, resp4.requestId());
      Message last = raw.next();
      assertEquals(4, last.requestId());
      assertTrue(last.packetHeader().getLastPacketInBlock());

      // a read withdrawn by the client (READ_STATUS ERROR) while it is prepared (its disk reads
      // begun, not its turn yet) is undone without a word on the wire; the connection serves on
      long prepared = plugin.readsPreparedAhead();
      raw.holdAt(m -> m.requestId() == 5 && m.kind() == MessageKind.DATA_PACKET);
      for (long[] a : new long[][] {{5, len}, {6, len}, {7, 1000}}) {
        sendRead(ep, lb, a[0], a[1]);
      }
      awaitCount(plugin::readsPreparedAhead, prepared + 1, "request 6 prepared while request 5 sends");
      ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.READ_STATUS, 6,
          BlockOps.readStatus(Status.ERROR), null));
      Thread.sleep(200); // the withdrawal reaches the plugin while 5 still cannot finish
      raw.release();
      expectWholeBlock(raw, 5, data);
      Message m = raw.next();
      assertEquals(7, m.requestId(), "nothing of the withdrawn request: " + m);
      assertEquals(MessageKind.READ_RESPONSE, m.kind(), m.toString());
      assertTrue(raw.next().packetHeader().getLastPacketInBlock());
    }
    long until = System.nanoTime() + 10_000_000_000L;
    while ((plugin.openConnections() > 0 || plugin.buffersOutstanding() > 0) && System.nanoTime() < until) {
      Thread.sleep(50);
    }
    assertEquals(0, plugin.buffersOutstanding(), "buffers still held by the DataNode");
  }

  private static void awaitCount(java.util.function.LongSupplier count, long atLeast, String what)
      throws InterruptedException {
    long until = System.nanoTime() + 20_000_000_000L;
    while (count.getAsLong() < atLeast && System.nanoTime() < until) {
      Thread.sleep(10);
    }
    assertTrue(count.getAsLong() >= atLeast, what + ": " + count.getAsLong() + " reads prepared ahead, want "
        + atLeast);
  }

  private static void sendRead(Endpoint ep, LocatedBlock lb, long id, long len) throws IOException {
    ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.READ_REQUEST, id,
        BlockOps.readBlock(lb.getBlock(), lb.getBlockToken(), "prepare-test", 0, len), null));
  }

  /**
   * READ_RESPONSE, then the whole block in packets in order, all of request {@code id}, each
   * but the last of the size that fits a 1 MiB buffer of the pool (1 MiB - 12 KiB of data).
   */
  private static void expectWholeBlock(RawPlugin raw, long id, byte[] data) throws Exception {
    Message resp = raw.next();
    assertEquals(MessageKind.READ_RESPONSE, resp.kind(), "request " + id + " answered first: " + resp);
    assertEquals(id, resp.requestId());
    int packet = (1 << 20) - (12 << 10);
    long at = 0;
    for (int k = 0; ; k++) {
      Message pkt = raw.next();
      assertEquals(MessageKind.DATA_PACKET, pkt.kind(), "request " + id + " packet " + k + ": " + pkt);
      assertEquals(id, pkt.requestId(), "no message of another request between a request's packets");
      PacketHeaderProto h = pkt.packetHeader();
      assertEquals(at, h.getOffsetInBlock());
      assertEquals(Math.min(packet, data.length - at), h.getDataLen(), "request " + id + " packet " + k);
      ByteBuffer body = pkt.payload();
      byte[] bytes = new byte[h.getDataLen()];
      body.position(body.limit() - bytes.length);
      body.get(bytes);
      assertArrayEquals(Arrays.copyOfRange(data, (int) at, (int) at + bytes.length), bytes,
          "request " + id + " packet " + k);
      at += bytes.length;
      assertEquals(at == data.length, h.getLastPacketInBlock());
      if (at == data.length) {
        return;
      }
    }
  }

  /** O_DIRECT bytes read on every volume of the cluster; with {@code packets}, those read into packets. */
  private long directBytes(boolean packets) {
    long n = 0;
    for (DataNode dn : cluster.getDataNodes()) {
      for (VolumeScheduler s : plugin(dn).disk().schedulers().values()) {
        VolumeStats.Snapshot st = s.stats().snapshot();
        n += packets ? st.directPacketBytes() : st.directBytes();
      }
    }
    return n;
  }
}
