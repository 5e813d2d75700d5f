package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.hdfsrdma.client.PluginCluster.awaitValue;
import static org.hdfsrdma.client.PluginCluster.writeShmSum;

import java.io.File;
import java.io.IOException;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.nativelib.NativeFiles;
import org.hdfsrdma.nativelib.NativeShm;
import org.hdfsrdma.protocol.WriteSegment;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Same-host writes by reference: three DataNodes on this host with block tokens on; the
 * client's connection to the first gets a write segment (its descriptor passed over the
 * domain socket with a one-time grant id), builds its packets in the segment's slots and sends
 * only their place; the DataNode copies each out, gives the slot back and writes, forwards and
 * acks the copy as any packet. Files are byte-identical, slots exhausted go by value, and every
 * segment, mapping and descriptor is gone once the connections close.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class ShmWriteTest {
  private static final int BLOCK = 4 << 20;

  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;

  @BeforeAll
  void start() throws Exception {
    Configuration conf = PluginCluster.baseConf();
    conf.setLong("dfs.blocksize", BLOCK);
    conf.setLong("hrdma.datanode.write.shm.map-timeout-ms", 2000); // a grant never fetched goes soon
    File base = new File("target/test-dir/" + getClass().getSimpleName());
    cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(3).build();
    cluster.waitActive();
    PluginCluster.awaitPluginsServing(cluster);
    stock = cluster.getFileSystem();
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(null, cluster);
  }

  private List<RdmaDataNodePlugin> plugins() {
    return RdmaDataNodePlugin.running();
  }

  /** Once the client is closed: no write segment on either side, no mapping, no descriptor. */
  private void awaitNothingHeld(long shm0, long fdMapped0, long fds0) throws InterruptedException {
    awaitValue(() -> writeShmSum(RdmaDataNodePlugin.WriteShmStats::segments), 0, "the DataNodes' write segments");
    awaitValue(() -> writeShmSum(RdmaDataNodePlugin.WriteShmStats::bytes), 0, "the DataNodes' write segment bytes");
    awaitValue(() -> writeShmSum(RdmaDataNodePlugin.WriteShmStats::pending), 0, "grants not fetched");
    awaitValue(() -> writeShmSum(RdmaDataNodePlugin.WriteShmStats::forwardSegments), 0, "the forwarders' segments");
    awaitValue(WriteSegment::live, 0, "senders' write segments");
    awaitValue(NativeShm::mappedBytes, shm0, "segments mapped by their DataNodes");
    awaitValue(NativeFiles::mappedBytes, fdMapped0, "segments mapped by their senders");
    awaitValue(NativeFiles::fdsHeld, fds0, "descriptors held");
    awaitValue(() -> plugins().stream().mapToLong(RdmaDataNodePlugin::buffersOutstanding).sum(), 0,
        "the DataNodes' transport buffers");
  }

  private byte[] readBack(Path p, int n) throws IOException {
    byte[] got = new byte[n];
    try (FSDataInputStream in = stock.open(p)) {
      in.readFully(got);
    }
    return got;
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 3})
  void writesGoByReferenceByteIdenticalAndLeaveNothingHeld(int replication) throws Exception {
    byte[] data = PluginCluster.random(2 * BLOCK + 54321, replication);
    Path p = new Path("/shmwrite/r" + replication);
    long shm0 = NativeShm.mappedBytes();
    long fdMapped0 = NativeFiles.mappedBytes();
    long fds0 = NativeFiles.fdsHeld();
    long refs0 = writeShmSum(RdmaDataNodePlugin.WriteShmStats::byReference);
    long granted0 = writeShmSum(RdmaDataNodePlugin.WriteShmStats::granted);
    long passed0 = writeShmSum(RdmaDataNodePlugin.WriteShmStats::passed);
    long forwarded0 = writeShmSum(RdmaDataNodePlugin.WriteShmStats::forwardedByReference);
    long bad0 = writeShmSum(RdmaDataNodePlugin.WriteShmStats::badReferences);
    try (RdmaDistributedFileSystem fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(),
        PluginCluster.rdmaClientConf(cluster))) {
      long before = fs.rdmaBytesWritten();
      try (FSDataOutputStream out = fs.create(p, true, 4096, (short) replication, BLOCK)) {
        out.write(data, 0, 1000);
        out.hflush(); // a partial chunk goes again in the next packet
        out.write(data, 1000, data.length - 1000);
      }
      assertEquals(data.length, fs.rdmaBytesWritten() - before, "every byte over hrdma");
      assertTrue(writeShmSum(RdmaDataNodePlugin.WriteShmStats::granted) > granted0, "a segment for the client");
      assertEquals(writeShmSum(RdmaDataNodePlugin.WriteShmStats::granted) - granted0,
          writeShmSum(RdmaDataNodePlugin.WriteShmStats::passed) - passed0, "every grant fetched once");
      // 1 MiB packets: at least one per MiB of data reached a DataNode by reference
      long refs = writeShmSum(RdmaDataNodePlugin.WriteShmStats::byReference) - refs0;
      assertTrue(refs >= replication * (data.length >> 20), "packets by reference: " + refs);
      // each DataNode but the last forwards by reference to the next, on this host; a packet that finds
      // none of the next one's slots free goes by value (WriteMirror.forwardByReference), so how many of
      // them do depends on how fast the next DataNode writes (13 of the 16 forwards once, in a full run)
      long forwarded = writeShmSum(RdmaDataNodePlugin.WriteShmStats::forwardedByReference) - forwarded0;
      assertTrue(forwarded >= replication - 1, "forwarded by reference: " + forwarded);
      assertEquals(bad0, writeShmSum(RdmaDataNodePlugin.WriteShmStats::badReferences), "no reference refused");
    }
    assertArrayEquals(data, readBack(p, data.length));
    assertEquals(replication, stock.getFileBlockLocations(p, 0, 1)[0].getHosts().length);
    awaitNothingHeld(shm0, fdMapped0, fds0);
  }

  @Test
  void offOnTheClientWritesByValue() throws Exception {
    byte[] data = PluginCluster.random(BLOCK + 777, 9);
    Path p = new Path("/shmwrite/off");
    long granted0 = writeShmSum(RdmaDataNodePlugin.WriteShmStats::granted);
    long refs0 = writeShmSum(RdmaDataNodePlugin.WriteShmStats::byReference);
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    c.setBoolean(RdmaBlockClient.SHM_WRITES_KEY, false);
    try (RdmaDistributedFileSystem fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c)) {
      try (FSDataOutputStream out = fs.create(p, true, 4096, (short) 1, BLOCK)) {
        out.write(data);
      }
    }
    assertArrayEquals(data, readBack(p, data.length));
    assertEquals(granted0, writeShmSum(RdmaDataNodePlugin.WriteShmStats::granted), "no segment asked for");
    assertEquals(refs0, writeShmSum(RdmaDataNodePlugin.WriteShmStats::byReference), "nothing by reference");
  }

  @Test
  void noFreeSlotGoesByValue() throws Exception {
    byte[] data = PluginCluster.random(BLOCK, 11);
    Path p = new Path("/shmwrite/exhausted");
    long shm0 = NativeShm.mappedBytes();
    long fdMapped0 = NativeFiles.mappedBytes();
    long fds0 = NativeFiles.fdsHeld();
    try (RdmaDistributedFileSystem fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(),
        PluginCluster.rdmaClientConf(cluster))) {
      try (FSDataOutputStream out = fs.create(p, true, 4096, (short) 1, BLOCK)) {
        out.write(data, 0, 4096);
        out.hflush(); // the pipeline and its segment are set up
        DataNodeConnection conn = connectionWithSegment(fs);
        WriteSegment seg = conn.writeSegment();
        // hold every slot as a packet being built would: the next packets find none free
        List<org.hdfsrdma.transport.RegisteredBuffer> held = new java.util.ArrayList<>();
        while (true) {
          int before = seg.slotsHeld();
          org.hdfsrdma.transport.RegisteredBuffer b = seg.allocate(seg.slotBytes());
          if (seg.slotsHeld() == before) { // from the transport: no slot left
            b.release();
            break;
          }
          held.add(b);
        }
        assertTrue(held.size() >= 1, "slots to hold");
        long byValue0 = seg.byValue();
        long byRef0 = seg.byReference();
        out.write(data, 4096, data.length - 4096);
        out.hflush();
        assertTrue(seg.byValue() > byValue0, "packets by value while no slot is free");
        assertEquals(byRef0, seg.byReference(), "none by reference");
        held.forEach(org.hdfsrdma.transport.RegisteredBuffer::release);
      }
    }
    assertArrayEquals(data, readBack(p, data.length));
    awaitNothingHeld(shm0, fdMapped0, fds0);
  }

  @Test
  void aConnectionThatClosesUnderAWriterIsRecoveredAndLeavesNothingHeld() throws Exception {
    byte[] data = PluginCluster.random(2 * BLOCK, 21);
    Path p = new Path("/shmwrite/closed");
    long shm0 = NativeShm.mappedBytes();
    long fdMapped0 = NativeFiles.mappedBytes();
    long fds0 = NativeFiles.fdsHeld();
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    // three DataNodes, all in the pipeline: the write goes on with the two left, none to add
    c.setBoolean("dfs.client.block.write.replace-datanode-on-failure.enable", false);
    try (RdmaDistributedFileSystem fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c)) {
      long recoveries0 = fs.pipelineRecoveries();
      try (FSDataOutputStream out = fs.create(p, true, 4096, (short) 3, BLOCK)) {
        out.write(data, 0, BLOCK / 2);
        out.hflush();
        DataNodeConnection conn = connectionWithSegment(fs);
        WriteSegment seg = conn.writeSegment();
        conn.close(); // as if the DataNode or the link died: its segment goes, the pipeline is recovered
        awaitValue(() -> seg.isClosed() ? 1 : 0, 1, "the client's segment closed with its connection");
        out.write(data, BLOCK / 2, data.length - BLOCK / 2);
      }
      assertTrue(fs.pipelineRecoveries() > recoveries0, "the pipeline was recovered");
    }
    assertArrayEquals(data, readBack(p, data.length));
    awaitNothingHeld(shm0, fdMapped0, fds0);
  }

  private static DataNodeConnection connectionWithSegment(RdmaDistributedFileSystem fs) throws IOException {
    DataNodeConnection c = fs.blockClient().connections().stream().filter(x -> x.writeSegment() != null)
        .findFirst().orElse(null);
    assertNotNull(c, "a connection with a write segment");
    return c;
  }

  @Test
  void anUnknownGrantIdGetsNoDescriptor() throws Exception {
    long fds0 = NativeFiles.fdsHeld();
    org.apache.hadoop.hdfs.server.datanode.DataNode dn = cluster.getDataNodes().get(0);
    RdmaDataNodePlugin plugin = plugins().stream().filter(x -> dn.getDatanodeUuid().equals(x.datanodeUuid()))
        .findFirst().orElseThrow();
    long passed0 = plugin.writeShm().passed();
    org.hdfsrdma.protocol.SegmentFetch.Request r = new org.hdfsrdma.protocol.SegmentFetch.Request(
        org.hdfsrdma.protocol.ShortCircuitSocket.path(cluster.getConfiguration(0), dn.getXferPort()), true,
        new org.apache.hadoop.hdfs.protocol.ExtendedBlock("bp", 1), null, 5000);
    IOException e = org.junit.jupiter.api.Assertions.assertThrows(IOException.class,
        () -> org.hdfsrdma.protocol.SegmentFetch.fetch(r, new byte[16]));
    assertTrue(e.getMessage().contains("ERROR_ACCESS_TOKEN"), e.getMessage());
    assertEquals(passed0, plugin.writeShm().passed());
    assertEquals(fds0, NativeFiles.fdsHeld());
  }

  // ------------------------------------------------------------------ a hostile sender

  private RdmaDataNodePlugin plugin0() {
    org.apache.hadoop.hdfs.server.datanode.DataNode dn = cluster.getDataNodes().get(0);
    return plugins().stream().filter(x -> dn.getDatanodeUuid().equals(x.datanodeUuid())).findFirst().orElseThrow();
  }

  private java.net.InetSocketAddress plugin0Address() {
    org.apache.hadoop.hdfs.server.datanode.DataNode dn = cluster.getDataNodes().get(0);
    return new java.net.InetSocketAddress("127.0.0.1",
        org.hdfsrdma.protocol.RdmaPorts.pluginPort(dn.getXferPort(), cluster.getConfiguration(0)));
  }

  /** A WRITE token of a block of the cluster's pool (none is written: the segment needs only the token). */
  private org.apache.hadoop.security.token.Token<org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier>
      writeToken(org.apache.hadoop.hdfs.protocol.ExtendedBlock b) throws IOException {
    return cluster.getNamesystem().getBlockManager().getBlockTokenSecretManager().generateToken(b,
        java.util.EnumSet.of(org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier.AccessMode.WRITE),
        new org.apache.hadoop.fs.StorageType[0], new String[0]);
  }

  private org.apache.hadoop.hdfs.protocol.ExtendedBlock poolBlock() {
    return new org.apache.hadoop.hdfs.protocol.ExtendedBlock(cluster.getNamesystem().getBlockPoolId(), 4242);
  }

  /** Asks for a segment on {@code raw}: the answer (WRITE_SHM_GRANT or ERROR). */
  private org.hdfsrdma.protocol.Message ask(RawPlugin raw, org.apache.hadoop.hdfs.protocol.ExtendedBlock b,
      org.apache.hadoop.security.token.Token<org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier> t)
      throws Exception {
    raw.ep.send(org.hdfsrdma.protocol.MessageCodec.encode(raw.ep.transport().allocator(),
        org.hdfsrdma.protocol.MessageKind.WRITE_SHM_REQUEST, 1, WriteSegment.request(b, t)));
    return raw.next();
  }

  private org.hdfsrdma.protocol.SegmentFetch.Request fetchRequest(org.apache.hadoop.hdfs.protocol.ExtendedBlock b) {
    return new org.hdfsrdma.protocol.SegmentFetch.Request(org.hdfsrdma.protocol.ShortCircuitSocket.path(
        cluster.getConfiguration(0), cluster.getDataNodes().get(0).getXferPort()), true, b, null, 5000);
  }

  @Test
  void aGrantIsOneTimeOnlyTheTokenGetsOneAndAnUnfetchedOneIsFreed() throws Exception {
    RdmaDataNodePlugin plugin = plugin0();
    long fds0 = NativeFiles.fdsHeld();
    long timeouts0 = plugin.writeShm().mapTimeouts();
    long refused0 = plugin.writeShm().refused();
    org.apache.hadoop.hdfs.protocol.ExtendedBlock b = poolBlock();
    NativeFiles.Mapping kept = null;
    try (RawPlugin raw = new RawPlugin(plugin0Address())) {
      org.hdfsrdma.protocol.Message m = ask(raw, b, null); // tokens are on here: none is refused
      assertEquals(org.hdfsrdma.protocol.MessageKind.ERROR, m.kind());
      assertEquals(org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status.ERROR_ACCESS_TOKEN,
          m.error().getStatus());
      assertEquals(refused0 + 1, plugin.writeShm().refused());
    }
    try (RawPlugin raw = new RawPlugin(plugin0Address())) {
      org.hdfsrdma.protocol.Message m = ask(raw, b, writeToken(b));
      assertEquals(org.hdfsrdma.protocol.MessageKind.WRITE_SHM_GRANT, m.kind());
      byte[] id = m.writeShmGrant().getGrant().toByteArray();
      try (NativeFiles.Fd fd = org.hdfsrdma.protocol.SegmentFetch.fetch(fetchRequest(b), id)) {
        assertEquals(m.writeShmGrant().getBytes(), fd.size());
        kept = fd.mapShared(m.writeShmGrant().getBytes()); // a sender that keeps it past its connection
      }
      kept.buffer().put(0, (byte) 7);
      IOException again = org.junit.jupiter.api.Assertions.assertThrows(IOException.class,
          () -> org.hdfsrdma.protocol.SegmentFetch.fetch(fetchRequest(b), id));
      assertTrue(again.getMessage().contains("ERROR_ACCESS_TOKEN"), again.getMessage());
      assertEquals(fds0, NativeFiles.fdsHeld());
    }
    awaitValue(() -> plugin.writeShm().segments(), 0, "the segment goes with its connection");
    assertEquals(0, kept.buffer().get(0), "its memory freed by the DataNode: the kept mapping reads zeros");
    kept.close();
    try (RawPlugin raw = new RawPlugin(plugin0Address())) {
      assertEquals(org.hdfsrdma.protocol.MessageKind.WRITE_SHM_GRANT, ask(raw, b, writeToken(b)).kind());
      assertEquals(1, plugin.writeShm().pending());
      // never fetched: freed by the map timeout while the connection stays open
      awaitValue(() -> plugin.writeShm().mapTimeouts(), timeouts0 + 1, "the map timeout");
      assertEquals(0, plugin.writeShm().pending());
      assertEquals(0, plugin.writeShm().segments());
    }
  }

  /** What a hostile sender puts in the segment's first slot before naming it; returns the message's buffer. */
  interface Fill {
    org.hdfsrdma.transport.RegisteredBuffer into(WriteSegment seg) throws Exception;
  }

  /** A WRITE_REF a hostile sender could send, and what is wrong with it. */
  record BadRef(String what, long offset, int length, Fill fill) {
    @Override
    public String toString() {
      return what;
    }
  }

  static java.util.stream.Stream<BadRef> badReferences() {
    int slot = org.hdfsrdma.datanode.HrdmaDataNodeKeys.WRITE_SHM_SLOT_BYTES_DEFAULT;
    int slots = org.hdfsrdma.datanode.HrdmaDataNodeKeys.WRITE_SHM_SLOTS_DEFAULT;
    return java.util.stream.Stream.of(
        new BadRef("not at a slot's start", 1, 100, null),
        new BadRef("past the last slot", (long) slot * slots, 100, null),
        new BadRef("far past the end", Long.MAX_VALUE - 7, 100, null),
        new BadRef("a negative offset", -slot, 100, null),
        new BadRef("longer than a slot", 0, slot + 1, null),
        new BadRef("a length above 2^31", 0, -5, null),
        new BadRef("shorter than a message", 0, 3, null),
        new BadRef("zeros, not a message", 0, 4096, null),
        new BadRef("a packet of another request", 0, 0, seg -> org.hdfsrdma.protocol.MessageCodec.finish(
            org.hdfsrdma.protocol.MessageCodec.begin(seg, org.hdfsrdma.protocol.MessageKind.DATA_PACKET, 99,
                org.hdfsrdma.protocol.BlockOps.heartbeatHeader(), 0))),
        new BadRef("not a DATA_PACKET", 0, 0, seg -> org.hdfsrdma.protocol.MessageCodec.encode(seg,
            org.hdfsrdma.protocol.MessageKind.INFO_REQUEST, 1, null)));
  }

  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.MethodSource("badReferences")
  void aMalformedReferenceClosesTheConnectionAndFreesTheSegment(BadRef bad) throws Exception {
    RdmaDataNodePlugin plugin = plugin0();
    long bad0 = plugin.writeShm().badReferences();
    long refs0 = plugin.writeShm().byReference();
    long fdMapped0 = NativeFiles.mappedBytes();
    org.apache.hadoop.hdfs.protocol.ExtendedBlock b = poolBlock();
    try (RawPlugin raw = new RawPlugin(plugin0Address())) {
      org.hdfsrdma.protocol.Message g = ask(raw, b, writeToken(b));
      assertEquals(org.hdfsrdma.protocol.MessageKind.WRITE_SHM_GRANT, g.kind());
      WriteSegment seg = WriteSegment.open(g.writeShmGrant(), fetchRequest(b), raw.ep.transport().allocator());
      org.hdfsrdma.transport.RegisteredBuffer held = null;
      try {
        int length = bad.length();
        if (bad.fill() != null) {
          held = bad.fill().into(seg);
          assertEquals(1, seg.slotsHeld(), "built in the first slot");
          length = held.readableBytes();
        }
        raw.ep.send(org.hdfsrdma.protocol.MessageCodec.encode(raw.ep.transport().allocator(),
            org.hdfsrdma.protocol.MessageKind.WRITE_REF, 1, org.hdfsrdma.proto.HrdmaProtos.ShmRef.newBuilder()
                .setOffset(bad.offset()).setLength(length).build()));
        raw.ep.closeFuture().get(20, java.util.concurrent.TimeUnit.SECONDS); // the DataNode closes it
      } finally {
        if (held != null) {
          held.release();
        }
        seg.close();
      }
    }
    assertEquals(bad0 + 1, plugin.writeShm().badReferences(), "refused as malformed");
    assertEquals(refs0, plugin.writeShm().byReference(), "nothing taken as a packet");
    awaitValue(() -> plugin.writeShm().segments(), 0, "the segment goes with the connection");
    awaitValue(NativeFiles::mappedBytes, fdMapped0, "the sender's mapping");
  }

  @Test
  void aReferenceWithoutASegmentClosesTheConnection() throws Exception {
    RdmaDataNodePlugin plugin = plugin0();
    long bad0 = plugin.writeShm().badReferences();
    try (RawPlugin raw = new RawPlugin(plugin0Address())) {
      raw.ep.send(org.hdfsrdma.protocol.MessageCodec.encode(raw.ep.transport().allocator(),
          org.hdfsrdma.protocol.MessageKind.WRITE_REF, 1, org.hdfsrdma.proto.HrdmaProtos.ShmRef.newBuilder()
              .setOffset(0).setLength(100).build()));
      raw.ep.closeFuture().get(20, java.util.concurrent.TimeUnit.SECONDS);
    }
    assertEquals(bad0 + 1, plugin.writeShm().badReferences());
  }
}
