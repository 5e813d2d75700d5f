package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.hdfsrdma.client.PluginCluster.awaitValue;
import static org.hdfsrdma.client.PluginCluster.writeShmSum;

import java.io.File;
import java.io.IOException;
import java.util.List;
import java.util.function.ToLongFunction;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.hdfsrdma.datanode.HrdmaDataNodeKeys;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.nativelib.NativeFiles;
import org.hdfsrdma.nativelib.NativeShm;
import org.hdfsrdma.protocol.WriteSegment;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * A forwarding DataNode keeps its connections to the next DataNodes, with their write segments,
 * between blocks: many small files at replication 3 set up one connection and one segment per
 * pair of DataNodes, not one per block and hop; files are byte-identical; a kept connection whose
 * DataNode went away is replaced without losing a byte; idle ones are closed after the pool's
 * idle time, and then nothing is held (connections, segments, mappings, descriptors).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(300)
class MirrorPoolWriteTest {
  private static final int BLOCK = 1 << 20;
  private static final long IDLE_MS = 2000;

  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;

  @BeforeAll
  void start() throws Exception {
    Configuration conf = PluginCluster.baseConf();
    conf.setLong("dfs.blocksize", BLOCK);
    conf.setLong(HrdmaDataNodeKeys.WRITE_MIRROR_IDLE_KEY, IDLE_MS);
    conf.setInt(HrdmaDataNodeKeys.WRITE_MIRROR_POOL_KEY, Integer.getInteger("test.mirror.pool", 16));
    File base = new File("target/test-dir/" + getClass().getSimpleName());
    cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(3).build();
    cluster.waitActive();
    PluginCluster.awaitPluginsServing(cluster);
    stock = cluster.getFileSystem();
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(null, cluster);
  }

  private static long mirrors(ToLongFunction<RdmaDataNodePlugin.MirrorStats> f) {
    long n = 0;
    for (RdmaDataNodePlugin p : RdmaDataNodePlugin.running()) {
      RdmaDataNodePlugin.MirrorStats s = p.mirrors();
      if (s != null) {
        n += f.applyAsLong(s);
      }
    }
    return n;
  }

  private void writeSmallFiles(FileSystem fs, String dir, int files, long seed) throws Exception {
    for (int i = 0; i < files; i++) {
      byte[] data = PluginCluster.random(64 * 1024 + i, seed + i);
      Path p = new Path(dir, "f" + i);
      try (FSDataOutputStream out = fs.create(p, true, 4096, (short) 3, BLOCK)) {
        out.write(data);
      }
      assertArrayEquals(data, PluginCluster.readWhole(stock, p), p.toString());
      // close returns once the NameNode knows one replica; the others' reports follow on their own
      org.apache.hadoop.hdfs.DFSTestUtil.waitReplication(stock, p, (short) 3);
    }
  }

  @Test
  void smallFilesReuseTheConnectionsAndSegmentsDownstreamAndLeaveNothingHeldOnceIdle() throws Exception {
    int files = 12;
    // what another test left kept goes first: the counts below start from nothing held downstream
    awaitValue(() -> mirrors(RdmaDataNodePlugin.MirrorStats::live), 0, "connections downstream before");
    // and the write segments another test's closed connections still held (their unmapping would
    // take the mapped bytes below the counts taken next)
    awaitValue(() -> writeShmSum(RdmaDataNodePlugin.WriteShmStats::segments), 0, "write segments before");
    awaitValue(WriteSegment::live, 0, "senders' write segments before");
    long shm0 = NativeShm.mappedBytes();
    long fdMapped0 = NativeFiles.mappedBytes();
    long fds0 = NativeFiles.fdsHeld();
    long granted0 = writeShmSum(RdmaDataNodePlugin.WriteShmStats::granted);
    long opened0 = mirrors(RdmaDataNodePlugin.MirrorStats::opened);
    long reused0 = mirrors(RdmaDataNodePlugin.MirrorStats::reused);
    long expired0 = mirrors(RdmaDataNodePlugin.MirrorStats::expired);
    try (RdmaDistributedFileSystem fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(),
        PluginCluster.rdmaClientConf(cluster))) {
      long before = fs.rdmaBytesWritten();
      writeSmallFiles(fs, "/mirrorpool/reuse", files, 100);
      assertTrue(fs.rdmaBytesWritten() - before >= files * 64L * 1024, "written over hrdma");
      // two hops a block: a new connection and segment for each would be 2 * files connections and grants
      // (plus one grant per client connection: 27 here). Kept, one per pair of DataNodes would do; a
      // few more are made where a write starts before the last one on that pair gave its connection
      // back, or carries the request id the kept one's last write had (the ids come from the client's
      // connections, so two pipelines through one pair can bring the same id in turn)
      long granted = writeShmSum(RdmaDataNodePlugin.WriteShmStats::granted) - granted0;
      assertTrue(granted <= files + files / 2, "write segments granted for " + files + " files: " + granted);
      long opened = mirrors(RdmaDataNodePlugin.MirrorStats::opened) - opened0;
      assertTrue(opened <= files + files / 2, "connections downstream for " + files + " files: " + opened);
      long reused = mirrors(RdmaDataNodePlugin.MirrorStats::reused) - reused0;
      assertTrue(reused >= 2L * files - opened, "every hop opened a connection or reused one: " + reused);
    }
    // idle for longer than the pool keeps them: closed, and with them every segment downstream
    awaitValue(() -> mirrors(RdmaDataNodePlugin.MirrorStats::live), 0, "connections downstream");
    assertTrue(mirrors(RdmaDataNodePlugin.MirrorStats::expired) > expired0, "closed as idle");
    awaitValue(() -> writeShmSum(RdmaDataNodePlugin.WriteShmStats::forwardSegments), 0, "the forwarders' segments");
    awaitValue(() -> writeShmSum(RdmaDataNodePlugin.WriteShmStats::segments), 0, "the DataNodes' write segments");
    awaitValue(WriteSegment::live, 0, "senders' write segments");
    awaitValue(NativeShm::mappedBytes, shm0, "segments mapped by their DataNodes");
    awaitValue(NativeFiles::mappedBytes, fdMapped0, "segments mapped by their senders");
    awaitValue(NativeFiles::fdsHeld, fds0, "descriptors held");
    awaitValue(() -> RdmaDataNodePlugin.running().stream().mapToLong(RdmaDataNodePlugin::openConnections).sum(), 0,
        "connections the DataNodes serve");
  }

  @Test
  void aKeptConnectionWhoseDataNodeRestartedIsReplacedWithoutLosingAByte() throws Exception {
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    try (RdmaDistributedFileSystem fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c)) {
      writeSmallFiles(fs, "/mirrorpool/restart-before", 4, 200);
      assertTrue(mirrors(RdmaDataNodePlugin.MirrorStats::idle) > 0, "connections kept downstream");
      long recoveries0 = fs.pipelineRecoveries();
      // one DataNode restarts: the others' kept connections to it break while idle
      assertTrue(cluster.restartDataNode(1, true));
      cluster.waitActive();
      PluginCluster.awaitPluginsServing(cluster);
      List<RdmaDataNodePlugin> running = RdmaDataNodePlugin.running();
      assertEquals(3, running.size());
      writeSmallFiles(fs, "/mirrorpool/restart-after", 6, 300);
      assertEquals(recoveries0, fs.pipelineRecoveries(), "no write needed a pipeline recovery");
    }
  }
}
