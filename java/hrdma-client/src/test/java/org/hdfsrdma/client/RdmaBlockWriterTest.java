package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.EnumSet;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileChecksum;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.ClientProtocol;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.HdfsFileStatus;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.security.token.block.InvalidBlockTokenException;
import org.apache.hadoop.hdfs.server.namenode.TestFsck;
import org.apache.hadoop.io.EnumSetWritable;
import org.apache.hadoop.security.token.Token;
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
 * The block write path end to end: blocks allocated at the NameNode
 * (create/addBlock/complete through ClientProtocol), written through
 * {@link RdmaBlockWriter} into a MiniDFSCluster of three DataNodes with the
 * plugin (block tokens on, 1 MiB blocks), then read, checksummed and fsck'd
 * by the stock client. One cluster for the class; the last test checks that
 * nothing leaked.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(180)
class RdmaBlockWriterTest {
  private static final int BLOCK = PluginCluster.BLOCK;
  private static final int BPC = PluginCluster.BPC;

  private MiniDFSCluster cluster;
  private Configuration conf;
  private DistributedFileSystem fs;
  private RdmaBlockClient client;

  @BeforeAll
  void start() throws Exception {
    conf = PluginCluster.baseConf();
    cluster = PluginCluster.start(conf, getClass(), 3);
    fs = cluster.getFileSystem();
    client = new RdmaBlockClient(conf);
  }

  @AfterAll
  void stop() {
    if (client != null) {
      client.close();
    }
    if (cluster != null) {
      cluster.shutdown();
    }
  }

  private ClientProtocol nn() {
    return fs.getClient().getNamenode();
  }

  private String clientName() {
    return fs.getClient().getClientName();
  }

  private HdfsFileStatus create(String path, int replication) throws IOException {
    return nn().create(path, FsPermission.getFileDefault(), clientName(),
        new EnumSetWritable<>(EnumSet.of(CreateFlag.CREATE, CreateFlag.OVERWRITE)), true, (short) replication,
        BLOCK, org.apache.hadoop.crypto.CryptoProtocolVersion.supported(), null, null);
  }

  private LocatedBlock addBlock(String path, HdfsFileStatus st) throws IOException {
    return nn().addBlock(path, clientName(), null, null, st.getFileId(), null, null);
  }

