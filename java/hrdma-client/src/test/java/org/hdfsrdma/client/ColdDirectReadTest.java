package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.BlockMetadataHeader;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeDisk;
import org.hdfsrdma.nativelib.NativeFiles;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Cold short-circuit reads with O_DIRECT ({@code hrdma.client.read.local.cold-direct},
 * {@link ColdReadAhead}): a replica not in the page cache is read with O_DIRECT from its start
 * (or from past what the kernel was asked to read ahead, when a direct read finds it not cached
 * further on); the bytes are the file's, a bad chunk is the windows' ChecksumException (message,
 * position) on this and every later read, a truncated file an EOFException, chunks O_DIRECT
 * cannot align to go through the page cache (counted); nothing is left open. Through the file
 * system: a multi-block file whose replicas were dropped from the page cache reads as stock reads it.
 * The replicas are written under target/ (a disk filesystem: O_DIRECT needs one).
 */
@Timeout(180)
class ColdDirectReadTest {
  private static final int BPC = PluginCluster.BPC;
  private static final ColdReadAhead.Settings COLD = new ColdReadAhead.Settings(4, 1 << 20);

  private Path dir;
  private ExecutorService verifier;
  private long fds0;

  @BeforeEach
  void setUp() throws IOException {
    assumeTrue(HrdmaNative.isAvailable(), "cold O_DIRECT reads are libhrdma's");
    dir = Files.createTempDirectory(Path.of("target"), "cold-direct-").toAbsolutePath();
    verifier = Executors.newSingleThreadExecutor();
    fds0 = NativeFiles.fdsHeld();
  }

  @AfterEach
  void nothingLeaks() throws Exception {
    if (verifier != null) {
      verifier.shutdown();
      assertTrue(verifier.awaitTermination(30, TimeUnit.SECONDS));
    }
    assertEquals(fds0, NativeFiles.fdsHeld(), "descriptors held");
  }

