package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.ReadStatistics;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * What applications and Hadoop's own tests see of a read through
 * {@link RdmaDistributedFileSystem}, compared with the stock
 * DistributedFileSystem on the same files: the stream type and its public
 * API, read statistics, file-system statistics, end of file, a file
 * truncated under an open stream, and block tokens that the DataNode refuses
 * (refreshed from the NameNode and read again over hrdma, by value and by
 * reference, sequentially and positionally).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class StockReadSemanticsTest {
  private static final int BLOCK = PluginCluster.BLOCK;

  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private RdmaDistributedFileSystem byRef;
  private RdmaDistributedFileSystem byValue;

  @BeforeAll
  void start() throws Exception {
    cluster = PluginCluster.start(PluginCluster.baseConf(), getClass(), 1);
    stock = cluster.getFileSystem();
    Configuration ref = PluginCluster.rdmaClientConf(cluster);
    ref.setBoolean(RdmaBlockClient.SHM_READS_KEY, true);
    byRef = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), ref);
    Configuration value = PluginCluster.rdmaClientConf(cluster);
    value.setBoolean(RdmaBlockClient.SHM_READS_KEY, false);
    byValue = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), value);
  }

  @AfterAll
  void stop() throws IOException {
    if (byValue != null) {
      byValue.close();
    }
    PluginCluster.shutdown(byRef, cluster);
  }

  private byte[] write(String name, int size) throws Exception {
    byte[] data = PluginCluster.random(size, name.hashCode());
    Path p = new Path(name);
    try (FSDataOutputStream out = stock.create(p, true, 4096, (short) 1, BLOCK)) {
      out.write(data);
    }
    DFSTestUtil.waitReplication(stock, p, (short) 1);
    return data;
  }

  private static byte[] readAll(FSDataInputStream in, int size) throws IOException {
    byte[] got = new byte[size];
    in.readFully(0, new byte[0]); // nothing, and no effect on the position
    int off = 0;
    while (off < size) {
      int n = in.read(got, off, Math.min(size - off, 100_000));
      assertTrue(n > 0, "read at " + off);
      off += n;
    }
    assertEquals(-1, in.read());
    return got;
  }

  @Test
  void openGivesAnHdfsDataInputStreamWithStockValues() throws Exception {
    int size = 2 * BLOCK + 777;
    byte[] data = write("/semantics/api", size);
    Path p = new Path("/semantics/api");
    try (FSDataInputStream ours = byValue.open(p); FSDataInputStream theirs = stock.open(p)) {
      HdfsDataInputStream o = assertInstanceOf(HdfsDataInputStream.class, ours);
      HdfsDataInputStream t = assertInstanceOf(HdfsDataInputStream.class, theirs);
      assertInstanceOf(RdmaInputStream.class, o.getWrappedStream());
      assertEquals(t.getVisibleLength(), o.getVisibleLength());
      assertEquals(size, o.getVisibleLength());
      List<LocatedBlock> ob = o.getAllBlocks();
      List<LocatedBlock> tb = t.getAllBlocks();
      assertEquals(tb.size(), ob.size());
      for (int i = 0; i < tb.size(); i++) {
        assertEquals(tb.get(i).getBlock(), ob.get(i).getBlock());
      }
      assertArrayEquals(data, readAll(ours, size));
      assertArrayEquals(data, readAll(theirs, size));
      assertNotNull(o.getCurrentDatanode());
      assertEquals(t.getCurrentDatanode(), o.getCurrentDatanode());
      assertEquals(t.getCurrentBlock(), o.getCurrentBlock());
      assertReadStatistics(t.getReadStatistics(), o.getReadStatistics());
      assertEquals(size, o.getReadStatistics().getTotalBytesRead());
      o.clearReadStatistics();
      assertEquals(0, o.getReadStatistics().getTotalBytesRead());
    }
  }

  private static void assertReadStatistics(ReadStatistics want, ReadStatistics got) {
    assertEquals(want.getTotalBytesRead(), got.getTotalBytesRead(), "total");
    assertEquals(want.getTotalLocalBytesRead(), got.getTotalLocalBytesRead(), "local");
    assertEquals(want.getTotalShortCircuitBytesRead(), got.getTotalShortCircuitBytesRead(), "short-circuit");
    assertEquals(want.getTotalZeroCopyBytesRead(), got.getTotalZeroCopyBytesRead(), "zero-copy");
    assertEquals(want.getRemoteBytesRead(), got.getRemoteBytesRead(), "remote");
  }

  @Test
  void shortCircuitReadsCountAsShortCircuitBytes() throws Exception {
    int size = BLOCK + 99;
    byte[] data = write("/semantics/local", size);
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    c.setBoolean(RdmaBlockClient.LOCAL_READS_KEY, true);
    try (RdmaDistributedFileSystem local = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
        FSDataInputStream in = local.open(new Path("/semantics/local"))) {
      assertArrayEquals(data, readAll(in, size));
      assertEquals(size, local.localBytesRead());
      ReadStatistics rs = ((HdfsDataInputStream) in).getReadStatistics();
      assertEquals(size, rs.getTotalBytesRead());
      assertEquals(size, rs.getTotalLocalBytesRead());
      assertEquals(size, rs.getTotalShortCircuitBytesRead());
      assertEquals(0, rs.getRemoteBytesRead());
    }
  }

  /** Bytes read, by distance, and read ops of the file system's statistics, as stock counts them. */
  @Test
  void fileSystemStatisticsCountAsStock() throws Exception {
    int size = BLOCK + 4321;
    byte[] data = write("/semantics/stats", size);
    Path p = new Path("/semantics/stats");
    long[] want = statisticsOf(stock, p, size, data);
    long[] got = statisticsOf(byValue, p, size, data);
    assertArrayEquals(want, got, "bytesRead, local host, distance 1-2, 3-4, 5+, readOps, largeReadOps");
    assertEquals(2L * size + 1000, got[0], "every byte read counted once");
    assertEquals(got[0], got[1], "all from this host");
  }

  @SuppressWarnings("deprecation")
  private static long[] statisticsOf(FileSystem f, Path p, int size, byte[] data) throws IOException {
    // where Hadoop's tests look (DFSTestUtil.getStatistics): each file system class keeps its own
    FileSystem.Statistics s = FileSystem.getStatistics(f.getUri().getScheme(), f.getClass());
    FileSystem.Statistics before = new FileSystem.Statistics(s);
    try (FSDataInputStream in = f.open(p)) {
      assertArrayEquals(data, readAll(in, size));
      byte[] part = new byte[1000];
      in.readFully(BLOCK - 500, part); // a positional read across the block boundary
      assertArrayEquals(java.util.Arrays.copyOfRange(data, BLOCK - 500, BLOCK + 500), part);
      ByteBuffer bb = ByteBuffer.allocate(size);
      in.seek(0);
      while (bb.hasRemaining() && in.read(bb) > 0) {
        // reads the whole file again into the buffer
      }
      assertArrayEquals(data, bb.array());
    }
    return new long[] {s.getBytesRead() - before.getBytesRead(),
        s.getBytesReadByDistance(0) - before.getBytesReadByDistance(0),
        s.getBytesReadByDistance(1) - before.getBytesReadByDistance(1),
        s.getBytesReadByDistance(3) - before.getBytesReadByDistance(3),
        s.getBytesReadByDistance(5) - before.getBytesReadByDistance(5),
        s.getReadOps() - before.getReadOps(), s.getLargeReadOps() - before.getLargeReadOps()};
  }

  @Test
  void aByteBufferReadAtTheEndGivesMinusOneAsStock() throws Exception {
    write("/semantics/eof", 1000);
    for (FileSystem f : new FileSystem[] {stock, byValue}) {
      try (FSDataInputStream in = f.open(new Path("/semantics/eof"))) {
        assertEquals(0, in.read(ByteBuffer.allocate(0)), f.getClass().getSimpleName());
        in.seek(1000);
        assertEquals(-1, in.read(ByteBuffer.allocate(0)), f.getClass().getSimpleName());
        assertEquals(-1, in.read(ByteBuffer.allocate(10)), f.getClass().getSimpleName());
      }
    }
  }

  @Test
  void aPositionalReadPastATruncatedEndIsAnEofException() throws Exception {
    int bs = 512;
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    c.setLong(HdfsClientConfigKeys.Read.PREFETCH_SIZE_KEY, bs); // the stream knows the first block only
    Path p = new Path("/semantics/truncated");
    try (FSDataOutputStream out = stock.create(p, true, 4096, (short) 1, bs)) {
      out.write(new byte[3 * bs]);
    }
    try (RdmaDistributedFileSystem f = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
        FSDataInputStream in = f.open(p)) {
      assertInstanceOf(RdmaInputStream.class, in.getWrappedStream());
      while (!stock.truncate(p, 10)) {
        Thread.sleep(10);
      }
      assertThrows(EOFException.class, () -> in.readFully(bs, new byte[4]));
    }
  }

  /** A token the DataNode refuses: the stream gets new ones from the NameNode and reads on over hrdma. */
  @Test
  void refusedBlockTokensAreRefreshedOnEveryReadPath() throws Exception {
    int size = 2 * BLOCK + 5;
    byte[] data = write("/semantics/token", size);
    Path p = new Path("/semantics/token");
    for (RdmaDistributedFileSystem f : new RdmaDistributedFileSystem[] {byValue, byRef}) {
      long fallbacks = f.stockFallbacks();
      long rdma = f.rdmaBytesRead();
      String what = f == byRef ? "by reference" : "by value";
      // sequential, into a byte[]; the stream's block list gets the new tokens, as stock's
      try (FSDataInputStream in = f.open(p)) {
        List<byte[]> spoiled = spoilTokens((HdfsDataInputStream) in);
        assertArrayEquals(data, readAll(in, size), what);
        List<LocatedBlock> now = ((HdfsDataInputStream) in).getAllBlocks();
        assertEquals(spoiled.size(), now.size(), what);
        for (int i = 0; i < now.size(); i++) {
          assertFalse(java.util.Arrays.equals(spoiled.get(i), now.get(i).getBlockToken().getPassword()),
              what + ": getAllBlocks still gives the refused token of block " + i);
        }
      }
      // sequential, into a ByteBuffer
      try (FSDataInputStream in = f.open(p)) {
        spoilTokens((HdfsDataInputStream) in);
        ByteBuffer bb = ByteBuffer.allocateDirect(size);
        while (bb.hasRemaining()) {
          assertTrue(in.read(bb) > 0, what);
        }
        bb.flip();
        byte[] got = new byte[size];
        bb.get(got);
        assertArrayEquals(data, got, what);
      }
      // positional, byte[] and ByteBuffer, across a block boundary
      try (FSDataInputStream in = f.open(p)) {
        spoilTokens((HdfsDataInputStream) in);
        byte[] got = new byte[3000];
        in.readFully(BLOCK - 1000, got);
        assertArrayEquals(java.util.Arrays.copyOfRange(data, BLOCK - 1000, BLOCK + 2000), got, what);
        spoilTokens((HdfsDataInputStream) in);
        ByteBuffer bb = ByteBuffer.allocate(3000);
        in.readFully(2 * BLOCK - 2995, bb);
        assertArrayEquals(java.util.Arrays.copyOfRange(data, 2 * BLOCK - 2995, size), bb.array(), what);
      }
      assertEquals(fallbacks, f.stockFallbacks(), what + ": nothing went to the stock path");
      assertEquals(rdma + 2L * size + 6000, f.rdmaBytesRead(), what + ": every byte came over hrdma");
    }
  }

  /**
   * Replaces the token of every block the stream knows by one with the same identity and a
   * wrong password; returns those passwords, block by block.
   */
  private static List<byte[]> spoilTokens(HdfsDataInputStream in) throws IOException {
    List<byte[]> spoiled = new java.util.ArrayList<>();
    for (LocatedBlock lb : in.getAllBlocks()) {
      Token<BlockTokenIdentifier> t = lb.getBlockToken();
      byte[] wrong = t.getPassword().clone();
      wrong[0] ^= 1;
      lb.setBlockToken(new Token<>(t.getIdentifier(), wrong, t.getKind(), t.getService()));
      spoiled.add(wrong);
    }
    return spoiled;
  }

  /**
   * What TestDistributedFileSystem#testConcurrentStatistics checks, where ours keeps it: many
   * threads' calls all counted, in the statistics of the file system's class (as stock keeps
   * those of its own subclass ViewDistributedFileSystem) and in the DFSOpsCountStatistics all
   * DistributedFileSystems share; counted once over FileSystem.getAllStatistics().
   */
  @Test
  void concurrentCallsAreCountedOnceInTheFileSystemsStatistics() throws Exception {
    int threads = 5;
    FileSystem.Statistics mine = FileSystem.getStatistics("hdfs", RdmaDistributedFileSystem.class);
    assertTrue(mine == FileSystem.getStatistics(byValue.getUri().getScheme(), byValue.getClass()));
    long writes = mine.getWriteOps();
    long allWrites = allHdfsWriteOps();
    long mkdirs = org.apache.hadoop.fs.GlobalStorageStatistics.INSTANCE
        .get(org.apache.hadoop.hdfs.DFSOpsCountStatistics.NAME).getLong("op_mkdirs");
    java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
    try {
      List<java.util.concurrent.Future<Boolean>> all = new java.util.ArrayList<>();
      for (int i = 0; i < threads; i++) {
        int k = i;
        all.add(pool.submit(() -> {
          go.await();
          return byValue.mkdirs(new Path("/semantics/concurrent/" + k));
        }));
      }
      go.countDown();
      for (java.util.concurrent.Future<Boolean> f : all) {
        assertTrue(f.get());
      }
    } finally {
      pool.shutdownNow();
    }
    assertEquals(writes + threads, mine.getWriteOps(), "write ops of the file system's class");
    assertEquals(allWrites + threads, allHdfsWriteOps(), "write ops over all hdfs statistics");
    assertEquals(mkdirs + threads, org.apache.hadoop.fs.GlobalStorageStatistics.INSTANCE
        .get(org.apache.hadoop.hdfs.DFSOpsCountStatistics.NAME).getLong("op_mkdirs"), "MKDIRS");
  }

  private static long allHdfsWriteOps() {
    long n = 0;
    for (FileSystem.Statistics st : FileSystem.getAllStatistics()) {
      if ("hdfs".equals(st.getScheme())) {
        n += st.getWriteOps();
      }
    }
    return n;
  }
}