  /** complete() until the NameNode has heard of enough replicas (as the stock client retries). */
  private void complete(String path, HdfsFileStatus st, ExtendedBlock last) throws Exception {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!nn().complete(path, clientName(), last, st.getFileId())) {
      assertTrue(System.nanoTime() < end, "complete(" + path + ") did not succeed");
      Thread.sleep(50);
    }
  }

  /** Writes {@code data} (at most one block) through our path into a new file. */
  private void writeOurs(String path, byte[] data, int replication) throws Exception {
    HdfsFileStatus st = create(path, replication);
    LocatedBlock lb = addBlock(path, st);
    assertEquals(replication, lb.getLocations().length);
    RdmaBlockWriter w = RdmaBlockWriter.create(client, lb, conf);
    // uneven application writes
    Random rnd = new Random(data.length);
    int off = 0;
    while (off < data.length) {
      int n = Math.min(data.length - off, 1 + rnd.nextInt(100_000));
      w.write(data, off, n);
      off += n;
    }
    w.close();
    assertEquals(data.length, w.bytesAcked());
    assertEquals(data.length, w.block().getNumBytes());
    complete(path, st, w.block());
  }

  /**
   * The block's numBytes in a WRITE_REQUEST is the file's block size, what the dataset creates
   * the replica with and reserves, as stock's DataXceiver passes it on: a claim of 1 PiB (sent
   * raw) that no volume has room for is refused with the dataset's out-of-space error, as stock
   * refuses it, and reserves nothing.
   */
  @Test
  @Timeout(120)
  void aHugeClaimedBlockSizeIsRefusedAndReservesNothing() throws Exception {
    String path = "/ours/huge-claim";
    HdfsFileStatus st = create(path, 1);
    LocatedBlock lb = addBlock(path, st);
    org.apache.hadoop.hdfs.protocol.ExtendedBlock claimed = new org.apache.hadoop.hdfs.protocol.ExtendedBlock(
        lb.getBlock());
    claimed.setNumBytes(1L << 50);
    org.apache.hadoop.hdfs.protocol.DatanodeInfo target = lb.getLocations()[0];
    org.apache.hadoop.hdfs.server.datanode.DataNode dn = cluster.getDataNode(target.getIpcPort());
    long before = reservedOn(dn);
    try (RawPlugin raw = new RawPlugin(new java.net.InetSocketAddress(target.getIpAddr(),
        org.hdfsrdma.protocol.RdmaPorts.pluginPort(target, conf)))) {
      raw.ep.send(org.hdfsrdma.protocol.MessageCodec.encode(raw.ep.transport().allocator(),
          org.hdfsrdma.protocol.MessageKind.WRITE_REQUEST, 1, org.hdfsrdma.protocol.BlockOps.writeBlock(claimed,
              lb.getBlockToken(), clientName(), lb.getLocations(), lb.getStorageTypes(), lb.getStorageIDs(),
              org.apache.hadoop.util.DataChecksum.newDataChecksum(org.apache.hadoop.util.DataChecksum.Type.CRC32C,
                  BPC)), null));
      org.hdfsrdma.protocol.Message m = raw.next();
      assertEquals(org.hdfsrdma.protocol.MessageKind.WRITE_RESPONSE, m.kind());
      assertEquals(org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status.ERROR,
          m.writeResponse().getStatus(), m.writeResponse().getMessage());
      assertTrue(m.writeResponse().getMessage().contains("Out of space"), m.writeResponse().getMessage());
      assertEquals(before, reservedOn(dn), "reserved for a refused replica");
    }
  }

  private static long reservedOn(org.apache.hadoop.hdfs.server.datanode.DataNode dn) throws IOException {
    long reserved = 0;
    try (org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi.FsVolumeReferences vols =
        dn.getFSDataset().getFsVolumeReferences()) {
      for (org.apache.hadoop.hdfs.server.datanode.fsdataset.FsVolumeSpi v : vols) {
        reserved += ((org.apache.hadoop.hdfs.server.datanode.fsdataset.impl.FsVolumeImpl) v).getReservedForReplicas();
      }
    }
    return reserved;
  }

  private void writeStock(String path, byte[] data, int replication) throws IOException {
    try (FSDataOutputStream out = fs.create(new Path(path), true, 4096, (short) replication, BLOCK)) {
      out.write(data);
    }
  }

  @Test
  @Order(1)
  void writtenBlocksAreStockBlocks() throws Exception {
    int[] sizes = {1, BPC + 1, BLOCK - 1, BLOCK};
    for (int replication : new int[] {1, 3}) {
      for (int size : sizes) {
        String ours = "/w/r" + replication + "-" + size;
        String stock = "/s/r" + replication + "-" + size;
        byte[] data = PluginCluster.random(size, size * 17L + replication);
        long t0 = System.nanoTime();
        writeOurs(ours, data, replication);
        long t1 = System.nanoTime();
        writeStock(stock, data, replication);
        long t2 = System.nanoTime();
        System.err.printf("hrdma test: %d bytes at replication %d: ours %.1f ms, stock %.1f ms%n", size,
            replication, (t1 - t0) / 1e6, (t2 - t1) / 1e6);
        DFSTestUtil.waitReplication(fs, new Path(ours), (short) replication);
        assertArrayEquals(data, PluginCluster.readWhole(fs, new Path(ours)), ours);
        FileChecksum a = fs.getFileChecksum(new Path(ours));
        FileChecksum b = fs.getFileChecksum(new Path(stock));
        assertEquals(b, a, "file checksum of " + ours + " vs the stock-written " + stock);
        List<LocatedBlock> blocks = fs.getClient().getLocatedBlocks(ours, 0).getLocatedBlocks();
        assertEquals(1, blocks.size());
        assertEquals(replication, blocks.get(0).getLocations().length);
        assertEquals(size, blocks.get(0).getBlockSize());
      }
    }
    String fsck = TestFsck.runFsck(conf, 0, true, "/w", "-files", "-blocks", "-locations");
    assertTrue(fsck.contains("HEALTHY"), fsck);
    assertTrue(fsck.contains("Total blocks (validated):\t8"), fsck);
    // replication 3 files sit on all three DataNodes
    for (LocatedBlock lb : fs.getClient().getLocatedBlocks("/w/r3-" + BLOCK, 0).getLocatedBlocks()) {
      assertEquals(3, java.util.Arrays.stream(lb.getLocations()).map(DatanodeInfo::getDatanodeUuid).distinct()
          .count());
    }
  }

  @Test
  @Order(2)
  void aCorruptedPacketIsAnErrorAckNamingTheDataNode() throws Exception {
    String path = "/bad/corrupt";
    HdfsFileStatus st = create(path, 3);
    LocatedBlock lb = addBlock(path, st);
    RdmaBlockWriter w = RdmaBlockWriter.create(client, lb, conf);
    byte[] data = PluginCluster.random(200_000, 3);
    w.write(data, 0, 70_000); // first packet good
    w.corruptNextPacketForTesting();
    IOException e = assertThrows(IOException.class, () -> {
      w.write(data, 70_000, 130_000);
      w.close();
    });
    System.err.println("hrdma test: corrupted packet -> " + e.getMessage());
    // as stock: only the last DataNode verifies; the node before it, which passed the packet on
    // unverified, leaves the pipeline (its upstream reports it failed), not the one that checked
    assertTrue(e.getMessage().contains("Bad response ERROR "), e.getMessage());
    int bad = w.badNodeIndex();
    assertEquals(1, bad, "bad node " + bad);
    assertTrue(e.getMessage().contains(lb.getLocations()[bad].getXferAddr()), e.getMessage());
    assertTrue(w.bytesAcked() <= 65536, "acked " + w.bytesAcked());
    w.close(); // idempotent
    assertFalse(fs.isFileClosed(new Path(path)), "the file must not be completed");
    eventually(() -> RdmaDataNodePlugin.running().stream().allMatch(p -> p.openWrites() == 0),
        () -> "writes still open at the DataNodes");
    // the connection and the plugins keep serving
    writeOurs("/bad/after", PluginCluster.random(5000, 4), 3);
    assertArrayEquals(PluginCluster.random(5000, 4), PluginCluster.readWhole(fs, new Path("/bad/after")));
  }

  @Test
  @Order(3)
  void aBadBlockTokenIsRefusedAsStockRefusesIt() throws Exception {
    String path = "/bad/token";
    HdfsFileStatus st = create(path, 3);
    LocatedBlock lb = addBlock(path, st);
    Token<BlockTokenIdentifier> good = lb.getBlockToken();
    byte[] pw = good.getPassword().clone();
    pw[0] ^= 1;
    lb.setBlockToken(new Token<>(good.getIdentifier(), pw, good.getKind(), good.getService()));
    InvalidBlockTokenException e = assertThrows(InvalidBlockTokenException.class,
        () -> RdmaBlockWriter.create(client, lb, conf));
    System.err.println("hrdma test: bad token -> " + e.getMessage());
    assertTrue(e.getMessage().startsWith("Got access token error, status message "), e.getMessage());
    assertTrue(e.getMessage().endsWith("ack with firstBadLink as " + lb.getLocations()[0].getXferAddr()),
        e.getMessage());
    assertTrue(e.getMessage().contains("Block token verification failed: op=WRITE_BLOCK"), e.getMessage());
    eventually(() -> RdmaDataNodePlugin.running().stream().allMatch(p -> p.openWrites() == 0),
        () -> "writes still open at the DataNodes");
  }

  @Test
  @Order(99)
  void nothingLeaks() throws Exception {
    eventually(() -> client.buffersOutstanding() == 0, () -> client.buffersOutstanding() + " client buffers");
    client.closeConnections();
    eventually(() -> client.openConnections() == 0 && client.buffersOutstanding() == 0,
        () -> client.openConnections() + " connections, " + client.buffersOutstanding() + " buffers");
    for (RdmaDataNodePlugin p : RdmaDataNodePlugin.running()) {
      eventually(() -> p.openConnections() == 0 && p.buffersOutstanding() == 0 && p.openWrites() == 0,
          () -> p + ": " + p.openConnections() + " connections, " + p.buffersOutstanding() + " buffers, "
              + p.openWrites() + " writes");
    }
  }

  private static void eventually(java.util.function.BooleanSupplier ok, java.util.function.Supplier<String> what)
      throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!ok.getAsBoolean()) {
      if (System.nanoTime() > end) {
        throw new AssertionError("still: " + what.get());
      }
      Thread.sleep(20);
    }
  }
}