  /** Whether O_DIRECT opens on the test directory's filesystem. */
  private boolean directHere(Path f) {
    try (NativeDisk.File d = NativeDisk.File.open(f, NativeDisk.DIRECT)) {
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static void dropCache(Path f) throws IOException {
    try (NativeDisk.File nf = NativeDisk.File.open(f, 0)) {
      nf.dropCache(0, 0, true);
    }
  }

  private static void dropCache(Path f, long offset, long len) throws IOException {
    try (NativeDisk.File nf = NativeDisk.File.open(f, 0)) {
      nf.dropCache(offset, len, true);
    }
  }

  private LocalBlockReader reader(Path data, Path meta, long size, long offset, long len, boolean verify,
      ColdReadAhead.Settings cold) throws IOException {
    return reader(data, meta, size, offset, len, verify, cold, 16L << 20);
  }

  private LocalBlockReader reader(Path data, Path meta, long size, long offset, long len, boolean verify,
      ColdReadAhead.Settings cold, long readAhead) throws IOException {
    ExtendedBlock block = new ExtendedBlock("BP-cold", 3, size, 1001);
    return new LocalBlockReader(block, DirectLocalReadTest.open(data), DirectLocalReadTest.open(meta), size, offset,
        len, 512 * 1024, verifier, 8, verify, readAhead, true, cold);
  }

  /** Reads all of the reader's range in reads of {@code step} bytes. */
  private static byte[] readAll(LocalBlockReader r, int step) throws IOException {
    byte[] got = new byte[(int) r.remaining()];
    for (int at = 0, n; at < got.length; at += n) {
      n = r.read(got, at, Math.min(step, got.length - at));
      assertTrue(n > 0, "a read before the end gives bytes");
    }
    assertEquals(-1, r.read(new byte[1], 0, 1));
    return got;
  }

  @Test
  void aColdReplicaIsReadWithODirectFromItsStart() throws Exception {
    int size = (9 << 20) + 1001; // whole requests, then a short last one ending mid-chunk
    byte[] bytes = PluginCluster.random(size, 51);
    Path data = dir.resolve("blk_3");
    Path meta = dir.resolve("blk_3_1001.meta");
    writeReplica(data, meta, bytes, BPC);
    boolean direct = directHere(data);
    for (int step : new int[] {1 << 20, 65536, 4096 + 3, 3 << 20}) {
      for (long from : new long[] {0, 512 * 3, 1000}) {
        dropCache(data);
        long bytes0 = ColdReadAhead.bytes();
        long started0 = ColdReadAhead.started();
        long fallbacks0 = ColdReadAhead.fallbacks();
        byte[] got;
        try (LocalBlockReader r = reader(data, meta, size, from, size - from, true, COLD)) {
          got = readAll(r, step);
        }
        assertArrayEquals(java.util.Arrays.copyOfRange(bytes, (int) from, size), got, "from " + from + " by " + step);
        if (direct) {
          assertEquals(started0 + 1, ColdReadAhead.started(), "one reader read with O_DIRECT");
          assertEquals(fallbacks0, ColdReadAhead.fallbacks());
          // the first request starts at the O_DIRECT block holding the range's first chunk
          long firstRequest = from / 4096 * 4096;
          assertEquals(size - firstRequest, ColdReadAhead.bytes() - bytes0, "every byte from there, once");
        } else {
          assertEquals(fallbacks0 + 1, ColdReadAhead.fallbacks(), "no O_DIRECT here: the page cache, counted");
        }
      }
    }
  }

  /**
   * Cached from its start: the direct reads go on as before; the first one that finds pages not
   * cached reads the rest of its own range through the page cache, and O_DIRECT takes over after it
   * (past what the kernel was asked to read ahead: nothing here).
   */
  @Test
  void aReplicaColdFurtherOnIsReadWithODirectAfterTheMiss() throws Exception {
    int size = 40 << 20;
    byte[] bytes = PluginCluster.random(size, 52);
    Path data = dir.resolve("blk_4");
    Path meta = dir.resolve("blk_4_1001.meta");
    writeReplica(data, meta, bytes, BPC);
    assumeTrue(directHere(data), "O_DIRECT on target/'s filesystem");
    dropCache(data, 3 << 20, 0); // the first 3 MiB stay in the page cache
    long bytes0 = ColdReadAhead.bytes();
    long misses0 = LocalBlockReader.directMisses();
    long direct0 = LocalBlockReader.directBytes();
    byte[] got;
    try (LocalBlockReader r = reader(data, meta, size, 0, size, true, COLD, 0)) {
      got = readAll(r, 1 << 20);
    }
    assertArrayEquals(bytes, got);
    assertEquals(misses0 + 1, LocalBlockReader.directMisses(), "one direct read found the pages not cached");
    assertEquals(3 << 20, LocalBlockReader.directBytes() - direct0, "the cached part straight into the buffer");
    assertEquals(size - (4 << 20), ColdReadAhead.bytes() - bytes0, "O_DIRECT after the read that missed");
  }

  /**
   * Some of the replica cached (its first MiB evicted, the rest not: read before, partly paged out
   * since), or cached at one probed point only: not cold, the page cache serves what it holds and
   * nothing is read with O_DIRECT.
   */
  @Test
  void aReplicaPartlyCachedIsReadThroughThePageCache() throws Exception {
    int size = 24 << 20;
    byte[] bytes = PluginCluster.random(size, 59);
    Path data = dir.resolve("blk_11");
    Path meta = dir.resolve("blk_11_1001.meta");
    writeReplica(data, meta, bytes, BPC);
    long started0 = ColdReadAhead.started();
    long bytes0 = ColdReadAhead.bytes();
    for (long[] evict : new long[][] {{0, 1 << 20}, {0, 18 << 20}}) {
      try (FileChannel ch = FileChannel.open(data, StandardOpenOption.READ)) {
        ch.read(ByteBuffer.allocate(size), 0); // all of it cached
      }
      dropCache(data, evict[0], evict[1]);
      byte[] got;
      try (LocalBlockReader r = reader(data, meta, size, 0, size, true, COLD)) {
        got = readAll(r, 1 << 20);
      }
      assertArrayEquals(bytes, got);
    }
    assertEquals(started0, ColdReadAhead.started(), "no reader went to O_DIRECT");
    assertEquals(bytes0, ColdReadAhead.bytes());
  }

  /** A bad chunk anywhere: the windows' ChecksumException (message, position), on every later read too. */
  @Test
  void aBadChunkIsTheWindowsChecksumException() throws Exception {
    int size = 6 << 20;
    byte[] bytes = PluginCluster.random(size, 53);
    Path data = dir.resolve("blk_5");
    Path meta = dir.resolve("blk_5_1001.meta");
    writeReplica(data, meta, bytes, BPC);
    boolean direct = directHere(data);
    for (int bad : new int[] {100, (1 << 20) + 5000, (3 << 20) - 1, size - 1}) {
      flip(data, bad);
      ChecksumException byWindows;
      try (LocalBlockReader r = reader(data, meta, size, 0, size, true, null)) {
        byWindows = assertThrows(ChecksumException.class, () -> readAll(r, 1 << 20));
      }
      dropCache(data);
      long started0 = ColdReadAhead.started();
      try (LocalBlockReader r = reader(data, meta, size, 0, size, true, COLD)) {
        byte[] got = new byte[size];
        int before = bad / (1 << 20) * (1 << 20); // the windows before the bad one's are handed out
        if (before > 0) {
          r.readFully(got, 0, before);
          assertArrayEquals(java.util.Arrays.copyOf(bytes, before), java.util.Arrays.copyOf(got, before));
        }
        ChecksumException cold = assertThrows(ChecksumException.class, () -> r.readFully(got, before, size - before));
        assertEquals(bad / BPC * BPC, cold.getPos());
        assertEquals(byWindows.getPos(), cold.getPos());
        assertEquals(byWindows.getMessage(), cold.getMessage());
        ChecksumException again = assertThrows(ChecksumException.class, () -> r.read(got, 0, 4096));
        assertEquals(cold.getPos(), again.getPos(), "every later read fails the same way");
      }
      assertEquals(started0 + (direct ? 1 : 0), ColdReadAhead.started());
      flip(data, bad); // good again
    }
  }

  /** A stream that verifies nothing: the bytes on disk, bad chunk and all. */
  @Test
  void unverifiedReadsGetTheBytesOnDisk() throws Exception {
    int size = 5 << 20;
    byte[] bytes = PluginCluster.random(size, 54);
    Path data = dir.resolve("blk_6");
    Path meta = dir.resolve("blk_6_1001.meta");
    writeReplica(data, meta, bytes, BPC);
    flip(data, 777_777);
    dropCache(data);
    byte[] got;
    try (LocalBlockReader r = reader(data, meta, size, 0, size, false, COLD)) {
      got = readAll(r, 1 << 20);
    }
    bytes[777_777] ^= 0x01;
    assertArrayEquals(bytes, got);
  }

  /** Truncated under the reader: an EOFException where the file ends, again on the next read. */
  @Test
  void aTruncatedReplicaIsAnEofException() throws Exception {
    int size = 8 << 20;
    byte[] bytes = PluginCluster.random(size, 55);
    Path data = dir.resolve("blk_7");
    Path meta = dir.resolve("blk_7_1001.meta");
    writeReplica(data, meta, bytes, BPC);
    assumeTrue(directHere(data), "O_DIRECT on target/'s filesystem");
    dropCache(data);
    try (LocalBlockReader r = reader(data, meta, size, 0, size, true, COLD)) {
      byte[] got = new byte[size];
      r.readFully(got, 0, 1 << 20);
      try (FileChannel ch = FileChannel.open(data, StandardOpenOption.WRITE)) {
        ch.truncate(6 << 20);
      }
      EOFException e = assertThrows(EOFException.class, () -> r.readFully(got, 1 << 20, size - (1 << 20)));
      assertTrue(e.getMessage().contains("truncated"), e.getMessage());
      assertThrows(EOFException.class, () -> r.read(got, 0, 4096));
      assertArrayEquals(java.util.Arrays.copyOf(bytes, 1 << 20), java.util.Arrays.copyOf(got, 1 << 20));
    }
  }

  /** Closed with requests in flight: they are waited for, and the descriptors closed (checked after each test). */
  @Test
  void closingWithRequestsInFlightLeavesNothing() throws Exception {
    int size = 16 << 20;
    byte[] bytes = PluginCluster.random(size, 56);
    Path data = dir.resolve("blk_8");
    Path meta = dir.resolve("blk_8_1001.meta");
    writeReplica(data, meta, bytes, BPC);
    for (int i = 0; i < 20; i++) {
      dropCache(data);
      try (LocalBlockReader r = reader(data, meta, size, 0, size, true, COLD)) {
        byte[] got = new byte[4096 * (i + 1)];
        r.readFully(got, 0, got.length);
        assertArrayEquals(java.util.Arrays.copyOf(bytes, got.length), got);
      }
    }
  }

  /**
   * Chunks of 3000 bytes: no request size that is whole O_DIRECT blocks and whole chunks fits 1 MiB,
   * so the reader goes on through the page cache, counted as a fallback; a range shorter than
   * depth x request-bytes never tries.
   */
  @Test
  void whatODirectCannotReadGoesThroughThePageCache() throws Exception {
    int size = 7 << 20;
    byte[] bytes = PluginCluster.random(size, 57);
    Path data = dir.resolve("blk_9");
    Path meta = dir.resolve("blk_9_1001.meta");
    writeReplica(data, meta, bytes, 3000);
    long started0 = ColdReadAhead.started();
    long fallbacks0 = ColdReadAhead.fallbacks();
    byte[] got;
    // A probe's read with RWF_NOWAIT starts the kernel's read-ahead of what it misses; on a loaded
    // machine that I/O can complete before the probe looks, and the replica then reads as cached
    // (the page cache, as it should). So a few tries, each from a dropped cache: a cold replica
    // must be counted in one of them, and every read must return the replica's bytes.
    for (int attempt = 0; attempt < 5 && ColdReadAhead.fallbacks() == fallbacks0; attempt++) {
      dropCache(data);
      try (LocalBlockReader r = reader(data, meta, size, 0, size, true, COLD)) {
        got = readAll(r, 1 << 20);
      }
      assertArrayEquals(bytes, got);
      assertEquals(started0, ColdReadAhead.started(), "O_DIRECT cannot read 3000-byte chunks");
    }
    assertEquals(fallbacks0 + 1, ColdReadAhead.fallbacks(), "counted, once");

    Path data2 = dir.resolve("blk_10");
    Path meta2 = dir.resolve("blk_10_1001.meta");
    writeReplica(data2, meta2, java.util.Arrays.copyOf(bytes, 3 << 20), BPC);
    dropCache(data2);
    fallbacks0 = ColdReadAhead.fallbacks();
    try (LocalBlockReader r = reader(data2, meta2, 3 << 20, 0, 3 << 20, true, COLD)) {
      got = readAll(r, 1 << 20);
    }
    assertArrayEquals(java.util.Arrays.copyOf(bytes, 3 << 20), got);
    assertEquals(started0, ColdReadAhead.started(), "3 MiB is less than 4 requests of 1 MiB");
    assertEquals(fallbacks0, ColdReadAhead.fallbacks());
  }

  /** Through the file system: replicas dropped from the page cache read as stock reads them. */
  @Test
  void aColdFileReadsAsStockReadsIt() throws Exception {
    LocalReadFixture local = new LocalReadFixture("scr-cold-");
    MiniDFSCluster cluster = PluginCluster.start(local.clusterConf(), getClass(), 1);
    RdmaDistributedFileSystem ours = null;
    try {
      DistributedFileSystem stock = cluster.getFileSystem();
      byte[] bytes = PluginCluster.random(5 * PluginCluster.BLOCK + 12345, 58);
      org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path("/cold/file");
      try (FSDataOutputStream out = stock.create(p, (short) 1)) {
        out.write(bytes);
      }
      DFSTestUtil.waitReplication(stock, p, (short) 1);
      Configuration c = local.clientConf(cluster, true, 0, 0);
      c.setBoolean(HrdmaClientKeys.READ_LOCAL_COLD_DIRECT_KEY, true); // off by default
      // blocks of 1 MiB here: two requests of 256 KiB in flight
      c.setInt(HrdmaClientKeys.READ_LOCAL_COLD_DIRECT_DEPTH_KEY, 2);
      c.setInt(HrdmaClientKeys.READ_LOCAL_COLD_DIRECT_REQUEST_BYTES_KEY, 256 * 1024);
      ours = (RdmaDistributedFileSystem) FileSystem.newInstance(cluster.getURI(), c);
      boolean direct = true;
      for (LocatedBlock lb : stock.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks()) {
        for (DatanodeInfo dn : lb.getLocations()) {
          Path f = Path.of(LocalReadFixture.files(cluster, dn, lb).getBlockPath());
          direct &= directHere(f);
          dropCache(f);
        }
      }
      byte[] byStock = new byte[bytes.length];
      try (FSDataInputStream in = stock.open(p)) {
        in.readFully(byStock);
      }
      // A cold probe's read with RWF_NOWAIT starts the kernel's read-ahead of what it misses; on a
      // loaded machine that I/O can finish before the probe looks, and the block then reads through
      // the page cache, as it should. So a few tries, each from dropped caches: in one of them every
      // whole block must go with O_DIRECT, and every read must return the file's bytes.
      long directBytes = -1;
      for (int attempt = 0; attempt < 5 && directBytes != 5L * PluginCluster.BLOCK; attempt++) {
        for (LocatedBlock lb : stock.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks()) {
          for (DatanodeInfo dn : lb.getLocations()) {
            dropCache(Path.of(LocalReadFixture.files(cluster, dn, lb).getBlockPath()));
          }
        }
        ours.blockClient().replicas().clear();
        long bytes0 = ColdReadAhead.bytes();
        long local0 = ours.localBytesRead();
        byte[] got = new byte[bytes.length];
        try (FSDataInputStream in = ours.open(p)) {
          for (int at = 0, n; at < got.length; at += n) {
            n = in.read(got, at, Math.min(1 << 20, got.length - at));
            assertTrue(n > 0);
          }
          assertEquals(-1, in.read());
        }
        assertArrayEquals(byStock, got, "ours reads what stock reads");
        assertArrayEquals(bytes, got);
        assertEquals(bytes.length, ours.localBytesRead() - local0, "every byte short-circuit");
        directBytes = ColdReadAhead.bytes() - bytes0;
        if (!direct) {
          break;
        }
      }
      if (direct) {
        // the last block (12345 bytes) is less than two requests: through the page cache
        assertEquals(5L * PluginCluster.BLOCK, directBytes, "the whole blocks with O_DIRECT");
      }
      ours.blockClient().replicas().clear();
    } finally {
      if (ours != null) {
        ours.close();
      }
      PluginCluster.shutdown(null, cluster);
    }
  }

  private static void flip(Path f, long at) throws IOException {
    try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
      raf.seek(at);
      int v = raf.read();
      raf.seek(at);
      raf.write(v ^ 0x01);
    }
  }

  /** A replica's block and .meta files (CRC32C, {@code bpc}-byte chunks) holding {@code bytes}. */
  static void writeReplica(Path data, Path meta, byte[] bytes, int bpc) throws IOException {
    Files.write(data, bytes);
    DataChecksum c = DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, bpc);
    try (OutputStream os = Files.newOutputStream(meta); DataOutputStream out = new DataOutputStream(os)) {
      BlockMetadataHeader.writeHeader(out, c);
      CRC32C crc = new CRC32C();
      for (int at = 0; at < bytes.length; at += bpc) {
        crc.reset();
        crc.update(ByteBuffer.wrap(bytes, at, Math.min(bpc, bytes.length - at)));
        out.writeInt((int) crc.getValue());
      }
    }
  }
}
