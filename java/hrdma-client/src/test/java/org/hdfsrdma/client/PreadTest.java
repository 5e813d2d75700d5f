package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
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
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.nativelib.NativeFiles;
import org.hdfsrdma.protocol.ShortCircuitSocket;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.Timeout;

/**
 * Positional reads (the HBase pattern) on a MiniDFSCluster whose DataNodes all
 * run on this host, short-circuit on: content equal to what the stock client
 * reads at random offsets, block boundaries and the end of the file; many
 * threads on one stream; replicas kept mapped (one exchange per replica, not
 * per read); checksum errors caught, retried on fresh descriptors, reported;
 * fallbacks counted; no descriptor, mapping or buffer left.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
@ExtendWith(ThreadDumpOnTimeout.class) // sixteenThreadsOnOneStream hung once in a CI run
class PreadTest {
  private static final int BLOCK = PluginCluster.BLOCK;
  private static final int BPC = PluginCluster.BPC;

  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private RdmaDistributedFileSystem fs;
  private LocalReadFixture local;

  @BeforeAll
  void start() throws Exception {
    local = new LocalReadFixture("scr-");
    cluster = PluginCluster.start(local.clusterConf(), getClass(), 3);
    stock = cluster.getFileSystem();
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), local.clientConf(cluster, true, 0, 0));
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  /** Every descriptor closed, nothing mapped but the kept replicas (gone when dropped), no buffer out. */
  @AfterEach
  void nothingLeaks() throws IOException {
    LocalReplicas kept = fs.blockClient().replicas();
    assertEquals(kept.filesOpen(), NativeFiles.fdsHeld(), "descriptors held beyond the replicas kept");
    assertEquals(0, NativeFiles.mappedBytes(), "bytes mapped");
    kept.clear();
    assertEquals(0, NativeFiles.fdsHeld(), "descriptors held once the kept replicas are dropped");
    assertEquals(0, kept.sumBytes(), "sums held once the kept replicas are dropped");
    assertEquals(0, fs.blockClient().buffersOutstanding(), "transport buffers out");
  }

  private static long granted() {
    return RdmaDataNodePlugin.running().stream().mapToLong(RdmaDataNodePlugin::shortCircuitGranted).sum();
  }

  private Path writeStock(String name, byte[] data) throws Exception {
    Path p = new Path(name);
    try (FSDataOutputStream out = stock.create(p, (short) 3)) {
      out.write(data);
    }
    DFSTestUtil.waitReplication(stock, p, (short) 3);
    return p;
  }

  /** What the stock client reads at {@code pos} (at most {@code len} bytes; the count first). */
  private byte[] stockPread(Path p, long pos, int len) throws IOException {
    try (FSDataInputStream in = stock.open(p)) {
      byte[] b = new byte[len];
      int n = in.read(pos, b, 0, len);
      return n < 0 ? null : Arrays.copyOf(b, n);
    }
  }

  /** A short read at the end of the file returns the short count; at or past the end -1. */
  private static byte[] oursPread(FSDataInputStream in, long pos, int len, int how) throws IOException {
    if (how == 0) {
      byte[] b = new byte[len];
      int n = in.read(pos, b, 0, len);
      return n < 0 ? null : Arrays.copyOf(b, n);
    }
    ByteBuffer bb = how == 1 ? ByteBuffer.allocate(len + 9) : ByteBuffer.allocateDirect(len + 9);
    bb.position(5).limit(5 + len);
    int n = in.read(pos, bb);
    if (n < 0) {
      return null;
    }
    assertEquals(5 + n, bb.position(), "the buffer moved past the bytes read");
    byte[] out = new byte[n];
    bb.flip().position(5);
    bb.get(out);
    return out;
  }

  @Test
  void randomOffsetsBlockBoundariesAndTheEndReadAsStockReads() throws Exception {
    byte[] data = PluginCluster.random(3 * BLOCK + 1001, 51);
    long len = data.length;
    Path p = writeStock("/pread/a", data);
    List<long[]> reads = new ArrayList<>(); // {position, length}
    Random r = new Random(52);
    for (int i = 0; i < 300; i++) {
      int[] sizes = {1, 100, BPC - 1, BPC, BPC + 1, 4096, 65536, BLOCK / 2 + 7};
      int n = sizes[r.nextInt(sizes.length)];
      reads.add(new long[] {(long) (r.nextDouble() * len), n});
    }
    for (long b = BLOCK; b < len; b += BLOCK) { // across each block boundary, on it, just before it
      reads.add(new long[] {b - 300, 777});
      reads.add(new long[] {b, 1});
      reads.add(new long[] {b - 1, 2});
      reads.add(new long[] {b - BPC, BPC});
    }
    reads.add(new long[] {0, 1});
    reads.add(new long[] {0, (int) len}); // the whole file at once
    reads.add(new long[] {len - 1, 1});
    reads.add(new long[] {len - 10, 100}); // short at the end
    long granted0 = granted();
    long local0 = fs.localBytesRead();
    long rdma0 = fs.rdmaBytesRead();
    long opened0 = fs.blockClient().replicas().opened();
    long expected = 0;
    try (FSDataInputStream in = fs.open(p)) {
      for (int i = 0; i < reads.size(); i++) {
        long pos = reads.get(i)[0];
        int n = (int) reads.get(i)[1];
        byte[] want = stockPread(p, pos, n);
        byte[] got = oursPread(in, pos, n, i % 3);
        assertArrayEquals(want, got, "at " + pos + ", " + n + " bytes, sink " + i % 3);
        assertArrayEquals(Arrays.copyOfRange(data, (int) pos, (int) Math.min(len, pos + n)), got);
        expected += got.length;
      }
      assertEquals(0, in.getPos(), "positional reads leave the position alone");
      assertEquals(-1, in.read(len, new byte[10], 0, 10), "at the end");
      assertEquals(-1, in.read(len + 5, ByteBuffer.allocate(10)), "past the end");
      assertEquals(0, in.read(len - 5, new byte[0], 0, 0), "an empty read");
      assertThrows(EOFException.class, () -> in.readFully(len - 5, new byte[10]));
      assertThrows(EOFException.class, () -> in.readFully(len - 5, ByteBuffer.allocate(10)));
      byte[] tail = new byte[5];
      in.readFully(len - 5, tail);
      assertArrayEquals(Arrays.copyOfRange(data, (int) len - 5, (int) len), tail);
      expected += 5;
    }
    assertEquals(expected, fs.localBytesRead() - local0, "every byte by short-circuit");
    assertEquals(rdma0, fs.rdmaBytesRead(), "nothing over the transport");
    long opened = fs.blockClient().replicas().opened() - opened0;
    assertTrue(opened >= 4 && opened <= 4 * 3, "one exchange per replica read, not per read: " + opened);
    assertEquals(opened, granted() - granted0, "the DataNodes handed over only those replicas' files");
  }

  /**
   * Sixteen threads pread one stream while a seventeenth reads it
   * sequentially and another keeps dropping the kept replicas: every byte is
   * right, and no read meets a replica unmapped under it.
   */
  @Test
  void sixteenThreadsOnOneStream() throws Exception {
    byte[] data = PluginCluster.random(4 * BLOCK - 3333, 53);
    Path p = writeStock("/pread/threads", data);
    ExecutorService pool = Executors.newFixedThreadPool(18);
    AtomicBoolean stop = new AtomicBoolean();
    long local0 = fs.localBytesRead();
    long rdma0 = fs.rdmaBytesRead();
    long fallbacks0 = fs.localFallbacks();
    try (FSDataInputStream in = fs.open(p)) {
      List<Future<Long>> readers = new ArrayList<>();
      for (int t = 0; t < 16; t++) {
        long seed = 100 + t;
        readers.add(pool.submit(() -> {
          Random r = new Random(seed);
          byte[] b = new byte[70_000];
          long bytes = 0;
          for (int i = 0; i < 300; i++) {
            int n = 1 + r.nextInt(r.nextBoolean() ? 4096 : b.length);
            int pos = r.nextInt(data.length - n + 1);
            if (i % 2 == 0) {
              in.readFully(pos, b, 0, n);
              for (int k = 0; k < n; k++) {
                if (b[k] != data[pos + k]) {
                  throw new AssertionError("thread " + seed + ": byte " + (pos + k) + " differs");
                }
              }
            } else {
              ByteBuffer bb = ByteBuffer.allocateDirect(n);
              in.readFully(pos, bb);
              bb.flip();
              for (int k = 0; k < n; k++) {
                if (bb.get(k) != data[pos + k]) {
                  throw new AssertionError("thread " + seed + ": byte " + (pos + k) + " differs (buffer)");
                }
              }
            }
            bytes += n;
          }
          return bytes;
        }));
      }
      Future<Long> sequential = pool.submit(() -> {
        byte[] all = new byte[data.length];
        in.seek(0);
        in.readFully(all);
        assertArrayEquals(data, all, "the sequential reader beside them");
        return (long) all.length;
      });
      Future<?> dropper = pool.submit(() -> {
        while (!stop.get()) {
          fs.blockClient().replicas().clear();
          Thread.sleep(2);
        }
        return null;
      });
      long total = 0;
      for (Future<Long> f : readers) {
        total += f.get();
      }
      total += sequential.get();
      stop.set(true);
      dropper.get();
      // the dropper makes exchanges constant: on a loaded machine one may time out, and that read
      // goes over the transport, counted as a fallback
      long overTransport = fs.rdmaBytesRead() - rdma0;
      assertEquals(total, fs.localBytesRead() - local0 + overTransport, "every byte counted once");
      assertTrue(overTransport == 0 || fs.localFallbacks() > fallbacks0, "transport bytes only after a fallback");
      assertTrue(fs.localBytesRead() - local0 > total / 2, "short-circuit served most");
    } finally {
      stop.set(true);
      pool.shutdownNow();
    }
  }

  /** The DataNode whose replica of {@code lb} the client keeps mapped (the one its reads took). */
  private DatanodeInfo keptReplica(LocatedBlock lb) throws IOException {
    List<String> uuids = fs.blockClient().replicas().keys().stream()
        .filter(k -> k.blockId() == lb.getBlock().getBlockId()).map(LocalReplicas.Key::datanodeUuid).toList();
    assertEquals(1, uuids.size(), "kept: " + uuids);
    return Arrays.stream(lb.getLocations()).filter(d -> d.getDatanodeUuid().equals(uuids.get(0))).findFirst()
        .orElseThrow();
  }

  /**
   * A replica kept mapped goes bad after it was read: the next positional read
   * of that chunk finds it, asks for the replica once more (it might be an old
   * view), finds it again, counts and reports it and reads another replica;
   * ranges off the bad chunk never notice. With every replica bad the caller
   * gets the ChecksumException, and a later read one naming each replica with its failure.
   */
  @Test
  void checksumErrorsAreCaughtRetriedFreshReportedAndAnotherReplicaServes() throws Exception {
    byte[] data = PluginCluster.random(BLOCK / 2, 54);
    Path p = writeStock("/pread/corrupt", data);
    LocatedBlock lb = stock.getClient().getLocatedBlocks(p.toString(), 0).get(0);
    long errors0 = fs.checksumErrors();
    long reported0 = fs.badReplicasReported();
    long stale0 = fs.blockClient().replicas().staleRetries();
    try (FSDataInputStream in = fs.open(p)) {
      byte[] b = new byte[2000];
      in.readFully(4000, b);
      DatanodeInfo first = keptReplica(lb);
      LocalReadFixture.flip(cluster, first, lb, 5000);
      in.readFully(20 * BPC, b); // another chunk: fine
      assertArrayEquals(Arrays.copyOfRange(data, 20 * BPC, 20 * BPC + 2000), b);
      assertEquals(errors0, fs.checksumErrors());
      in.readFully(4000, b); // the bad chunk
      assertArrayEquals(Arrays.copyOfRange(data, 4000, 6000), b, "served by another replica");
      assertEquals(stale0 + 1, fs.blockClient().replicas().staleRetries(), "asked for once more first");
      assertEquals(errors0 + 1, fs.checksumErrors());
      assertEquals(reported0 + 1, fs.badReplicasReported());
      assertFalse(keptReplica(lb).getDatanodeUuid().equals(first.getDatanodeUuid()), "the bad one left the cache");
    }

    Path all = writeStock("/pread/corrupt-all", data);
    LocatedBlock lb3 = stock.getClient().getLocatedBlocks(all.toString(), 0).get(0);
    for (DatanodeInfo dn : lb3.getLocations()) {
      LocalReadFixture.flip(cluster, dn, lb3, 5000);
    }
    try (FSDataInputStream in = fs.open(all)) {
      byte[] b = new byte[100];
      in.readFully(BPC * 30, b);
      assertArrayEquals(Arrays.copyOfRange(data, BPC * 30, BPC * 30 + 100), b);
      ChecksumException e = assertThrows(ChecksumException.class, () -> in.readFully(4999, new byte[3]));
      assertEquals(5000 / BPC * BPC, e.getPos(), "at the bad chunk");
      // every replica known bad before this read: each one named with its own first failure
      ChecksumException again = assertThrows(ChecksumException.class,
          () -> in.read(4999, ByteBuffer.allocateDirect(3)));
      assertEquals(5000 / BPC * BPC, again.getPos(), "at the bad chunk");
      for (DatanodeInfo dn : lb3.getLocations()) {
        assertTrue(again.getMessage().contains(dn.getDatanodeUuid()), again.getMessage());
      }
      assertInstanceOf(ChecksumException.class, again.getCause(), again.getMessage());
      assertEquals(lb3.getLocations().length - 1, again.getSuppressed().length, again.getMessage());
      assertTrue(again.getMessage().contains(again.getCause().getMessage()), again.getMessage());
    }
  }

  /** No short-circuit socket where the client looks: reads go over the transport, counted. */
  @Test
  void withoutTheSocketPositionalReadsGoOverTheTransportCounted() throws Exception {
    byte[] data = PluginCluster.random(BLOCK + 5000, 55);
    Path p = writeStock("/pread/no-socket", data);
    Configuration c = local.clientConf(cluster, true, 0, 0);
    c.set(ShortCircuitSocket.PATH_KEY, local.socketDir.resolve("nobody-listens-_PORT.sock").toString());
    try (RdmaDistributedFileSystem other = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
        FSDataInputStream in = other.open(p)) {
      byte[] b = new byte[3000];
      in.readFully(BLOCK - 1000, b);
      assertArrayEquals(Arrays.copyOfRange(data, BLOCK - 1000, BLOCK + 2000), b);
      in.readFully(10, b);
      assertArrayEquals(Arrays.copyOfRange(data, 10, 3010), b);
      assertEquals(0, other.localBytesRead());
      assertEquals(6000, other.rdmaBytesRead());
      assertTrue(other.localFallbacks() >= 1, "counted");
      assertEquals(0, other.blockClient().replicas().size());
    }
  }

  /**
   * Kept replicas are bounded (the least recently used go), expire, and are
   * all unmapped when the client closes; with none kept every positional
   * read asks the DataNode again.
   */
  @Test
  void keptReplicasAreBoundedExpireAndGoWithTheClient() throws Exception {
    byte[] data = PluginCluster.random(4 * BLOCK, 56);
    Path p = writeStock("/pread/bounded", data);
    Configuration c = local.clientConf(cluster, true, 0, 0);
    c.setInt(RdmaBlockClient.LOCAL_CACHED_REPLICAS_KEY, 2);
    RdmaDistributedFileSystem other = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
    try (FSDataInputStream in = other.open(p)) {
      byte[] b = new byte[100];
      for (int blk = 0; blk < 4; blk++) {
        in.readFully((long) blk * BLOCK + 7, b);
        assertArrayEquals(Arrays.copyOfRange(data, blk * BLOCK + 7, blk * BLOCK + 107), b);
      }
      assertEquals(2, other.blockClient().replicas().size());
      assertEquals(2L * (BLOCK / BPC * 4), other.blockClient().replicas().sumBytes(),
          "two blocks' sums (4 bytes a chunk)");
      assertEquals(2, other.blockClient().replicas().filesOpen(), "two blocks' files open");
      assertEquals(4, other.blockClient().replicas().opened());
    } finally {
      other.close();
    }
    assertEquals(0, other.blockClient().replicas().filesOpen(), "closed with the client");

    c = local.clientConf(cluster, true, 0, 0);
    c.setLong(RdmaBlockClient.LOCAL_CACHE_EXPIRY_MS_KEY, 1);
    try (RdmaDistributedFileSystem expiring = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
        FSDataInputStream in = expiring.open(p)) {
      in.readFully(10, new byte[10]);
      Thread.sleep(20);
      in.readFully(20, new byte[10]);
      assertEquals(2, expiring.blockClient().replicas().opened(), "asked for again once expired");
    }

    c = local.clientConf(cluster, true, 0, 0);
    c.setInt(RdmaBlockClient.LOCAL_CACHED_REPLICAS_KEY, 0);
    try (RdmaDistributedFileSystem none = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
        FSDataInputStream in = none.open(p)) {
      long granted0 = granted();
      byte[] b = new byte[10];
      for (int i = 0; i < 5; i++) {
        in.readFully(100 * i, b);
        assertArrayEquals(Arrays.copyOfRange(data, 100 * i, 100 * i + 10), b);
      }
      assertEquals(5, granted() - granted0, "one exchange per read");
      assertEquals(0, none.blockClient().replicas().opened());
      assertEquals(50, none.localBytesRead());
    }
  }
}
