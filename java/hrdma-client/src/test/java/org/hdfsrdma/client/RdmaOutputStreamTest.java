package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileChecksum;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.tools.DFSck;
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
 * Files written through {@link RdmaDistributedFileSystem#create} ({@link RdmaOutputStream})
 * on a MiniDFSCluster of three DataNodes with the plugin (block tokens on, 1 MiB blocks):
 * read back by the stock client and ours, checksums equal to stock-written files, fsck,
 * hflush/hsync, overwrite=false, and the fallback to the stock write path.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(180)
class RdmaOutputStreamTest {
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

  private static byte[] readAll(FileSystem f, Path p) throws IOException {
    long len = f.getFileStatus(p).getLen();
    byte[] got = new byte[(int) len];
    try (FSDataInputStream in = f.open(p)) {
      in.readFully(got);
      assertEquals(-1, in.read(), "EOF of " + p);
    }
    return got;
  }

  private String fsck(String path) throws Exception {
    ByteArrayOutputStream bos = new ByteArrayOutputStream();
    int rc = new DFSck(cluster.getConfiguration(0), new PrintStream(bos, true)).run(new String[] {path});
    String out = bos.toString();
    assertEquals(0, rc, out);
    return out;
  }

  @Test
  @Order(1)
  void filesWrittenByOursReadBackIdenticalEverywayWithStockChecksums() throws Exception {
    int[] sizes = {0, 1, 513, BLOCK - 1, BLOCK + 1, 3 * BLOCK + 100};
    long before = fs.rdmaBytesWritten();
    long total = 0;
    for (int repl : new int[] {1, 3}) {
      for (int size : sizes) {
        byte[] data = PluginCluster.random(size, size * 31L + repl);
        Path ours = new Path("/w/r" + repl + "/ours-" + size);
        Path theirs = new Path("/w/r" + repl + "/stock-" + size);
        long t0 = System.nanoTime();
        try (FSDataOutputStream out = fs.create(ours, true, 4096, (short) repl, BLOCK)) {
          // in uneven pieces, to cross packet and block boundaries mid-write
          int off = 0;
          Random r = new Random(size);
          while (off < size) {
            int n = Math.min(size - off, 1 + r.nextInt(200_000));
            out.write(data, off, n);
            off += n;
          }
        }
        long t1 = System.nanoTime();
        try (FSDataOutputStream out = stock.create(theirs, true, 4096, (short) repl, BLOCK)) {
          out.write(data);
        }
        long t2 = System.nanoTime();
        System.out.printf("write %d bytes, replication %d: ours %.1f ms, stock %.1f ms%n", size, repl,
            (t1 - t0) / 1e6, (t2 - t1) / 1e6);
        total += size;
        assertEquals(size, stock.getFileStatus(ours).getLen(), ours.toString());
        assertArrayEquals(data, readAll(stock, ours), "stock reader, " + ours);
        assertArrayEquals(data, readAll(fs, ours), "our reader, " + ours);
        FileChecksum a = stock.getFileChecksum(ours);
        FileChecksum b = stock.getFileChecksum(theirs);
        assertEquals(b, a, "checksum of " + ours);
        if (size > 0) {
          DFSTestUtil.waitReplication(stock, ours, (short) repl);
        }
      }
    }
    assertEquals(total, fs.rdmaBytesWritten() - before, "every byte over hrdma");
    assertEquals(0, fs.stockWriteFallbacks());
    String report = fsck("/w");
    assertTrue(report.contains("is HEALTHY"), report);
  }

  @Test
  @Order(2)
  void streamCapabilitiesAndOverwriteFalse() throws Exception {
    Path p = new Path("/w/exists");
    try (FSDataOutputStream out = fs.create(p, true)) {
      assertTrue(out.hasCapability(StreamCapabilities.HFLUSH));
      assertTrue(out.hasCapability(StreamCapabilities.HSYNC));
      out.write(1);
    }
    assertThrows(FileAlreadyExistsException.class, () -> fs.create(p, false));
    assertThrows(FileAlreadyExistsException.class, () -> stock.create(p, false));
    assertEquals(1, stock.getFileStatus(p).getLen());
  }

  @Test
  @Order(3)
  void hflushMakesBytesVisibleToANewStockReaderAndHsyncUpdatesTheLength() throws Exception {
    Path p = new Path("/w/flushed");
    byte[] data = PluginCluster.random(BLOCK + 5000, 7);
    try (FSDataOutputStream out = fs.create(p, true, 4096, (short) 3, BLOCK)) {
      out.write(data, 0, 1000);       // mid-chunk
      out.hflush();
      assertArrayEquals(java.util.Arrays.copyOf(data, 1000), readVisible(p, 1000));
      out.write(data, 1000, 100);     // the same chunk again, then more
      out.hflush();
      out.hflush();                   // nothing new
      assertArrayEquals(java.util.Arrays.copyOf(data, 1100), readVisible(p, 1100));
      out.write(data, 1100, BLOCK);   // into the second block
      out.hsync();
      assertEquals(BLOCK + 1100, stock.getFileStatus(p).getLen(), "length after hsync");
      assertArrayEquals(java.util.Arrays.copyOf(data, BLOCK + 1100), readVisible(p, BLOCK + 1100));
      out.write(data, BLOCK + 1100, data.length - BLOCK - 1100);
    }
    assertArrayEquals(data, readAll(stock, p));
    assertEquals(stock.getFileChecksum(p), checksumOfStockCopy("/w/flushed-stock", data));
  }

  private FileChecksum checksumOfStockCopy(String name, byte[] data) throws IOException {
    Path p = new Path(name);
    try (FSDataOutputStream out = stock.create(p, true, 4096, (short) 3, BLOCK)) {
      out.write(data);
    }
    return stock.getFileChecksum(p);
  }

  /** A new stock reader of the file being written sees at least {@code n} bytes; returns them. */
  private byte[] readVisible(Path p, int n) throws IOException {
    try (DistributedFileSystem reader = (DistributedFileSystem) FileSystem.newInstance(cluster.getURI(),
        cluster.getConfiguration(0)); FSDataInputStream in = reader.open(p)) {
      byte[] got = new byte[n];
      in.readFully(got);
      return got;
    }
  }

  @Test
  @Order(4)
  void aWrongPluginPortFallsBackToTheStockWritePath() throws Exception {
    int closed;
    try (ServerSocket s = new ServerSocket(0)) {
      closed = s.getLocalPort();
    }
    Configuration c = new Configuration(clientConf);
    c.setInt(RdmaPorts.PORT_KEY, closed);
    byte[] data = PluginCluster.random(BLOCK + 7, 99);
    Path p = new Path("/w/fallback");
    try (RdmaDistributedFileSystem wrong = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c)) {
      try (FSDataOutputStream out = wrong.create(p, false)) {
        out.write(data);
        out.hflush();
      }
      assertEquals(1, wrong.stockWriteFallbacks());
      assertEquals(0, wrong.rdmaBytesWritten());
    }
    assertArrayEquals(data, readAll(stock, p));
  }

  @Test
  @Order(5)
  void replicationThreeWriteTimes() throws Exception {
    byte[] data = PluginCluster.random(BLOCK, 5);
    for (int i = 0; i < 5; i++) {
      long t0 = System.nanoTime();
      try (FSDataOutputStream out = fs.create(new Path("/w/t/ours-" + i), true, 4096, (short) 3, BLOCK)) {
        out.write(data);
      }
      long t1 = System.nanoTime();
      try (FSDataOutputStream out = stock.create(new Path("/w/t/stock-" + i), true, 4096, (short) 3, BLOCK)) {
        out.write(data);
      }
      long t2 = System.nanoTime();
      System.out.printf("1 MiB, replication 3, round %d: ours %.1f ms, stock %.1f ms%n", i, (t1 - t0) / 1e6,
          (t2 - t1) / 1e6);
    }
    assertInstanceOf(RdmaDistributedFileSystem.class, fs);
  }
}
