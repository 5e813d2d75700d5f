package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.hdfsrdma.datanode.PluginMiniClusters;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A DataNode registered with the NameNode whose plugin is still starting (its warm-up held on a
 * latch: {@link PluginMiniClusters#holdStarting}), as after every DataNode restart: the plugin
 * listens and refuses as "starting", the client reads and writes through the stock path for that
 * operation, and once the plugin serves the same client is back on hrdma within
 * {@code hrdma.client.fallback.starting-retry-ms}, not after {@code hrdma.client.fallback.retry-ms}
 * (600000), which a plugin port where nothing listens still costs
 * ({@code RdmaDistributedFileSystemTest.dataNodesWithoutThePluginAreReadThroughTheStockPath}).
 */
@Timeout(240)
class StartingPluginTest {
  /** Well past the short retry (1500 ms by default), far below the long one. */
  private static final long BACK_WITHIN_MS = 10_000;

  private MiniDFSCluster cluster;
  private RdmaDistributedFileSystem fs;
  private final CountDownLatch release = new CountDownLatch(1);
  private AutoCloseable held;

  @AfterEach
  void tearDown() throws Exception {
    release.countDown();
    try {
      if (held != null) {
        held.close();
      }
    } finally {
      PluginCluster.shutdown(fs, cluster);
    }
  }

  /** From now on, a plugin that starts waits in its warm-up until {@link #release}. */
  private void holdPluginsStarting() {
    held = PluginMiniClusters.holdStarting(release);
  }

  private RdmaDistributedFileSystem client() throws IOException {
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    assertEquals(RdmaDistributedFileSystem.FALLBACK_RETRY_DEFAULT,
        c.getLong(RdmaDistributedFileSystem.FALLBACK_RETRY_KEY, RdmaDistributedFileSystem.FALLBACK_RETRY_DEFAULT),
        "the long retry at its default: a client sent away for it would not be back within the test");
    return (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
  }

  private RdmaDataNodePlugin plugin() {
    DataNode dn = cluster.getDataNodes().get(0);
    return RdmaDataNodePlugin.running().stream().filter(p -> dn.getDatanodeUuid().equals(p.datanodeUuid()))
        .findFirst().orElseThrow(() -> new AssertionError("no plugin for " + dn));
  }

  private void write(Path p, byte[] data) throws IOException {
    try (FSDataOutputStream out = fs.create(p, (short) 1)) {
      out.write(data);
    }
  }

  /**
   * The plugin starting: a read and a write of the same client succeed through the stock path,
   * the read's DataNode counted as starting (not as a stock fallback); once the plugin serves,
   * reads and writes go over hrdma again within the short retry.
   */
  @Test
  void aClientMeetingAStartingPluginIsBackOnHrdmaSoonAfterItServes() throws Exception {
    holdPluginsStarting();
    cluster = new MiniDFSCluster.Builder(PluginCluster.baseConf(),
        new File("target/test-dir/" + getClass().getSimpleName() + "-held")).numDataNodes(1).build();
    cluster.waitActive(); // registered: the NameNode names it in pipelines and block locations
    RdmaDataNodePlugin p = plugin();
    assertEquals(RdmaDataNodePlugin.State.WAITING, p.state());
    assertNotNull(p.listeningAddress(), "listening while starting");
    fs = client();

    byte[] a = PluginCluster.random(PluginCluster.BLOCK + 4321, 1);
    Path fa = new Path("/starting/a");
    write(fa, a);
    assertEquals(1, fs.stockWriteFallbacks(), "written through the stock path");
    assertEquals(0, fs.rdmaBytesWritten());
    assertArrayEquals(a, PluginCluster.readWhole(fs, fa));
    assertEquals(0, fs.rdmaBytesRead());
    assertTrue(fs.stockBytesRead() >= a.length, "read through the stock path: " + fs.stockBytesRead());
    assertTrue(fs.startingFallbacks() >= 1, "refused as starting: " + fs.startingFallbacks());
    assertEquals(0, fs.stockFallbacks(), "no long fallback");
    assertTrue(p.refusedStarting() >= 2, "the read and the write were refused: " + p.refusedStarting());

    release.countDown();
    PluginCluster.awaitPluginsServing(cluster);
    awaitBackOnHrdma(fa, a);
    byte[] b = PluginCluster.random(PluginCluster.BLOCK / 2, 2);
    Path fb = new Path("/starting/b");
    write(fb, b);
    assertEquals(b.length, fs.rdmaBytesWritten(), "the next write over hrdma");
    assertEquals(1, fs.stockWriteFallbacks());
    assertEquals(0, fs.stockFallbacks());
  }

  /**
   * A DataNode restarted (as in a rolling restart) while a client uses it: the client's
   * connection to the old plugin is gone, its next read meets the new plugin starting and goes
   * through the stock path, and soon after the new plugin serves the client reads over hrdma.
   */
  @Test
  void aRestartedDataNodeIsBackOnHrdmaSoonAfterItsPluginServes() throws Exception {
    cluster = PluginCluster.start(PluginCluster.baseConf(), getClass(), 1);
    fs = client();
    byte[] a = PluginCluster.random(PluginCluster.BLOCK + 99, 3);
    Path fa = new Path("/restart/a");
    write(fa, a);
    assertArrayEquals(a, PluginCluster.readWhole(fs, fa));
    long rdma = fs.rdmaBytesRead();
    assertEquals(a.length, rdma, "over hrdma before the restart");

    holdPluginsStarting();
    assertTrue(cluster.restartDataNode(0, true));
    cluster.waitActive();
    RdmaDataNodePlugin p = plugin();
    assertEquals(RdmaDataNodePlugin.State.WAITING, p.state());
    long stockBefore = fs.stockBytesRead();
    assertArrayEquals(a, PluginCluster.readWhole(fs, fa));
    assertEquals(rdma, fs.rdmaBytesRead(), "while starting, not over hrdma");
    assertTrue(fs.stockBytesRead() - stockBefore >= a.length, "through the stock path");
    assertTrue(fs.startingFallbacks() >= 1, "refused as starting: " + fs.startingFallbacks());
    assertEquals(0, fs.stockFallbacks(), "no long fallback");

    release.countDown();
    PluginCluster.awaitPluginsServing(cluster);
    awaitBackOnHrdma(fa, a);
    assertEquals(0, fs.stockFallbacks());
  }

  /**
   * Reads {@code p} until a whole read goes over hrdma, within {@link #BACK_WITHIN_MS} of the
   * plugin serving (a read across the end of the short retry goes partly each way).
   */
  private void awaitBackOnHrdma(Path p, byte[] want) throws Exception {
    long t0 = System.nanoTime();
    while (true) {
      long before = fs.rdmaBytesRead();
      assertArrayEquals(want, PluginCluster.readWhole(fs, p));
      if (fs.rdmaBytesRead() - before == want.length) {
        break;
      }
      assertTrue(System.nanoTime() - t0 < TimeUnit.MILLISECONDS.toNanos(BACK_WITHIN_MS),
          "still on the stock path " + BACK_WITHIN_MS + " ms after the plugin serves: stockFallbacks "
              + fs.stockFallbacks() + ", startingFallbacks " + fs.startingFallbacks());
      Thread.sleep(100);
    }
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    System.err.println("hrdma test: back on hrdma " + ms + " ms after the plugin serves");
  }
}
