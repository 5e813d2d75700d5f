package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * A forwarding DataNode sends the write request on to the next DataNode before it creates its
 * own replica, so the replicas of a pipeline are created at once, not one hop after the other:
 * with every volume's replica creation held (inside createRbw), all three DataNodes of a
 * replication-3 pipeline wait in it together, and the write completes, byte-identical, once they
 * are let go. (Before, the first DataNode held its request until its own replica existed: one
 * creation waited, the others had not been asked.)
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(300)
class PipelineSetupOverlapTest {
  private MiniDFSCluster cluster;
  private FileSystem fs;

  @BeforeAll
  void start() throws Exception {
    Configuration conf = PluginCluster.baseConf();
    // stock's round-robin, with volumes a test can hang inside createRbw
    conf.set(DFSConfigKeys.DFS_DATANODE_FSDATASET_VOLUME_CHOOSING_POLICY_KEY,
        HoldingVolumeChoosingPolicy.class.getName());
    cluster = PluginCluster.start(conf, getClass(), 3);
    fs = FileSystem.get(cluster.getURI(), PluginCluster.rdmaClientConf(cluster));
  }

  @AfterEach
  void release() {
    HoldingVolumeChoosingPolicy.releaseAll();
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  private static RdmaDataNodePlugin plugin(DataNode dn) {
    return RdmaDataNodePlugin.running().stream().filter(p -> dn.getDatanodeUuid().equals(p.datanodeUuid()))
        .findFirst().orElseThrow();
  }

  @Test
  void everyDataNodeOfThePipelineCreatesItsReplicaAtOnce() throws Exception {
    byte[] data = PluginCluster.random(64 * 1024, 7);
    Path warm = new Path("/overlap/warm");
    try (FSDataOutputStream out = fs.create(warm, (short) 3)) {
      out.write(data); // connections made, code paths run: the held write below waits only on the volumes
    }
    CountDownLatch let = new CountDownLatch(1);
    int before = HoldingVolumeChoosingPolicy.heldTotal();
    for (DataNode dn : cluster.getDataNodes()) {
      for (String storage : plugin(dn).disk().schedulers().keySet()) {
        HoldingVolumeChoosingPolicy.hold(storage, let);
      }
    }
    Path p = new Path("/overlap/held");
    CompletableFuture<Void> write = CompletableFuture.runAsync(() -> {
      try (FSDataOutputStream out = fs.create(p, (short) 3)) {
        out.write(data);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    });
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (HoldingVolumeChoosingPolicy.waiting() < 3 && !write.isDone() && System.nanoTime() < until) {
      Thread.sleep(20);
    }
    int waiting = HoldingVolumeChoosingPolicy.waiting();
    HoldingVolumeChoosingPolicy.releaseAll();
    assertEquals(3, waiting, "replica creations waiting at once in one pipeline");
    write.get(60, TimeUnit.SECONDS);
    assertEquals(3, HoldingVolumeChoosingPolicy.heldTotal() - before, "one creation per DataNode, none again");
    assertArrayEquals(data, PluginCluster.readWhole(fs, p));
    assertEquals(3, fs.getFileBlockLocations(p, 0, 1)[0].getHosts().length);
    assertTrue(((RdmaDistributedFileSystem) fs).rdmaBytesWritten() >= 2L * data.length, "written over hrdma");
  }
}
