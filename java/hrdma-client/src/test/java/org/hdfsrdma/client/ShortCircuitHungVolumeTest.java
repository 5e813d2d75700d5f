package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.datanode.compat.FaultHooks;
import org.hdfsrdma.nativelib.NativeFiles;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * A hung volume and the short-circuit socket: the DataNode opens a replica's files on the
 * volume's own read threads, never on the socket's event loop, so requests for replicas on
 * other volumes are answered at once while a volume's opens hang (FaultHooks' short-circuit
 * open hook holds them); a request on the hung volume is answered with an error naming the
 * volume after {@code hrdma.datanode.short-circuit.timeout-ms}, the client reads that block
 * over the transport, and the files the volume opens once it is back are closed. One DataNode
 * of two volumes.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class ShortCircuitHungVolumeTest {
  private static final long SCR_TIMEOUT_MS = 3000;
  private static final int LENGTH = 100_000;

  private LocalReadFixture local;
  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private RdmaDistributedFileSystem fs;

  @BeforeAll
  void start() throws Exception {
    local = new LocalReadFixture("scr-hung-");
    Configuration conf = local.clusterConf();
    conf.setLong("hrdma.datanode.short-circuit.timeout-ms", SCR_TIMEOUT_MS);
    File base = new File("target/test-dir/" + getClass().getSimpleName());
    cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(1).storagesPerDatanode(2).build();
    try {
      cluster.waitActive();
      PluginCluster.awaitPluginsServing(cluster);
    } catch (Exception | Error e) {
      cluster.shutdown();
      throw e;
    }
    stock = cluster.getFileSystem();
    Configuration c = local.clientConf(cluster, true, 0, 0);
    // longer than the DataNode's timeout: the error, not the client's patience, ends a hung request
    c.setLong(RdmaBlockClient.TIMEOUT_KEY, 20_000);
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
  }

  @AfterAll
  void stop() throws IOException {
    FaultHooks.setShortCircuitOpenHook(null);
    PluginCluster.shutdown(fs, cluster);
  }

  @AfterEach
  void nothingLeaks() throws Exception {
    FaultHooks.setShortCircuitOpenHook(null);
    PluginCluster.awaitValue(() -> plugin().shortCircuitDescriptorsOpen(), 0, "descriptors the DataNode holds");
    LocalReplicas kept = fs.blockClient().replicas();
    kept.clear();
    assertEquals(0, NativeFiles.fdsHeld(), "descriptors the client holds");
    assertEquals(0, NativeFiles.mappedBytes(), "bytes the client maps");
  }

  private DataNode dn() {
    return cluster.getDataNodes().get(0);
  }

  private RdmaDataNodePlugin plugin() {
    String uuid = dn().getDatanodeUuid();
    return RdmaDataNodePlugin.running().stream().filter(p -> uuid.equals(p.datanodeUuid())).findFirst()
        .orElseThrow();
  }

  private LocatedBlock onlyBlock(Path p) throws IOException {
    List<LocatedBlock> l = stock.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks();
    assertEquals(1, l.size(), p + " has one block");
    return l.get(0);
  }

  /** Two files of one block each, one on each volume of the DataNode: [0] and [1], with their blocks [2], [3]. */
  private Object[] oneFileOnEachVolume(String dir, byte[] data) throws IOException {
    Path onA = null;
    Path onB = null;
    String volA = null;
    for (int i = 0; i < 20 && (onA == null || onB == null); i++) {
      Path f = new Path(dir + "/f-" + i);
      try (FSDataOutputStream out = stock.create(f, FsPermission.getFileDefault(), true, 4096, (short) 1,
          PluginCluster.BLOCK, null)) {
        out.write(data);
      }
      String vol = onlyBlock(f).getStorageIDs()[0];
      if (onA == null) {
        onA = f;
        volA = vol;
      } else if (!vol.equals(volA) && onB == null) {
        onB = f;
      }
    }
    assertTrue(onA != null && onB != null, "no files on both volumes of " + dn());
    return new Object[] {onA, onB, onlyBlock(onA), onlyBlock(onB)};
  }

  /** A request and how it ended: its error (null: served), after how long. */
  private record Outcome(IOException error, long ms) {}

  private Outcome request(LocatedBlock lb, byte[] want) {
    DatanodeInfo dn = lb.getLocations()[0];
    long t0 = System.nanoTime();
    try (BlockReader r = fs.blockClient().openLocal(lb, dn, 0, want.length)) {
      byte[] got = new byte[want.length];
      r.readFully(got, 0, got.length);
      assertArrayEquals(want, got);
      return new Outcome(null, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
    } catch (IOException e) {
      return new Outcome(e, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
    }
  }

  /**
   * With a volume's opens hung, two requests wait on it (as many as the socket has event loop
   * threads: each used to hold one), and requests for a replica on the other volume, each on a
   * connection of its own, are served at once. The hung ones are answered at the timeout with an
   * error naming the volume, counted; the client reads that file over the transport, whole. Once
   * the volume is back, what it opened for the requests refused meanwhile is closed.
   */
  @Test
  void aHungVolumeHoldsUpOnlyItsOwnShortCircuitRequests() throws Exception {
    byte[] data = PluginCluster.random(LENGTH, 71);
    Object[] files = oneFileOnEachVolume("/hung", data);
    Path onA = (Path) files[0];
    LocatedBlock lbA = (LocatedBlock) files[2];
    LocatedBlock lbB = (LocatedBlock) files[3];
    String hungVolume = lbA.getStorageIDs()[0];
    RdmaDataNodePlugin p = plugin();
    long timeouts0 = p.shortCircuitVolumeTimeouts();
    long late0 = p.shortCircuitLateLookups();
    String blockFile = LocalReadFixture.files(cluster, lbA.getLocations()[0], lbA).getBlockPath();
    long fds0 = PluginCluster.descriptorsOf(blockFile);

    CountDownLatch back = new CountDownLatch(1);
    AtomicInteger held = new AtomicInteger();
    FaultHooks.setShortCircuitOpenHook(volume -> {
      if (volume.equals(hungVolume)) {
        held.incrementAndGet();
        try {
          back.await(120, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    });
    ExecutorService clients = Executors.newCachedThreadPool();
    try {
      List<Future<Outcome>> hung = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        hung.add(clients.submit(() -> request(lbA, data)));
        long until = System.nanoTime() + 10_000_000_000L;
        while (held.get() < i + 1 && System.nanoTime() < until) {
          Thread.sleep(5);
        }
        assertEquals(i + 1, held.get(), "requests holding on the hung volume");
      }
      for (int i = 0; i < 4; i++) { // round-robin over the event loops: each serves two of them
        Future<Outcome> f = clients.submit(() -> request(lbB, data));
        Outcome o = f.get(SCR_TIMEOUT_MS + 25_000, TimeUnit.MILLISECONDS);
        System.err.println("hrdma test: short-circuit request on the other volume, volume " + hungVolume
            + " hung: " + o.ms() + " ms" + (o.error() == null ? "" : ", " + o.error()));
        assertEquals(null, o.error(), "the other volume's replica is served");
        assertTrue(o.ms() < SCR_TIMEOUT_MS, "served in " + o.ms() + " ms, not at once");
      }
      for (Future<Outcome> f : hung) {
        assertFalse(f.isDone() && f.get().ms() < SCR_TIMEOUT_MS - 500, "a hung request ended before the timeout");
      }
      for (Future<Outcome> f : hung) {
        Outcome o = f.get(SCR_TIMEOUT_MS + 25_000, TimeUnit.MILLISECONDS);
        assertNotNull(o.error(), "a request on the hung volume was served");
        String m = o.error().getMessage();
        assertTrue(m.contains("volume " + hungVolume) && m.contains("hrdma.datanode.short-circuit.timeout-ms"), m);
        assertTrue(o.ms() >= SCR_TIMEOUT_MS - 500 && o.ms() < SCR_TIMEOUT_MS + 10_000,
            "answered after " + o.ms() + " ms, the timeout is " + SCR_TIMEOUT_MS);
      }
      assertEquals(timeouts0 + 2, p.shortCircuitVolumeTimeouts(), "counted");

      // the client reads the hung volume's file anyway: its short-circuit request fails at the timeout,
      // then the transport serves it (its reads take other threads of that volume than the hung opens)
      long fallbacks0 = fs.localFallbacks();
      long rdma0 = fs.rdmaBytesRead();
      assertArrayEquals(data, PluginCluster.readWhole(fs, onA));
      assertEquals(fallbacks0 + 1, fs.localFallbacks(), "short-circuit refused for that block");
      assertEquals(rdma0 + data.length, fs.rdmaBytesRead(), "read over the transport");
      assertEquals(timeouts0 + 3, p.shortCircuitVolumeTimeouts());
      assertEquals(3, held.get());
    } finally {
      back.countDown();
      clients.shutdownNow();
    }
    // the volume is back: it opens the files for the three requests refused meanwhile, and they are closed
    PluginCluster.awaitValue(() -> p.shortCircuitLateLookups() - late0, 3, "late opens of the volume");
    assertEquals(0, p.shortCircuitDescriptorsOpen(), "descriptors the DataNode holds");
    assertEquals(fds0, PluginCluster.descriptorsOf(blockFile), "descriptors of the block file in this process");
    Outcome o = request(lbA, data);
    assertEquals(null, o.error(), "and the volume serves again");
  }
}
