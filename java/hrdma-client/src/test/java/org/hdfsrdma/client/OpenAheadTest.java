package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
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
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeFiles;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * A sequential short-circuit stream opens its next block's reader on the client's opener thread
 * ({@link RdmaInputStream}'s OpenAhead): the bytes are stock's, a bad chunk in a block opened
 * ahead is the stream's ChecksumException naming that block, and nothing it opened is left
 * behind when the stream closes or seeks away while the open is under way, or when the opener
 * has no room (the stream then opens the block itself).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class OpenAheadTest {
  private static final int BLOCK = PluginCluster.BLOCK;
  private static final int BPC = PluginCluster.BPC;

  private LocalReadFixture local;
  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private RdmaDistributedFileSystem fs;

  @BeforeAll
  void start() throws Exception {
    assumeTrue(HrdmaNative.isAvailable(), "short-circuit reads are libhrdma's");
    local = new LocalReadFixture("scr-ahead-");
    cluster = PluginCluster.start(local.clusterConf(), getClass(), 3);
    stock = cluster.getFileSystem();
    Configuration c = local.clientConf(cluster, true, 0, 0);
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  /** Every descriptor the streams were given is closed (the opener's too, once its opens are done). */
  @AfterEach
  void nothingLeaks() throws Exception {
    RdmaBlockClient client = fs.blockClient();
    client.shortCircuitClient().channelHook(null);
    client.replicas().clear();
    ThreadPoolExecutor opener = client.opener();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while ((NativeFiles.fdsHeld() != 0 || opener.getActiveCount() != 0) && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertEquals(0, opener.getActiveCount(), "opens under way");
    assertEquals(0, NativeFiles.fdsHeld(), "descriptors held");
    assertEquals(0, NativeFiles.mappedBytes(), "bytes mapped");
  }

  private Path writeStock(String name, byte[] data, int replication) throws Exception {
    Path p = new Path(name);
    try (FSDataOutputStream out = stock.create(p, (short) replication)) {
      out.write(data);
    }
    DFSTestUtil.waitReplication(stock, p, (short) replication);
    return p;
  }

  private byte[] readByStock(Path p, int length) throws IOException {
    byte[] b = new byte[length];
    try (FSDataInputStream in = stock.open(p)) {
      in.readFully(b);
    }
    return b;
  }

  @Test
  void blocksAfterTheFirstAreOpenedOnTheOpenerAndReadAsStockReadsThem() throws Exception {
    int blocks = 6;
    byte[] data = PluginCluster.random(blocks * BLOCK + 777, 61);
    Path p = writeStock("/ahead/many", data, 1);
    ThreadPoolExecutor opener = fs.blockClient().opener();
    assertNotNull(opener);
    for (int size : new int[] {BLOCK, 256 * 1024, 65536 + 512, 4096}) {
      long opened0 = RdmaInputStream.openedAhead();
      byte[] got = new byte[data.length];
      try (FSDataInputStream in = fs.open(p)) {
        RdmaInputStream s = (RdmaInputStream) in.getWrappedStream();
        int waited = 0; // blocks whose next block's open was waited for
        for (int at = 0, n; at < got.length; at += n) {
          // from the middle of each block on (a test block is read in microseconds), the next block's
          // open is let finish first: the stream then finds it done at the boundary
          if (at >= waited * BLOCK + BLOCK / 2 && waited < blocks) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!s.openedAheadDone() && System.nanoTime() < deadline) {
              Thread.sleep(1);
            }
            assertTrue(s.openedAheadDone(), "block " + (waited + 1) + " opened ahead, reads of " + size);
            waited++;
          }
          int want = Math.min(size, got.length - at);
          int middle = waited * BLOCK + BLOCK / 2;
          if (waited < blocks && at < middle && at + want > middle) {
            want = middle - at; // stop at the middle of the block
          }
          n = in.read(got, at, want);
          assertTrue(n > 0, "a read before the end gives bytes");
        }
        assertEquals(-1, in.read());
      }
      assertArrayEquals(readByStock(p, data.length), got, "reads of " + size);
      assertArrayEquals(data, got);
      // each block after the first (the last, short one too) opened ahead, by the opener
      assertEquals(blocks, RdmaInputStream.openedAhead() - opened0, "blocks opened by the opener, reads of " + size);
    }
    assertEquals(0, fs.stockBytesRead(), "nothing over the stock path");
  }

  @Test
  void aBadChunkInABlockOpenedAheadIsTheStreamsChecksumExceptionNamingIt() throws Exception {
    byte[] data = PluginCluster.random(3 * BLOCK, 62);
    Path p = writeStock("/ahead/bad", data, 3);
    LocatedBlock second = stock.getClient().getLocatedBlocks(p.toString(), 0).get(1);
    int bad = BLOCK / 2 + 3 * BPC + 17;
    for (DatanodeInfo dn : second.getLocations()) {
      LocalReadFixture.flip(cluster, dn, second, bad);
    }
    long errors0 = fs.checksumErrors();
    try {
      try (FSDataInputStream in = fs.open(p)) {
        RdmaInputStream s = (RdmaInputStream) in.getWrappedStream();
        byte[] b = new byte[BLOCK];
        in.readFully(b);
        assertArrayEquals(java.util.Arrays.copyOfRange(data, 0, BLOCK), b, "the first block is good");
        assertTrue(s.readingAhead(), "the second block is being opened ahead");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!s.openedAheadDone() && System.nanoTime() < deadline) {
          Thread.sleep(1);
        }
        assertTrue(s.openedAheadDone(), "the second block opened ahead");
        long opened0 = RdmaInputStream.openedAhead();
        ChecksumException e = assertThrows(ChecksumException.class, () -> in.readFully(b));
        assertEquals(opened0 + 1, RdmaInputStream.openedAhead(), "the replica opened ahead was read");
        assertTrue(e.getMessage().contains(second.getBlock().getBlockName()), "names the block: " + e.getMessage());
        assertEquals(bad / BPC * BPC, e.getPos(), "at the bad chunk");
      }
      assertEquals(errors0 + 3, fs.checksumErrors(), "each replica found bad once");
    } finally {
      for (DatanodeInfo dn : second.getLocations()) {
        LocalReadFixture.flip(cluster, dn, second, bad); // good again
      }
    }
    // and one bad replica only: read from another, the bytes are stock's
    DatanodeInfo one = second.getLocations()[0];
    LocalReadFixture.flip(cluster, one, second, bad);
    try {
      byte[] got = new byte[data.length];
      try (FSDataInputStream in = fs.open(p)) {
        in.readFully(got);
      }
      assertArrayEquals(data, got);
    } finally {
      LocalReadFixture.flip(cluster, one, second, bad);
    }
  }

  /**
   * The stream is closed, or seeks back, while its next block's exchange is under way on the
   * opener (held in the exchange): the stream does not wait for it, and the opener closes what
   * the open gave once it is done.
   */
  @Test
  void anOpenUnderWayWhenTheStreamMovesOnIsClosedByTheOpener() throws Exception {
    byte[] data = PluginCluster.random(3 * BLOCK, 63);
    Path p = writeStock("/ahead/drop", data, 1);
    for (boolean close : new boolean[] {true, false}) {
      CountDownLatch inExchange = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      fs.blockClient().shortCircuitClient().channelHook(ch -> {
        if (Thread.currentThread().getName().startsWith(RdmaBlockClient.OPENER_THREAD_PREFIX)) {
          inExchange.countDown();
          try {
            release.await(60, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      });
      FSDataInputStream in = fs.open(p);
      try {
        byte[] b = new byte[100_000];
        in.readFully(b);
        assertTrue(inExchange.await(30, TimeUnit.SECONDS), "the opener is in the next block's exchange");
        if (close) {
          in.close(); // returns at once: the open is left to the opener
        } else {
          in.seek(10);
          in.readFully(b); // the first block again: the open ahead is dropped
          assertArrayEquals(java.util.Arrays.copyOfRange(data, 10, 100_010), b);
        }
      } finally {
        fs.blockClient().shortCircuitClient().channelHook(null);
        release.countDown();
        in.close();
      }
    }
  }

  /** An opener with no room (its threads busy, its queue full): the stream opens its blocks itself. */
  @Test
  void aBusyOpenerLeavesTheOpenToTheStream() throws Exception {
    byte[] data = PluginCluster.random(4 * BLOCK + 5, 64);
    Path p = writeStock("/ahead/busy", data, 1);
    ThreadPoolExecutor opener = fs.blockClient().opener();
    CountDownLatch release = new CountDownLatch(1);
    int filled = 0;
    try {
      while (true) {
        try {
          opener.execute(() -> {
            try {
              release.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          });
          filled++;
        } catch (java.util.concurrent.RejectedExecutionException full) {
          break;
        }
      }
      assertTrue(filled > 0);
      long opened0 = RdmaInputStream.openedAhead();
      byte[] got = new byte[data.length];
      try (FSDataInputStream in = fs.open(p)) {
        in.readFully(got);
      }
      assertArrayEquals(data, got);
      assertEquals(opened0, RdmaInputStream.openedAhead(), "the opener opened nothing");
    } finally {
      release.countDown();
    }
  }
}
