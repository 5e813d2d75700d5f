package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
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
import org.apache.hadoop.hdfs.HedgedReadMetricsAccess;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * Hedged positional reads as stock's (what TestPread#testMaxOutHedgedReadPool
 * checks): the stock client's keys, its fault injector's hook before each
 * read from one DataNode, its JVM-wide hedged-read pool and metrics; the bytes
 * come over hrdma and are right.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(240)
class HedgedReadTest {
  private static final int SIZE = 3 * PluginCluster.BLOCK + 1234;
  private static final int POOL = 5;

  private MiniDFSCluster cluster;
  private byte[] data;
  private final DFSClientFaultInjector before = DFSClientFaultInjector.get();

  @BeforeAll
  void start() throws Exception {
    cluster = PluginCluster.start(PluginCluster.baseConf(), getClass(), 3);
    data = PluginCluster.random(SIZE, 42);
    try (FSDataOutputStream out = cluster.getFileSystem().create(new Path("/hedged"), (short) 3)) {
      out.write(data);
    }
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(null, cluster);
  }

  @AfterEach
  void injectorBack() {
    DFSClientFaultInjector.set(before);
  }

  /** Our client with hedged reads on: {@code threshold} ms, a pool of {@value #POOL}. */
  private RdmaDistributedFileSystem client(long threshold) throws IOException {
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    c.setInt(HdfsClientConfigKeys.HedgedRead.THREADPOOL_SIZE_KEY, POOL);
    c.setLong(HdfsClientConfigKeys.HedgedRead.THRESHOLD_MILLIS_KEY, threshold);
    return (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
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

  @Test
  void readsWithinTheThresholdAreNotHedged() throws Exception {
    slowFetches(20);
    try (RdmaDistributedFileSystem fs = client(60_000)) {
      DFSHedgedReadMetrics m = HedgedReadMetricsAccess.of(fs);
      long ops = m.getHedgedReadOps();
      long inCur = m.getHedgedReadOpsInCurThread();
      pread(fs);
      assertEquals(ops, m.getHedgedReadOps(), "hedged reads");
      assertEquals(inCur, m.getHedgedReadOpsInCurThread(), "reads in the caller's thread");
      assertTrue(fs.rdmaBytesRead() >= SIZE, "read over hrdma: " + fs.rdmaBytesRead());
    }
  }

  @Test
  void slowReadsAreHedgedAndAFullPoolRunsThemInTheCallersThread() throws Exception {
    slowFetches(200);
    try (RdmaDistributedFileSystem fs = client(50)) {
      DFSHedgedReadMetrics m = HedgedReadMetricsAccess.of(fs);
      long ops = m.getHedgedReadOps();
      long wins = m.getHedgedReadWins();
      long inCur = m.getHedgedReadOpsInCurThread();
      pread(fs);
      assertTrue(m.getHedgedReadOps() > ops, "hedged reads started");
      assertTrue(m.getHedgedReadWins() > wins, "hedged reads answered");
      assertEquals(inCur, m.getHedgedReadOpsInCurThread(), "one reader: the pool had room");
      assertTrue(fs.rdmaBytesRead() >= SIZE, "read over hrdma: " + fs.rdmaBytesRead());
      assertEquals(0, fs.stockBytesRead(), "nothing through the stock path");

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
