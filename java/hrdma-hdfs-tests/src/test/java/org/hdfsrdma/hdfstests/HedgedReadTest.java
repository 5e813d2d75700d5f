package org.hdfsrdma.hdfstests;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSClientFaultInjector;
import org.apache.hadoop.hdfs.DFSHedgedReadMetrics;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.HedgedReadMetricsAccess;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.hdfsrdma.datanode.PluginMiniClusters;
import org.hdfsrdma.client.RdmaDistributedFileSystem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * Hedged positional reads (what TestPread#testMaxOutHedgedReadPool checks),
 * the same in both modes: the stock client's keys, its fault injector's hook
 * before each read from one DataNode, its JVM-wide hedged-read pool and
 * metrics; in mode "ours" the bytes come over hrdma. Here rather than in
 * hrdma-client because the pool is static: once made, every client of the JVM
 * hedges, and this module runs each class in its own JVM.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(300)
class HedgedReadTest {
  private static final boolean OURS = !"stock".equals(System.getProperty("hrdma.hdfs-tests.mode", "ours"));
  private static final int BLOCK = 1 << 20;
  private static final int SIZE = 3 * BLOCK + 1234;
  private static final int POOL = 5;

  private MiniDFSCluster cluster;
  private byte[] data;
  private final DFSClientFaultInjector before = DFSClientFaultInjector.get();

  @BeforeAll
  void start() throws Exception {
    Configuration conf = new HdfsConfiguration();
    File base = new File(System.getProperty("test.build.data", "target/test/data"), "HedgedReadTest");
    cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(3).build();
    cluster.waitActive();
    if (OURS) {
      PluginMiniClusters.awaitServing(cluster);
    }
    data = new byte[SIZE];
    new Random(42).nextBytes(data);
    try (FSDataOutputStream out = cluster.getFileSystem().create(new Path("/hedged"), true, 4096, (short) 3,
        BLOCK)) {
      out.write(data);
    }
  }

  @AfterAll
  void stop() {
    if (cluster != null) {
      cluster.shutdown();
    }
  }

  @AfterEach
  void injectorBack() {
    DFSClientFaultInjector.set(before);
  }

  /** A client of the mode with hedged reads on: {@code threshold} ms, a pool of {@value #POOL}. */
  private DistributedFileSystem client(long threshold) throws IOException {
    Configuration c = new Configuration(cluster.getConfiguration(0));
    c.setBoolean("fs.hdfs.impl.disable.cache", true);
    c.setInt(HdfsClientConfigKeys.HedgedRead.THREADPOOL_SIZE_KEY, POOL);
    c.setLong(HdfsClientConfigKeys.HedgedRead.THRESHOLD_MILLIS_KEY, threshold);
    DistributedFileSystem fs = (DistributedFileSystem) FileSystem.get(cluster.getURI(), c);
    assertEquals(OURS, fs instanceof RdmaDistributedFileSystem, "the mode's client");
    return fs;
  }

  /** Every read from a DataNode takes {@code ms} longer, as the Hadoop test makes it. */
  private static void slowFetches(long ms) {
    DFSClientFaultInjector.set(new DFSClientFaultInjector() {
      @Override
      public void startFetchFromDatanode() {
        try {
          Thread.sleep(ms);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    });
  }

  /** Positional reads of the whole file in pieces, checked. */
  private void pread(FileSystem fs) throws IOException {
    try (FSDataInputStream in = fs.open(new Path("/hedged"))) {
      byte[] got = new byte[SIZE];
      for (int off = 0; off < SIZE; off += 300_000) {
        int n = Math.min(300_000, SIZE - off);
        in.readFully(off, got, off, n);
      }
      assertArrayEquals(data, got);
    }
  }

  /** In mode "ours": every byte came through our readers, none through the stock path. */
  private static void assertOurPath(DistributedFileSystem fs, long atLeast) {
    if (OURS) {
      RdmaDistributedFileSystem ours = (RdmaDistributedFileSystem) fs;
      assertTrue(ours.rdmaBytesRead() + ours.localBytesRead() >= atLeast, "read by our readers");
      assertEquals(0, ours.stockBytesRead(), "nothing through the stock path");
    }
  }

  @Test
  void readsWithinTheThresholdAreNotHedged() throws Exception {
    slowFetches(20);
    try (DistributedFileSystem fs = client(60_000)) {
      DFSHedgedReadMetrics m = HedgedReadMetricsAccess.of(fs);
      long ops = m.getHedgedReadOps();
      long inCur = m.getHedgedReadOpsInCurThread();
      pread(fs);
      assertEquals(ops, m.getHedgedReadOps(), "hedged reads");
      assertEquals(inCur, m.getHedgedReadOpsInCurThread(), "reads in the caller's thread");
      assertOurPath(fs, SIZE);
    }
  }

  @Test
  void slowReadsAreHedgedAndAFullPoolRunsThemInTheCallersThread() throws Exception {
    slowFetches(200);
    try (DistributedFileSystem fs = client(50)) {
      DFSHedgedReadMetrics m = HedgedReadMetricsAccess.of(fs);
      long ops = m.getHedgedReadOps();
      long wins = m.getHedgedReadWins();
      long inCur = m.getHedgedReadOpsInCurThread();
      pread(fs);
      assertTrue(m.getHedgedReadOps() > ops, "hedged reads started");
      assertTrue(m.getHedgedReadWins() > wins, "hedged reads answered");
      assertEquals(inCur, m.getHedgedReadOpsInCurThread(), "one reader: the pool had room");
      assertOurPath(fs, SIZE);

      // ten times the pool's threads reading at once: the pool is full, reads run in the callers
      long opsBefore = m.getHedgedReadOps();
      ExecutorService readers = Executors.newFixedThreadPool(POOL * 10);
      try {
        List<Future<?>> all = new ArrayList<>();
        for (int i = 0; i < POOL * 10; i++) {
          all.add(readers.submit(() -> {
            pread(fs);
            return null;
          }));
        }
        for (Future<?> f : all) {
          f.get();
        }
      } finally {
        readers.shutdownNow();
      }
      assertTrue(m.getHedgedReadOps() > opsBefore, "hedged reads started");
      assertTrue(m.getHedgedReadOpsInCurThread() > inCur, "reads run in the caller's thread");
    }
  }
}
