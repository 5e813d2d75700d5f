package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.EOFException;
import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.protocol.RdmaPorts;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * {@link RdmaDistributedFileSystem} as {@code fs.hdfs.impl} on a MiniDFSCluster
 * of three DataNodes with the plugin (block tokens on, 1 MiB blocks): files
 * written by the stock client read back byte-identical through every read
 * call, over our transport; fallback to the stock path; a corrupt replica.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(120)
class RdmaDistributedFileSystemTest {
  private static final int BLOCK = PluginCluster.BLOCK;
  private static final int BPC = PluginCluster.BPC;

  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private Configuration clientConf;
  private RdmaDistributedFileSystem fs;

  @BeforeAll
  void start() throws Exception {
    Configuration conf = PluginCluster.baseConf();
    cluster = PluginCluster.start(conf, getClass(), 3);
    stock = cluster.getFileSystem();
    clientConf = PluginCluster.rdmaClientConf(cluster);
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), clientConf);
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  private byte[] write(String name, byte[] data, int replication) throws Exception {
    Path p = new Path(name);
    try (FSDataOutputStream out = stock.create(p, true, 4096, (short) replication, BLOCK)) {
      out.write(data);
    }
    if (data.length > 0) {
      DFSTestUtil.waitReplication(stock, p, (short) replication);
    }
    return data;
  }

  @Test
  @Order(1)
  void fsHdfsImplGivesOurClassWhichIsADistributedFileSystem() throws Exception {
    try (FileSystem f = FileSystem.get(cluster.getURI(), clientConf)) {
      assertInstanceOf(RdmaDistributedFileSystem.class, f);
      assertInstanceOf(DistributedFileSystem.class, f);
    }
  }

  @Test
  @Order(2)
  void stockWrittenFilesReadBackByteIdenticalThroughEveryCall() throws Exception {
    int[] sizes = {0, 1, BPC - 1, BPC + 1, BLOCK - 1, BLOCK + 1, 3 * BLOCK + 100};
    Random rnd = new Random(7);
    for (int replication : new int[] {1, 3}) {
      for (int size : sizes) {
        String name = "/sizes/r" + replication + "-" + size;
        Path p = new Path(name);
        byte[] data = write(name, PluginCluster.random(size, size * 31L + replication), replication);
        String what = name;
        // read(byte[]) with odd chunk sizes
        try (FSDataInputStream in = fs.open(p)) {
          assertInstanceOf(RdmaInputStream.class, in.getWrappedStream(), what);
          assertEquals(size, in.available(), what);
          byte[] got = new byte[size];
          int off = 0;
          while (off < size) {
            int n = in.read(got, off, Math.min(size - off, 1 + rnd.nextInt(200_000)));
            assertTrue(n > 0, what + " at " + off);
            off += n;
          }
          assertEquals(-1, in.read(), what);
          assertEquals(-1, in.read(new byte[10], 0, 10), what);
          assertArrayEquals(data, got, what);
        }
        // read(ByteBuffer), direct
        try (FSDataInputStream in = fs.open(p)) {
          ByteBuffer bb = ByteBuffer.allocateDirect(size);
          while (bb.hasRemaining()) {
            assertTrue(in.read(bb) > 0, what);
          }
          bb.flip();
          byte[] got = new byte[size];
          bb.get(got);
          assertArrayEquals(data, got, what);
          assertEquals(-1, in.read(ByteBuffer.allocate(4)), what);
        }
        if (size == 0) {
          continue;
        }
        try (FSDataInputStream in = fs.open(p)) {
          // positional reads at random offsets, the position stays
          in.seek(size / 2);
          for (int i = 0; i < 10; i++) {
            int at = rnd.nextInt(size);
            int len = Math.min(size - at, rnd.nextInt(3 * BPC + 1));
            byte[] got = new byte[len];
            in.readFully(at, got, 0, len);
            assertArrayEquals(Arrays.copyOfRange(data, at, at + len), got, what + " pread " + at);
            ByteBuffer bb = ByteBuffer.allocate(len);
            in.readFully(at, bb);
            assertArrayEquals(Arrays.copyOfRange(data, at, at + len), bb.array(), what + " pread(bb) " + at);
            assertEquals(size / 2, in.getPos(), what);
          }
          assertEquals(-1, in.read(size, new byte[1], 0, 1), what);
          assertThrows(EOFException.class, () -> in.readFully(size - 1, new byte[2], 0, 2), what);
          // seek back and forth
          for (int i = 0; i < 10; i++) {
            int at = rnd.nextInt(size);
            in.seek(at);
            assertEquals(at, in.getPos());
            int len = Math.min(size - at, 1 + rnd.nextInt(2000));
            byte[] got = new byte[len];
            in.readFully(got);
            assertArrayEquals(Arrays.copyOfRange(data, at, at + len), got, what + " seek " + at);
          }
          // skip
          in.seek(0);
          int skip = size / 3;
          assertEquals(skip, in.skip(skip), what);
          assertEquals(skip, in.getPos());
          if (skip < size) {
            assertEquals(data[skip] & 0xff, in.read(), what + " after skip");
          }
          assertThrows(EOFException.class, () -> in.seek(size + 1L), what);
        }
        assertEquals(stock.getFileChecksum(p), fs.getFileChecksum(p), what);
      }
    }
    assertTrue(fs.rdmaBytesRead() > 0, "bytes over hrdma " + fs.rdmaBytesRead());
    assertEquals(0, fs.stockFallbacks(), "stock fallbacks");
    assertEquals(0, fs.stockBytesRead());
    System.err.println("hrdma test: " + fs.rdmaBytesRead() + " bytes read over hrdma");
  }

  @Test
  @Order(3)
  void sequentialReadsOpenTheNextBlockAhead() throws Exception {
    byte[] data = write("/ahead/file", PluginCluster.random(3 * BLOCK + 5, 3), 1);
    try (FSDataInputStream in = fs.open(new Path("/ahead/file"))) {
      RdmaInputStream s = (RdmaInputStream) in.getWrappedStream();
      byte[] got = new byte[data.length];
      in.readFully(got, 0, 100_000);
      assertTrue(s.readingAhead(), "next block's reader opened while reading the first");
      in.readFully(got, 100_000, data.length - 100_000);
      assertArrayEquals(data, got);
      assertTrue(in.hasCapability(StreamCapabilities.UNBUFFER));
      in.unbuffer();
      assertFalse(s.readingAhead());
      in.seek(10);
      byte[] again = new byte[10];
      in.readFully(again);
      assertArrayEquals(Arrays.copyOfRange(data, 10, 20), again, "reads go on after unbuffer");
    }
  }

  @Test
  @Order(4)
  void closedStreamRefusesReads() throws Exception {
    write("/closed/file", PluginCluster.random(1000, 4), 1);
    FSDataInputStream in = fs.open(new Path("/closed/file"));
    in.close();
    in.close();
    assertThrows(IOException.class, () -> in.read());
    assertThrows(IOException.class, () -> in.read(0, new byte[1], 0, 1));
  }

  @Test
  @Order(5)
  void dataNodesWithoutThePluginAreReadThroughTheStockPath() throws Exception {
    byte[] a = write("/fallback/a", PluginCluster.random(3 * BLOCK + 100, 21), 3);
    byte[] b = write("/fallback/b", PluginCluster.random(BLOCK + 1, 22), 1);
    int closed;
    try (ServerSocket s = new ServerSocket(0)) {
      closed = s.getLocalPort();
    }
    Configuration c = new Configuration(clientConf);
    c.setInt(RdmaPorts.PORT_KEY, closed); // no plugin listens there
    try (RdmaDistributedFileSystem wrong = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c)) {
      for (int round = 0; round < 2; round++) {
        for (String name : new String[] {"/fallback/a", "/fallback/b"}) {
          byte[] want = name.endsWith("a") ? a : b;
          try (FSDataInputStream in = wrong.open(new Path(name))) {
            byte[] got = new byte[want.length];
            in.readFully(got);
            assertArrayEquals(want, got, name);
            byte[] part = new byte[Math.min(1000, want.length - (BLOCK - 500))];
            in.readFully(BLOCK - 500, part, 0, part.length);
            assertArrayEquals(Arrays.copyOfRange(want, BLOCK - 500, BLOCK - 500 + part.length), part,
                name + " pread");
          }
        }
      }
      assertEquals(3, wrong.stockFallbacks(), "once per DataNode");
      assertEquals(0, wrong.rdmaBytesRead());
      assertTrue(wrong.stockBytesRead() >= 2L * (a.length + b.length), "" + wrong.stockBytesRead());
    }
  }

  @Test
  @Order(6)
  void aCorruptReplicaIsReadFromAnotherAndReportedToTheNameNode() throws Exception {
    byte[] data = write("/corrupt/r3", PluginCluster.random(2 * BLOCK, 31), 3);
    Path p = new Path("/corrupt/r3");
    LocatedBlock lb = stock.getClient().getLocatedBlocks("/corrupt/r3", 0).get(0);
    DatanodeInfo victim = lb.getLocations()[0];
    long flipAt = 4096 + 17;
    flip(victim, lb, flipAt);
    long errors0 = fs.checksumErrors();
    // the NameNode orders equally distant replicas at random: read until the bad one was tried
    for (int i = 0; i < 40 && fs.checksumErrors() == errors0; i++) {
      try (FSDataInputStream in = fs.open(p)) {
        byte[] got = new byte[8192];
        in.readFully(0, got, 0, got.length);
        assertArrayEquals(Arrays.copyOf(data, got.length), got);
      }
    }
    assertTrue(fs.checksumErrors() > errors0, "the corrupt replica was never tried");
    assertTrue(fs.badReplicasReported() >= 1);
    // sequential read of everything is fine too
    try (FSDataInputStream in = fs.open(p)) {
      byte[] got = new byte[data.length];
      in.readFully(got);
      assertArrayEquals(data, got);
    }
    // the NameNode knows: the corrupt replica is no longer a location of the block
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (true) {
      LocatedBlock now = stock.getClient().getLocatedBlocks("/corrupt/r3", 0).get(0);
      boolean listed = Arrays.stream(now.getLocations())
          .anyMatch(d -> d.getDatanodeUuid().equals(victim.getDatanodeUuid()));
      if (!listed) {
        break;
      }
      assertTrue(System.nanoTime() < end, "NameNode still lists the corrupt replica on " + victim);
      Thread.sleep(100);
    }
    assertEquals(0, fs.stockFallbacks());
  }

  @Test
  @Order(7)
  void whenEveryReplicaIsCorruptTheReadFails() throws Exception {
    write("/corrupt/r1", PluginCluster.random(BLOCK / 2, 41), 1);
    LocatedBlock lb = stock.getClient().getLocatedBlocks("/corrupt/r1", 0).get(0);
    flip(lb.getLocations()[0], lb, 1000);
    try (FSDataInputStream in = fs.open(new Path("/corrupt/r1"))) {
      assertThrows(ChecksumException.class, () -> in.readFully(new byte[BLOCK / 2]));
    }
  }

  @Test
  @Order(8)
  void aDataNodeWhosePluginStoppedIsReadThroughTheStockPath() throws Exception {
    DataNode dn0 = cluster.getDataNodes().get(0);
    String uuid = dn0.getDatanodeUuid();
    Path p = new Path("/noplugin/file");
    byte[] data = PluginCluster.random(2 * BLOCK + 3, 51);
    try (FSDataOutputStream out = stock.create(p, FsPermission.getFileDefault(), true, 4096, (short) 1, BLOCK,
        null, new InetSocketAddress[] {dn0.getXferAddress()})) {
      out.write(data);
    }
    DFSTestUtil.waitReplication(stock, p, (short) 1);
    for (LocatedBlock lb : stock.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks()) {
      assertEquals(uuid, lb.getLocations()[0].getDatanodeUuid(), "favored node honoured");
    }
    RdmaDataNodePlugin plugin = RdmaDataNodePlugin.running().stream().filter(x -> uuid.equals(x.datanodeUuid()))
        .findFirst().orElseThrow();
    plugin.stop();
    try (RdmaDistributedFileSystem f = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), clientConf)) {
      for (int round = 0; round < 2; round++) {
        try (FSDataInputStream in = f.open(p)) {
          byte[] got = new byte[data.length];
          in.readFully(got);
          assertArrayEquals(data, got);
          byte[] part = new byte[100];
          in.readFully(BLOCK - 50, part, 0, 100);
          assertArrayEquals(Arrays.copyOfRange(data, BLOCK - 50, BLOCK + 50), part);
        }
      }
      assertEquals(1, f.stockFallbacks(), "logged and counted once for the one DataNode");
      assertEquals(0, f.rdmaBytesRead());
      // the other DataNodes still serve over hrdma
      byte[] other = write("/noplugin/r3", PluginCluster.random(1000, 52), 3);
      try (FSDataInputStream in = f.open(new Path("/noplugin/r3"))) {
        byte[] got = new byte[other.length];
        in.readFully(got);
        assertArrayEquals(other, got);
      }
      assertTrue(f.rdmaBytesRead() > 0 || f.stockFallbacks() == 1);
    }
  }

  @Test
  @Order(100)
  void nothingLeaks() throws Exception {
    RdmaBlockClient c = fs.blockClientIfStarted();
    assertTrue(c != null);
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (c.buffersOutstanding() != 0) {
      assertTrue(System.nanoTime() < end, "registered buffers outstanding: " + c.buffersOutstanding());
      Thread.sleep(20);
    }
  }

  private void flip(DatanodeInfo dn, LocatedBlock lb, long at) throws IOException {
    File f = PluginCluster.blockFile(cluster, dn, lb.getBlock());
    try (RandomAccessFile raf = new RandomAccessFile(f, "rw")) {
      raf.seek(at);
      int v = raf.read();
      raf.seek(at);
      raf.write(v ^ 0x40);
    }
  }
}
