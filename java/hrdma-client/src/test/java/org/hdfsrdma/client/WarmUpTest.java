package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.transport.Transport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * {@value HrdmaClientKeys#WARM_UP_KEY}: a create makes the block client and the transport its
 * first connection uses in the background, before the stream's first byte; an open makes the
 * block client alone; a file system that only asks the NameNode (as {@code hadoop fs -ls}) makes
 * neither; with the key off nothing is made before the first block. A file system closed while
 * its warm-up runs leaves no UCX context, worker or buffer behind.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class WarmUpTest {
  private MiniDFSCluster cluster;
  private Configuration conf;

  @BeforeAll
  void start() throws Exception {
    cluster = PluginCluster.start(PluginCluster.baseConf(), getClass(), 1);
    conf = PluginCluster.rdmaClientConf(cluster);
    conf.setInt("dfs.replication", 1);
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(null, cluster);
  }

  private RdmaDistributedFileSystem newFs(boolean warmUp) throws IOException {
    Configuration c = new Configuration(conf);
    c.setBoolean(HrdmaClientKeys.WARM_UP_KEY, warmUp);
    return (RdmaDistributedFileSystem) FileSystem.newInstance(cluster.getURI(), c);
  }

  /** The transport a first connection makes here: the order's first that runs in this JVM. */
  private static String firstTransport() {
    return HrdmaNative.isAvailable() ? "ucx" : "tcp";
  }

  /** Waits until {@code fs}'s block client exists and has made {@code transport}; false after 30 s. */
  private static boolean awaitTransport(RdmaDistributedFileSystem fs, String transport) throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < until) {
      RdmaBlockClient c = fs.blockClientIfStarted();
      if (c != null && c.transports().containsKey(transport)) {
        return true;
      }
      Thread.sleep(10);
    }
    return false;
  }

  private static List<Thread> warmUpThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().equals(RdmaDistributedFileSystem.WARM_UP_THREAD)).toList();
  }

  private static void awaitWarmUpsEnded() throws InterruptedException {
    for (Thread t : warmUpThreads()) {
      t.join(30_000);
      assertFalse(t.isAlive(), "a warm-up thread still runs after 30 s");
    }
  }

  @Test
  void aCreateMakesTheTransportBeforeTheFirstByte() throws Exception {
    byte[] data = PluginCluster.random(64 * 1024, 11);
    Path p = new Path("/warm/create");
    try (RdmaDistributedFileSystem fs = newFs(true)) {
      try (FSDataOutputStream out = fs.create(p, true)) {
        assertTrue(awaitTransport(fs, firstTransport()), "the block client and its " + firstTransport()
            + " transport made before any byte was written");
        assertEquals(0, fs.blockClientIfStarted().openConnections(), "nothing connected yet");
        out.write(data);
      }
      assertEquals(Map.of(firstTransport(), 1), fs.blockClientIfStarted().connectionsByTransport(),
          "the write went over the transport made ahead");
      assertArrayEquals(data, PluginCluster.readWhole(fs, p));
    }
  }

  @Test
  void withTheWarmUpOffNothingIsMadeBeforeTheFirstBlock() throws Exception {
    byte[] data = PluginCluster.random(1000, 12);
    Path p = new Path("/warm/off");
    try (RdmaDistributedFileSystem fs = newFs(false)) {
      try (FSDataOutputStream out = fs.create(p, true)) {
        out.write(data); // less than a packet: held until the close
        Thread.sleep(200);
        assertNull(fs.blockClientIfStarted(), "no block client before the first block");
      }
      assertNotNull(fs.blockClientIfStarted());
      assertArrayEquals(data, PluginCluster.readWhole(fs, p));
    }
  }

  @Test
  void anOpenMakesTheBlockClientAndNoTransport() throws Exception {
    byte[] data = PluginCluster.random(5000, 13);
    Path p = new Path("/warm/open");
    try (RdmaDistributedFileSystem writer = newFs(false)) {
      try (FSDataOutputStream out = writer.create(p, true)) {
        out.write(data);
      }
    }
    try (RdmaDistributedFileSystem fs = newFs(true)) {
      try (FSDataInputStream in = fs.open(p)) {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (fs.blockClientIfStarted() == null && System.nanoTime() < until) {
          Thread.sleep(10);
        }
        RdmaBlockClient c = fs.blockClientIfStarted();
        assertNotNull(c, "the block client made after the open, before any read");
        awaitWarmUpsEnded();
        assertEquals(Map.of(), c.transports(), "no transport made for an open");
        byte[] got = new byte[data.length];
        in.readFully(got);
        assertArrayEquals(data, got);
      }
    }
  }

  @Test
  void aFileSystemThatOnlyAsksTheNameNodeMakesNoBlockClient() throws Exception {
    try (RdmaDistributedFileSystem fs = newFs(true)) {
      fs.mkdirs(new Path("/warm/ls"));
      fs.listStatus(new Path("/warm"));
      fs.getFileStatus(new Path("/warm/ls"));
      awaitWarmUpsEnded();
      assertNull(fs.blockClientIfStarted(), "no block client, no transport for metadata calls");
    }
  }

  /** Native holdings of this JVM once they have not changed for half a second (the DataNode's settle after a write). */
  private static HrdmaNative.ProcessStats settledStats() throws InterruptedException {
    HrdmaNative.ProcessStats s = HrdmaNative.processStats();
    for (int same = 0; same < 10; ) {
      Thread.sleep(50);
      HrdmaNative.ProcessStats now = HrdmaNative.processStats();
      same = now.equals(s) ? same + 1 : 0;
      s = now;
    }
    return s;
  }

  @Test
  void closedWhileItsWarmUpRunsLeavesNothing() throws Exception {
    Path first = new Path("/warm/closed-first");
    try (RdmaDistributedFileSystem fs = newFs(false)) { // the DataNode's own transports made first
      try (FSDataOutputStream out = fs.create(first, true)) {
        out.write(new byte[100]);
      }
    }
    awaitWarmUpsEnded();
    HrdmaNative.ProcessStats before = settledStats();
    for (int i = 0; i < 6; i++) {
      RdmaDistributedFileSystem fs = newFs(true);
      Path p = new Path("/warm/closed-" + i);
      FSDataOutputStream out = fs.create(p, true);
      if (i % 2 == 1) {
        out.write(new byte[100]);
      }
      fs.close(); // closes the stream (the file completes) and the block client, warm-up or not
      assertNull(fs.blockClientIfStarted());
    }
    awaitWarmUpsEnded();
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!HrdmaNative.processStats().equals(before) && System.nanoTime() < until) {
      Thread.sleep(20);
    }
    assertEquals(before, HrdmaNative.processStats(), "UCX contexts, workers, endpoints and registered memory"
        + " after the closed file systems, against before them");
    try (RdmaDistributedFileSystem fs = newFs(false)) {
      assertEquals(100, fs.getFileStatus(new Path("/warm/closed-1")).getLen());
      assertEquals(0, fs.getFileStatus(new Path("/warm/closed-0")).getLen());
    }
  }
}
