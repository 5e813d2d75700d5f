package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.BlockMetadataHeader;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeFiles;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sequential short-circuit reads straight into the caller's buffer
 * ({@code hrdma.client.read.local.direct}, {@link LocalBlockReader}'s readDirect): the bytes
 * stock reads for reads of every size and alignment, into arrays, heap and direct buffers, across
 * block boundaries; a bad chunk is the windows' ChecksumException (message, position) and the
 * stream reads the range again from another replica over what the bad one left in the caller's
 * buffer; a stream that verifies nothing hands out the bytes on disk; pages not in the page cache
 * go through the windows. Truncation under a direct read: LocalTruncateTest ("sequential-direct").
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class DirectLocalReadTest {
  private static final int BLOCK = PluginCluster.BLOCK;
  private static final int BPC = PluginCluster.BPC;

  private LocalReadFixture local;
  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private RdmaDistributedFileSystem direct;  // direct reads on
  private RdmaDistributedFileSystem windows; // direct reads off: the windows' copy

  @BeforeAll
  void start() throws Exception {
    assumeTrue(HrdmaNative.isAvailable(), "direct reads are libhrdma's");
    local = new LocalReadFixture("scr-direct-");
    cluster = PluginCluster.start(local.clusterConf(), getClass(), 3);
    stock = cluster.getFileSystem();
    Configuration d = local.clientConf(cluster, true, 0, 0);
    d.setBoolean(HrdmaClientKeys.READ_LOCAL_DIRECT_KEY, true);
    direct = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), d);
    Configuration w = local.clientConf(cluster, true, 0, 0);
    w.setBoolean(HrdmaClientKeys.READ_LOCAL_DIRECT_KEY, false);
    windows = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), w);
  }

  @AfterAll
  void stop() throws IOException {
    if (windows != null) {
      windows.close();
    }
    PluginCluster.shutdown(direct, cluster);
  }

  /** Every descriptor closed but the kept replicas' (positional reads), nothing mapped. */
  @AfterEach
  void nothingLeaks() throws IOException {
    for (RdmaDistributedFileSystem fs : new RdmaDistributedFileSystem[] {direct, windows}) {
      fs.blockClient().replicas().clear();
    }
    assertEquals(0, NativeFiles.fdsHeld(), "descriptors held");
    assertEquals(0, NativeFiles.mappedBytes(), "bytes mapped");
  }

  private Path writeStock(String name, byte[] data) throws Exception {
    Path p = new Path(name);
    try (FSDataOutputStream out = stock.create(p, (short) 3)) {
      out.write(data);
    }
    DFSTestUtil.waitReplication(stock, p, (short) 3);
    return p;
  }

  /** How a read hands its bytes over. */
  enum Into { ARRAY, HEAP_BUFFER, DIRECT_BUFFER }

  /** Reads {@code len} bytes (or to the end) at the stream's position into {@code got} at {@code at}; the count. */
  private static int readInto(FSDataInputStream in, Into how, byte[] got, int at, int len) throws IOException {
    switch (how) {
      case ARRAY -> {
        return in.read(got, at, len);
      }
      case HEAP_BUFFER -> {
        // an array with an offset: the buffer's window into it starts elsewhere than 0
        byte[] big = new byte[len + 100];
        ByteBuffer b = ByteBuffer.wrap(big, 37, len).slice();
        int n = in.read(b);
        if (n > 0) {
          System.arraycopy(big, 37, got, at, n);
        }
        return n;
      }
      default -> {
        ByteBuffer b = ByteBuffer.allocateDirect(len + 4096).position(4096 - 7).limit(4096 - 7 + len);
        int n = in.read(b);
        if (n > 0) {
          b.position(4096 - 7);
          b.get(got, at, n);
        }
        return n;
      }
    }
  }

  @Test
  void readsOfEverySizeAndAlignmentGiveWhatStockReads() throws Exception {
    byte[] data = PluginCluster.random(4 * BLOCK + 1001, 41);
    Path p = writeStock("/direct/sizes", data);
    byte[] byStock = new byte[data.length];
    try (FSDataInputStream in = stock.open(p)) {
      in.readFully(byStock);
    }
    assertArrayEquals(data, byStock, "stock reads what was written");
    int[] sizes = {1, 511, 512, 4096, 65535, 65536, 65537, 66048, 131072 + 512, 262144, 300000, 524288, 524289,
        BLOCK - 512, BLOCK, BLOCK + 3, 3 * BLOCK, 5 * BLOCK};
    long[] starts = {0, 512, 1000, BLOCK - 65536, BLOCK - 100, 2L * BLOCK, 3L * BLOCK + 512 * 7};
    long direct0 = LocalBlockReader.directBytes();
    long helped0 = LocalBlockReader.directPiecesHelped();
    long local0 = direct.localBytesRead();
    long read = 0;
    for (Into how : Into.values()) {
      for (long start : starts) {
        for (int first = 0; first < sizes.length; first++) {
          int size = sizes[first];
          byte[] got = new byte[data.length];
          Arrays.fill(got, (byte) 0x5a);
          try (FSDataInputStream in = direct.open(p)) {
            in.seek(start);
            long at = start;
            int k = 0;
            while (at < data.length) {
              // every size in turn from the first, every third one byte longer: reads start on and
              // off chunk boundaries, small ones between large ones
              int s = sizes[(first + k) % sizes.length];
              int want = k % 3 == 2 ? s + 1 : s;
              k++;
              int n = readInto(in, how, got, (int) at, (int) Math.min(want, data.length - at));
              assertTrue(n > 0, "a read before the end gives bytes");
              at += n;
              read += n;
            }
            assertEquals(-1, in.read());
          }
          assertArrayEquals(Arrays.copyOfRange(byStock, (int) start, data.length),
              Arrays.copyOfRange(got, (int) start, data.length), how + " from " + start + ", reads from " + size);
        }
      }
    }
    assertTrue(LocalBlockReader.directBytes() - direct0 > read / 2,
        "most bytes read straight into the caller's buffer: " + (LocalBlockReader.directBytes() - direct0) + " of "
            + read);
    assertEquals(read, direct.localBytesRead() - local0, "every byte counted as short-circuit, once");
    assertTrue(LocalBlockReader.directPiecesHelped() > helped0, "the verifier took pieces of large reads");
  }

  /**
   * A bad chunk: the same ChecksumException (message, position) as the windows give, wherever it is
   * in a large read (its first piece, its middle, its last chunk), whichever thread met it.
   */
  @Test
  void aBadChunkIsTheWindowsChecksumException() throws Exception {
    byte[] data = PluginCluster.random(2 * BLOCK, 42);
    Path p = writeStock("/direct/bad", data);
    LocatedBlock lb = stock.getClient().getLocatedBlocks(p.toString(), 0).get(0);
    DatanodeInfo dn = lb.getLocations()[0];
    for (int bad : new int[] {1000, BLOCK / 2 + 5000, BLOCK - 1}) {
      LocalReadFixture.flip(cluster, dn, lb, bad);
      ChecksumException byWindows;
      try (LocalBlockReader r = (LocalBlockReader) windows.blockClient().openLocal(lb, dn, 0, BLOCK)) {
        byWindows = assertThrows(ChecksumException.class, () -> r.readFully(new byte[BLOCK], 0, BLOCK));
      }
      long direct0 = LocalBlockReader.directBytes();
      ChecksumException byDirect;
      try (LocalBlockReader r = (LocalBlockReader) direct.blockClient().openLocal(lb, dn, 0, BLOCK)) {
        byDirect = assertThrows(ChecksumException.class, () -> r.read(new byte[BLOCK], 0, BLOCK));
        assertEquals(BLOCK, r.remaining(), "nothing handed out");
        // a later read of it fails again (direct or windows), never hands the bad chunk out
        ChecksumException again = assertThrows(ChecksumException.class, () -> r.readFully(new byte[BLOCK], 0, BLOCK));
        assertEquals(byWindows.getPos(), again.getPos());
      }
      assertEquals(direct0, LocalBlockReader.directBytes(), "no direct read counted as done");
      assertEquals(bad / BPC * BPC, byDirect.getPos());
      assertEquals(byWindows.getPos(), byDirect.getPos());
      assertEquals(byWindows.getMessage(), byDirect.getMessage());
      LocalReadFixture.flip(cluster, dn, lb, bad); // good again
    }
  }

  /**
   * The replica the stream reads goes bad ahead of it: the direct read that meets the bad chunk
   * fails, the stream reads the range again from another replica into the same buffer (over the
   * bad replica's bytes), byte-identical, and reports the bad one; arrays and direct buffers.
   */
  @Test
  void aBadReplicaIsReadAgainFromAnotherOverTheCallersBuffer() throws Exception {
    for (Into how : new Into[] {Into.ARRAY, Into.DIRECT_BUFFER}) {
      byte[] data = PluginCluster.random(3 * BLOCK, 43 + how.ordinal());
      Path p = writeStock("/direct/replica-" + how, data);
      long errors0 = direct.checksumErrors();
      long reported0 = direct.badReplicasReported();
      long direct0 = LocalBlockReader.directBytes();
      long local0 = direct.localBytesRead();
      byte[] got = new byte[data.length];
      try (FSDataInputStream in = direct.open(p)) {
        assertEquals(BLOCK, readInto(in, how, got, 0, BLOCK));
        assertEquals(BPC, readInto(in, how, got, BLOCK, BPC)); // the second block's replica chosen
        DatanodeInfo dn = ((RdmaInputStream) in.getWrappedStream()).currentDataNode();
        LocatedBlock lb = stock.getClient().getLocatedBlocks(p.toString(), 0).get(1);
        // the rest of its first window is copied out; the bad chunk is in the direct read of [512K, 1M)
        LocalReadFixture.flip(cluster, dn, lb, BLOCK * 3 / 4 + 77);
        int at = BLOCK + BPC;
        while (at < data.length) {
          int n = readInto(in, how, got, at, Math.min(BLOCK, data.length - at));
          assertTrue(n > 0);
          at += n;
        }
      }
      assertArrayEquals(data, got, how.toString());
      assertEquals(errors0 + 1, direct.checksumErrors());
      assertEquals(reported0 + 1, direct.badReplicasReported());
      assertEquals(data.length, direct.localBytesRead() - local0, "every byte by short-circuit, from two replicas");
      assertTrue(LocalBlockReader.directBytes() - direct0 >= 2L * BLOCK, "read straight into the buffer");
    }
  }

  /** Every replica bad: the caller's ChecksumException, as with the windows. */
  @Test
  void everyReplicaBadIsTheCallersChecksumException() throws Exception {
    byte[] data = PluginCluster.random(2 * BLOCK, 45);
    Path p = writeStock("/direct/all-bad", data);
    LocatedBlock lb = stock.getClient().getLocatedBlocks(p.toString(), 0).get(1);
    for (DatanodeInfo dn : lb.getLocations()) {
      LocalReadFixture.flip(cluster, dn, lb, 300_000);
    }
    long rdma0 = direct.rdmaBytesRead();
    ChecksumException[] e = new ChecksumException[2];
    int i = 0;
    for (RdmaDistributedFileSystem fs : new RdmaDistributedFileSystem[] {direct, windows}) {
      try (FSDataInputStream in = fs.open(p)) {
        byte[] b = new byte[BLOCK];
        in.readFully(b);
        e[i++] = assertThrows(ChecksumException.class, () -> in.readFully(b));
      }
    }
    assertEquals(300_000 / BPC * BPC, e[0].getPos(), "the bad chunk's offset in its block, as the windows say");
    assertEquals(e[1].getPos(), e[0].getPos());
    assertEquals(rdma0, direct.rdmaBytesRead(), "the short-circuit reader found every bad chunk");
  }

  /** setVerifyChecksum(false): the bytes on disk, bad chunk and all, straight into the buffer, counted unverified. */
  @Test
  void aStreamThatVerifiesNothingGetsTheBytesOnDisk() throws Exception {
    byte[] data = PluginCluster.random(2 * BLOCK, 46);
    Path p = writeStock("/direct/skip", data);
    LocatedBlock lb = stock.getClient().getLocatedBlocks(p.toString(), 0).get(0);
    int bad = 600_000;
    for (DatanodeInfo dn : lb.getLocations()) {
      LocalReadFixture.flip(cluster, dn, lb, bad);
    }
    Configuration c = local.clientConf(cluster, true, 0, 0);
    c.setBoolean(HrdmaClientKeys.READ_LOCAL_DIRECT_KEY, true);
    try (RdmaDistributedFileSystem fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c)) {
      fs.setVerifyChecksum(false);
      long direct0 = LocalBlockReader.directBytes();
      long unverified0 = fs.localBytesUnverified();
      byte[] got = new byte[data.length];
      try (FSDataInputStream in = fs.open(p)) {
        in.readFully(got);
      }
      byte[] onDisk = data.clone();
      onDisk[bad] ^= 0x01;
      assertArrayEquals(onDisk, got);
      assertEquals(data.length, fs.localBytesUnverified() - unverified0);
      assertEquals(data.length, LocalBlockReader.directBytes() - direct0);
      assertEquals(0, fs.checksumErrors());
      fs.blockClient().replicas().clear();
    }
  }

  /**
   * A replica whose middle is not in the page cache (rewritten with O_DIRECT, which drops those
   * pages): the direct read does not wait on the disk with the array pinned; it reads the rest as
   * the windows do and leaves the rest of the block to them. Same bytes; the miss counted.
   */
  @Test
  void pagesNotInThePageCacheGoThroughTheWindows(@TempDir java.nio.file.Path dir) throws Exception {
    int size = 8 << 20;
    byte[] bytes = PluginCluster.random(size, 47);
    java.nio.file.Path data = dir.resolve("blk_2");
    java.nio.file.Path meta = dir.resolve("blk_2_1001.meta");
    writeReplica(data, meta, bytes);
    // 1 MiB from 3 MiB on, written again with O_DIRECT: those pages leave the page cache
    int blockSize = Math.toIntExact(Files.getFileStore(data).getBlockSize());
    try (FileChannel ch = FileChannel.open(data, StandardOpenOption.WRITE,
        com.sun.nio.file.ExtendedOpenOption.DIRECT)) {
      ByteBuffer b = ByteBuffer.allocateDirect((1 << 20) + blockSize).alignedSlice(blockSize).limit(1 << 20);
      b.put(bytes, 3 << 20, 1 << 20).flip();
      ch.write(b, 3 << 20);
    } catch (UnsupportedOperationException | IOException e) {
      assumeTrue(false, "no O_DIRECT here: " + e);
    }
    ExecutorService verifier = Executors.newSingleThreadExecutor();
    try {
      long misses0 = LocalBlockReader.directMisses();
      long direct0 = LocalBlockReader.directBytes();
      ExtendedBlock block = new ExtendedBlock("BP-direct", 2, size, 1001);
      byte[] got = new byte[size];
      try (LocalBlockReader r = new LocalBlockReader(block, open(data), open(meta), size, 0, size, 512 * 1024,
          verifier, 8, true, 0, true)) {
        for (int at = 0, n; at < size; at += n) {
          n = r.read(got, at, Math.min(1 << 20, size - at)); // windows hand out at most one at a time
          assertTrue(n > 0);
        }
      }
      assertArrayEquals(bytes, got);
      assertEquals(misses0 + 1, LocalBlockReader.directMisses(), "the miss sent the reader to the windows, once");
      long d = LocalBlockReader.directBytes() - direct0;
      // the kernel's read-ahead of the first miss may bring some of the pages not cached in at once
      assertTrue(d >= 3 << 20 && d < 4 << 20, "direct up to the pages not cached, windows after: " + d);
    } finally {
      verifier.shutdown();
      assertTrue(verifier.awaitTermination(30, TimeUnit.SECONDS));
    }
  }

  /**
   * The sums of a reader's range are read into a pooled buffer that the next reader reuses: each
   * reader verifies against its own replica's sums (never a reader's before it), a bad chunk is
   * the same ChecksumException as with a buffer of its own, and a reader of a shorter range
   * reads into a smaller one. Direct reads and the windows.
   */
  @Test
  void pooledSumsAreEachReadersOwn(@TempDir java.nio.file.Path dir) throws Exception {
    int size = 8 << 20;
    byte[] first = PluginCluster.random(size, 48);
    byte[] second = PluginCluster.random(size, 49);
    java.nio.file.Path d1 = dir.resolve("blk_3");
    java.nio.file.Path m1 = dir.resolve("blk_3_1001.meta");
    java.nio.file.Path d2 = dir.resolve("blk_4");
    java.nio.file.Path m2 = dir.resolve("blk_4_1001.meta");
    writeReplica(d1, m1, first);
    writeReplica(d2, m2, second);
    ExtendedBlock b1 = new ExtendedBlock("BP-pooled", 3, size, 1001);
    ExtendedBlock b2 = new ExtendedBlock("BP-pooled", 4, size, 1001);
    ExecutorService verifier = Executors.newSingleThreadExecutor();
    try {
      for (boolean directReads : new boolean[] {true, false}) {
        ByteBuffer pooled;
        byte[] got = new byte[size];
        try (LocalBlockReader r = new LocalBlockReader(b1, open(d1), open(m1), size, 0, size, 512 * 1024, verifier,
            8, true, 0, directReads)) {
          pooled = r.pooledSums();
          assertTrue(pooled != null && pooled.isDirect() && pooled.capacity() >= size / BPC * 4);
          r.readFully(got, 0, size);
        }
        assertArrayEquals(first, got);
        // the next reader takes the same buffer back, over the first replica's sums
        try (LocalBlockReader r = new LocalBlockReader(b2, open(d2), open(m2), size, 0, size, 512 * 1024, verifier,
            8, true, 0, directReads)) {
          assertTrue(r.pooledSums() == pooled, "the pooled buffer is reused");
          Arrays.fill(got, (byte) 0);
          r.readFully(got, 0, size);
        }
        assertArrayEquals(second, got, "verified against its own sums");
        // a bad chunk of the second replica, read into the reused buffer: the exception of a buffer of its own
        int bad = 5 * 1024 * 1024 + 3 * BPC + 9;
        flipByte(d2, bad);
        ChecksumException fresh;
        try (LocalBlockReader r = new LocalBlockReader(b2, open(d2), open(m2), size, 0, size, 512 * 1024, verifier,
            8, true, 0, directReads)) {
          assertTrue(r.pooledSums() == pooled, "the pooled buffer is reused");
          fresh = assertThrows(ChecksumException.class, () -> r.readFully(new byte[size], 0, size));
        }
        assertEquals(bad / BPC * BPC, fresh.getPos());
        assertTrue(fresh.getMessage().contains(b2.toString()), fresh.getMessage());
        flipByte(d2, bad); // good again
        // a range of 1 MiB from 2 MiB: a buffer of its size class, its own sums
        try (LocalBlockReader r = new LocalBlockReader(b2, open(d2), open(m2), size, 2 << 20, 1 << 20, 512 * 1024,
            verifier, 8, true, 0, directReads)) {
          ByteBuffer small = r.pooledSums();
          assertEquals(LocalBlockReader.sumsCapacity(DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, BPC),
              2 << 20, 3 << 20), small.capacity());
          assertTrue(small.capacity() < pooled.capacity());
          byte[] part = new byte[1 << 20];
          r.readFully(part, 0, part.length);
          assertArrayEquals(Arrays.copyOfRange(second, 2 << 20, 3 << 20), part);
        }
      }
    } finally {
      verifier.shutdown();
      assertTrue(verifier.awaitTermination(30, TimeUnit.SECONDS));
    }
  }

  private static void flipByte(java.nio.file.Path p, long at) throws IOException {
    try (java.io.RandomAccessFile raf = new java.io.RandomAccessFile(p.toFile(), "rw")) {
      raf.seek(at);
      int v = raf.read();
      raf.seek(at);
      raf.write(v ^ 0x01);
    }
  }

  static NativeFiles.Fd open(java.nio.file.Path p) throws IOException {
    return NativeFiles.adopt(NativeFiles.openForPassing(p.toString()));
  }

  /** A replica's block and .meta files (CRC32C, 512-byte chunks) holding {@code bytes}. */
  static void writeReplica(java.nio.file.Path data, java.nio.file.Path meta, byte[] bytes) throws IOException {
    Files.write(data, bytes);
    DataChecksum c = DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, BPC);
    try (OutputStream os = Files.newOutputStream(meta); DataOutputStream out = new DataOutputStream(os)) {
      BlockMetadataHeader.writeHeader(out, c);
      CRC32C crc = new CRC32C();
      for (int at = 0; at < bytes.length; at += BPC) {
        crc.reset();
        crc.update(ByteBuffer.wrap(bytes, at, Math.min(BPC, bytes.length - at)));
        out.writeInt((int) crc.getValue());
      }
    }
  }
}
