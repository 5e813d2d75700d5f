package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.ReadOption;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.CacheDirectiveInfo;
import org.apache.hadoop.hdfs.protocol.CachePoolInfo;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.io.ByteBufferPool;
import org.apache.hadoop.io.ElasticByteBufferPool;
import org.apache.hadoop.io.nativeio.NativeIO;
import org.apache.hadoop.util.NativeCodeLoader;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.nativelib.NativeFiles;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * Zero-copy reads ({@code read(ByteBufferPool, int, EnumSet<ReadOption>)})
 * and centralized cache management on a MiniDFSCluster whose DataNodes all
 * run on this host: slices of mapped replicas equal to what stock reads, at
 * every kind of offset; bad chunks caught and the replica reported, unless
 * SKIP_CHECKSUMS; replicas the DataNode caches read with no checksum work;
 * copying fallbacks counted; every buffer given back leaves nothing mapped.
 *
 * <p>Stock's own zero-copy reads need its short-circuit reads (libhadoop's
 * domain sockets), which this machine lacks: on this cluster stock's
 * {@code read(ByteBufferPool, ...)} copies, and is the content reference.
 * Without libhadoop the DataNodes cannot mlock either; they cache through
 * Hadoop's {@code NoMlockCacheManipulator} (what Hadoop's own cache tests
 * use), which maps and verifies as usual and only skips the mlock.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class ZeroCopyReadTest {
  private static final int BLOCK = PluginCluster.BLOCK;
  private static final EnumSet<ReadOption> VERIFY = EnumSet.noneOf(ReadOption.class);
  private static final EnumSet<ReadOption> SKIP = EnumSet.of(ReadOption.SKIP_CHECKSUMS);
  /** What each DataNode may cache (3 of them within this machine's 8 MiB `ulimit -l` when they really mlock). */
  private static final long LOCKED = 2L * BLOCK;
  /** Small windows verified ahead: every read crosses many of them. */
  private static final int WINDOW = 16 * 1024;
  private static final int AHEAD = 3;

  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private RdmaDistributedFileSystem fs;
  private LocalReadFixture local;
  private NativeIO.POSIX.CacheManipulator manipulator;
  private final ByteBufferPool pool = new ElasticByteBufferPool();

  @BeforeAll
  void start() throws Exception {
    manipulator = NativeIO.POSIX.getCacheManipulator();
    if (!NativeCodeLoader.isNativeCodeLoaded()) {
      NativeIO.POSIX.setCacheManipulator(new NativeIO.POSIX.NoMlockCacheManipulator());
    }
    local = new LocalReadFixture("zcr-");
    Configuration conf = local.clusterConf();
    conf.setLong(DFSConfigKeys.DFS_DATANODE_MAX_LOCKED_MEMORY_KEY, LOCKED);
    conf.setLong(DFSConfigKeys.DFS_NAMENODE_PATH_BASED_CACHE_REFRESH_INTERVAL_MS, 200);
    conf.setLong(DFSConfigKeys.DFS_CACHEREPORT_INTERVAL_MSEC_KEY, 300);
    cluster = PluginCluster.start(conf, getClass(), 3);
    stock = cluster.getFileSystem();
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(),
        local.clientConf(cluster, true, WINDOW, AHEAD));
  }

  @AfterAll
  void stop() throws IOException {
    try {
      PluginCluster.shutdown(fs, cluster);
    } finally {
      NativeIO.POSIX.setCacheManipulator(manipulator);
    }
  }

  /**
   * Every buffer was given back: no replica mapped, no descriptor held once the replicas the client
   * keeps open (a small block's, read as a positional read is) are dropped.
   */
  @AfterEach
  void nothingLeaks() throws IOException {
    fs.blockClient().replicas().clear();
    assertEquals(0, RdmaDistributedFileSystem.zeroCopyMappings(), "replicas mapped for zero-copy reads");
    assertEquals(0, NativeFiles.mappedBytes(), "bytes mapped");
    assertEquals(0, NativeFiles.fdsHeld(), "descriptors held");
  }

  private Path write(String name, byte[] data) throws Exception {
    Path p = new Path(name);
    try (FSDataOutputStream out = stock.create(p, (short) 3)) {
      out.write(data);
    }
    DFSTestUtil.waitReplication(stock, p, (short) 3);
    return p;
  }

  private static byte[] bytes(ByteBuffer b) {
    byte[] a = new byte[b.remaining()];
    b.duplicate().get(a);
    return a;
  }

  /** Reads the whole file by zero-copy reads of at most {@code max} bytes, releasing each buffer. */
  private byte[] readAllZeroCopy(FSDataInputStream in, int max, EnumSet<ReadOption> opts) throws IOException {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    ByteBuffer b;
    while ((b = in.read(pool, max, opts)) != null) {
      assertTrue(b.remaining() > 0 && b.remaining() <= max, "a buffer of 1 to " + max + " bytes: " + b);
      out.write(bytes(b));
      in.releaseBuffer(b);
    }
    return out.toByteArray();
  }

  @Test
  void slicesEqualWhatStockReadsAtEveryKindOfOffset() throws Exception {
    byte[] data = PluginCluster.random(3 * BLOCK + 1001, 51);
    Path p = write("/zc/content", data);
    long zc0 = fs.zeroCopyBytesRead();
    long fallbacks0 = fs.zeroCopyFallbacks();
    long rdma0 = fs.rdmaBytesRead();
    long unverified0 = fs.localBytesUnverified();
    long[] offsets = {0, 1, 511, 512, 513, BLOCK - 1, BLOCK, BLOCK + 1, 2L * BLOCK - 700, 2L * BLOCK + 4096,
        3L * BLOCK - 1, 3L * BLOCK, data.length - 1, 777_777};
    int[] maxes = {1, 100, 4096, 65_536, BLOCK, 3 * BLOCK};
    long handed = 0;
    try (FSDataInputStream in = fs.open(p); FSDataInputStream ref = stock.open(p)) {
      for (long off : offsets) {
        for (int max : maxes) {
          in.seek(off);
          ByteBuffer b = in.read(pool, max, VERIFY);
          long blockEnd = (off / BLOCK + 1) * BLOCK;
          int expect = (int) Math.min(max, Math.min(blockEnd, data.length) - off);
          assertEquals(expect, b.remaining(), "at " + off + ", at most " + max + ": the rest of the block or max");
          assertTrue(b.isDirect() && b.isReadOnly(), "a read-only view of the mapping: " + b);
          assertEquals(off + expect, in.getPos());
          // stock's read of the same bytes (its zero-copy read copies here: no libhadoop short-circuit)
          ref.seek(off);
          byte[] byStock = new byte[expect];
          int got = 0;
          while (got < expect) {
            ByteBuffer s = ref.read(pool, expect - got, VERIFY);
            s.get(byStock, got, s.remaining());
            got = (int) (ref.getPos() - off);
            ref.releaseBuffer(s);
          }
          assertArrayEquals(byStock, bytes(b), "at " + off + ", max " + max);
          assertArrayEquals(Arrays.copyOfRange(data, (int) off, (int) off + expect), bytes(b));
          in.releaseBuffer(b);
          handed += expect;
        }
      }
      in.seek(data.length);
      assertNull(in.read(pool, 10, VERIFY), "null at the end, as stock");
      ByteBuffer empty = in.read(pool, 0, VERIFY);
      assertEquals(0, empty.remaining());
      in.releaseBuffer(empty);
      assertEquals(handed, ((HdfsDataInputStream) in).getReadStatistics().getTotalZeroCopyBytesRead(),
          "counted as stock counts zero-copy bytes");
      assertEquals(0, ((HdfsDataInputStream) ref).getReadStatistics().getTotalZeroCopyBytesRead(),
          "stock copied here");
    }
    assertEquals(handed, fs.zeroCopyBytesRead() - zc0);
    assertEquals(fallbacks0, fs.zeroCopyFallbacks(), "no copying fallback");
    assertEquals(rdma0, fs.rdmaBytesRead(), "nothing over the transport");
    assertEquals(unverified0, fs.localBytesUnverified(), "every byte verified");

    long ahead0 = fs.blockClient().localVerifier().getCompletedTaskCount();
    try (FSDataInputStream in = fs.open(p)) {
      assertArrayEquals(data, readAllZeroCopy(in, 3000, VERIFY), "sequential zero-copy reads, whole file");
    }
    assertTrue(fs.blockClient().localVerifier().getCompletedTaskCount() > ahead0,
        "windows verified ahead by the verifier");
    try (FSDataInputStream in = fs.open(p)) {
      assertArrayEquals(data, readAllZeroCopy(in, Integer.MAX_VALUE, SKIP), "SKIP_CHECKSUMS: the same bytes");
    }
    assertEquals(unverified0 + data.length, fs.localBytesUnverified(), "SKIP_CHECKSUMS: no checksum work");
  }

  /** Zero-copy, array and buffer reads mixed on one stream read on where the last one ended. */
  @Test
  void zeroCopyAndCopyingReadsMix() throws Exception {
    byte[] data = PluginCluster.random(2 * BLOCK + 3, 52);
    Path p = write("/zc/mixed", data);
    byte[] got = new byte[data.length];
    int at = 0;
    try (FSDataInputStream in = fs.open(p)) {
      int[] steps = {100, 70_000, 5, BLOCK, 12_345, 1_000_000};
      int i = 0;
      while (at < data.length) {
        int step = Math.min(steps[i % steps.length], data.length - at);
        switch (i++ % 3) {
          case 0 -> {
            ByteBuffer b = in.read(pool, step, VERIFY);
            b.get(got, at, b.remaining());
            at = (int) in.getPos();
            in.releaseBuffer(b);
          }
          case 1 -> at += in.read(got, at, step);
          default -> {
            ByteBuffer b = ByteBuffer.allocate(step);
            at += in.read(b);
            b.flip();
            b.get(got, at - b.limit(), b.limit());
          }
        }
        assertEquals(at, in.getPos());
      }
    }
    assertArrayEquals(data, got);
  }

  /**
   * Buffers outlive the stream: after close they still hold the bytes (their
   * replica stays mapped), and the last release unmaps it. A buffer the
   * stream did not hand out is refused.
   */
  @Test
  void buffersAreValidUntilReleasedAndTheLastReleaseUnmaps() throws Exception {
    byte[] data = PluginCluster.random(2 * BLOCK, 53);
    Path p = write("/zc/release", data);
    List<ByteBuffer> held = new ArrayList<>();
    FSDataInputStream in = fs.open(p);
    for (int i = 0; i < 6; i++) {
      held.add(in.read(pool, BLOCK / 3, VERIFY)); // two blocks' replicas mapped, buffers across both
    }
    RdmaInputStream ours = (RdmaInputStream) in.getWrappedStream();
    assertEquals(6, ours.buffersOut());
    assertEquals(2, RdmaDistributedFileSystem.zeroCopyMappings(), "one mapping per block, shared by its slices");
    assertThrows(IllegalArgumentException.class, () -> in.releaseBuffer(ByteBuffer.allocateDirect(10)));
    in.close();
    assertTrue(NativeFiles.mappedBytes() > 0, "the buffers' replicas stay mapped after close");
    int at = 0;
    for (ByteBuffer b : held) {
      byte[] a = bytes(b);
      assertArrayEquals(Arrays.copyOfRange(data, at, at + a.length), a, "still the bytes after close");
      at += a.length;
    }
    for (ByteBuffer b : held) {
      in.releaseBuffer(b);
    }
    assertEquals(0, ours.buffersOut());
    assertThrows(IllegalArgumentException.class, () -> in.releaseBuffer(held.get(0)), "released twice");
    // nothingLeaks: both replicas unmapped
  }

  /**
   * Bad chunks: with checksums on, a bad replica is left for a good one (the
   * bytes are right) and reported; with every replica bad the caller gets the
   * ChecksumException. With SKIP_CHECKSUMS nothing is verified, so the bad
   * byte is handed out (stock hands out mapped bytes unverified too).
   */
  @Test
  void badChunksAreCaughtAndReportedUnlessChecksumsAreSkipped() throws Exception {
    byte[] data = PluginCluster.random(BLOCK / 2, 54);
    Path p = write("/zc/corrupt2", data);
    LocatedBlock lb = stock.getClient().getLocatedBlocks(p.toString(), 0).get(0);
    long errors0 = fs.checksumErrors();
    long reported0 = fs.badReplicasReported();
    try (FSDataInputStream in = fs.open(p)) {
      // maps a replica: its first window verified, the next AHEAD windows handed to the verifier
      ByteBuffer head = in.read(pool, 1, VERIFY);
      DatanodeInfo mappedOn = ((RdmaInputStream) in.getWrappedStream()).mappedDataNode();
      // beyond them; the mapping sees it (the page cache)
      LocalReadFixture.flip(cluster, mappedOn, lb, (1 + AHEAD) * WINDOW + 4000);
      byte[] rest = readAllZeroCopy(in, BLOCK, VERIFY);
      assertEquals(data[0], head.get(0));
      in.releaseBuffer(head);
      assertArrayEquals(Arrays.copyOfRange(data, 1, data.length), rest, "served by another replica");
      assertFalse(mappedOn.equals(((RdmaInputStream) in.getWrappedStream()).mappedDataNode()));
    }
    assertEquals(errors0 + 1, fs.checksumErrors(), "the bad replica met once");
    assertEquals(reported0 + 1, fs.badReplicasReported(), "and reported");

    Path all = write("/zc/corrupt3", data);
    LocatedBlock lb3 = stock.getClient().getLocatedBlocks(all.toString(), 0).get(0);
    for (DatanodeInfo dn : lb3.getLocations()) {
      LocalReadFixture.flip(cluster, dn, lb3, 5000);
    }
    long fallbacks0 = fs.zeroCopyFallbacks();
    try (FSDataInputStream in = fs.open(all)) {
      assertThrows(ChecksumException.class, () -> in.read(pool, BLOCK, VERIFY));
    }
    assertEquals(fallbacks0 + 1, fs.zeroCopyFallbacks(), "every local replica bad: the copying read, which failed too");
    byte[] flipped = data.clone();
    flipped[5000] ^= 0x01;
    try (FSDataInputStream in = fs.open(all)) {
      ByteBuffer b = in.read(pool, BLOCK, SKIP);
      assertArrayEquals(flipped, bytes(b), "SKIP_CHECKSUMS: handed out unverified, the bad byte too");
      in.releaseBuffer(b);
    }
  }

  /** Short-circuit off, or stock's dfs.client.mmap.enabled false: copies into the pool's buffers, counted. */
  @Test
  void withoutAMappableReplicaTheReadCopiesAndIsCounted() throws Exception {
    byte[] data = PluginCluster.random(BLOCK + 5000, 55);
    Path p = write("/zc/fallback", data);
    Configuration noMmap = local.clientConf(cluster, true, WINDOW, AHEAD);
    noMmap.setBoolean("dfs.client.mmap.enabled", false);
    for (Configuration c : List.of(local.clientConf(cluster, false, WINDOW, AHEAD), noMmap)) {
      List<ByteBuffer> given = new ArrayList<>();
      ByteBufferPool own = new ElasticByteBufferPool() {
        @Override
        public synchronized void putBuffer(ByteBuffer buffer) {
          given.add(buffer);
          super.putBuffer(buffer);
        }
      };
      try (RdmaDistributedFileSystem other = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
          FSDataInputStream in = other.open(p)) {
        ByteBuffer b = in.read(own, 3000, VERIFY);
        assertEquals(3000, b.remaining());
        assertArrayEquals(Arrays.copyOf(data, 3000), bytes(b));
        in.releaseBuffer(b);
        assertEquals(1, given.size());
        assertSame(b, given.get(0), "given back to the pool");
        assertArrayEquals(Arrays.copyOfRange(data, 3000, data.length), readAllZeroCopy(in, 100_000, VERIFY));
        assertTrue(other.zeroCopyFallbacks() >= 2, "each a counted fallback: " + other.zeroCopyFallbacks());
        assertEquals(0, other.zeroCopyBytesRead());
        assertEquals(0, ((HdfsDataInputStream) in).getReadStatistics().getTotalZeroCopyBytesRead());
      }
    }
  }

  /**
   * Centralized cache management: a file cached by a cache directive (one
   * replica per block) is read, zero-copy and copying, from the replica the
   * DataNode caches, with no checksum work: the DataNode said so in the
   * short-circuit reply. Proof that nothing was verified: a byte changed in
   * the cached replica afterwards is handed out as it is (stock trusts a
   * cached replica the same way; the DataNode verified it when caching).
   */
  @Test
  void cachedReplicasAreReadWithoutChecksumWork() throws Exception {
    byte[] data = PluginCluster.random(BLOCK + 4096, 56);
    Path p = write("/zc/cached", data);
    stock.addCachePool(new CachePoolInfo("zc"));
    long id = stock.addCacheDirective(new CacheDirectiveInfo.Builder().setPath(p).setPool("zc")
        .setReplication((short) 1).build());
    try {
      List<LocatedBlock> blocks = awaitCached(p, 2);
      long cachedGrants0 = grantedCached();
      long unverified0 = fs.localBytesUnverified();
      long zc0 = fs.zeroCopyBytesRead();
      try (FSDataInputStream in = fs.open(p)) {
        assertArrayEquals(data, readAllZeroCopy(in, BLOCK, VERIFY), "no SKIP_CHECKSUMS given");
      }
      assertEquals(data.length, fs.zeroCopyBytesRead() - zc0);
      assertEquals(data.length, fs.localBytesUnverified() - unverified0, "no checksum work: the replicas are cached");
      assertTrue(grantedCached() - cachedGrants0 >= 2, "the DataNodes said cached for both blocks");

      byte[] got = new byte[data.length];
      try (FSDataInputStream in = fs.open(p)) {
        in.readFully(got); // the copying short-circuit reader skips the checksums of a cached replica too
      }
      assertArrayEquals(data, got);
      assertEquals(2L * data.length, fs.localBytesUnverified() - unverified0);

      LocatedBlock first = blocks.get(0);
      LocalReadFixture.flip(cluster, first.getCachedLocations()[0], first, 10);
      byte[] flipped = data.clone();
      flipped[10] ^= 0x01;
      try (FSDataInputStream in = fs.open(p)) {
        ByteBuffer b = in.read(pool, 100, VERIFY);
        assertArrayEquals(Arrays.copyOf(flipped, 100), bytes(b), "not verified: the changed byte as it is");
        in.releaseBuffer(b);
      }
    } finally {
      stock.removeCacheDirective(id);
      stock.removeCachePool("zc");
    }
  }

  private long grantedCached() {
    return RdmaDataNodePlugin.running().stream().mapToLong(RdmaDataNodePlugin::shortCircuitGrantedCached).sum();
  }

  /** Waits until each of {@code p}'s {@code n} blocks is cached on a DataNode, as the NameNode reports it. */
  private List<LocatedBlock> awaitCached(Path p, int n) throws Exception {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (true) {
      List<LocatedBlock> lbs = stock.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks();
      if (lbs.size() == n && lbs.stream().allMatch(lb -> lb.getCachedLocations().length > 0)) {
        return lbs;
      }
      assertTrue(System.nanoTime() < end, "not cached within 60 s: " + lbs);
      Thread.sleep(100);
    }
  }

  @Test
  void zeroCopyReadsOfAClosedStreamFail() throws Exception {
    Path p = write("/zc/closed", PluginCluster.random(1000, 57));
    FSDataInputStream in = fs.open(p);
    in.close();
    assertThrows(IOException.class, () -> in.read(pool, 10, VERIFY));
  }
}
