package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * A write to a DataNode on this host asks for its write segment and sends the write's request
 * before it fetches the segment's descriptor, so that the fetch and the mapping overlap the
 * pipeline's set-up instead of coming before it: with the DataNode's replica creation held
 * (inside createRbw), the client is already between the grant and the descriptor's fetch, and
 * the write, let go, goes by reference.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class WriteSegmentOverlapTest {
  private MiniDFSCluster cluster;
  private Configuration clientConf;

  @BeforeAll
  void start() throws Exception {
    Configuration conf = PluginCluster.baseConf();
    conf.set(DFSConfigKeys.DFS_DATANODE_FSDATASET_VOLUME_CHOOSING_POLICY_KEY,
        HoldingVolumeChoosingPolicy.class.getName());
    cluster = PluginCluster.start(conf, getClass(), 1);
    clientConf = PluginCluster.rdmaClientConf(cluster);
  }

  @AfterEach
  void release() {
    DataNodeConnection.beforeSegmentFetch = null;
    HoldingVolumeChoosingPolicy.releaseAll();
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(null, cluster);
  }

  @Test
  void theSegmentIsFetchedWhileTheDataNodeSetsUpTheWrite() throws Exception {
    assumeTrue(HrdmaNative.isAvailable(), "write segments need libhrdma");
    RdmaDataNodePlugin plugin = RdmaDataNodePlugin.running().get(0);
    long byReference0 = plugin.writeShm().byReference();
    CountDownLatch let = new CountDownLatch(1);
    for (String storage : plugin.disk().schedulers().keySet()) {
      HoldingVolumeChoosingPolicy.hold(storage, let);
    }
    AtomicInteger creationsHeldAtFetch = new AtomicInteger(-1);
    DataNodeConnection.beforeSegmentFetch = () -> {
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      try {
        while (HoldingVolumeChoosingPolicy.waiting() < 1 && System.nanoTime() < until) {
          Thread.sleep(10);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      creationsHeldAtFetch.compareAndSet(-1, HoldingVolumeChoosingPolicy.waiting());
      HoldingVolumeChoosingPolicy.releaseAll();
    };
    byte[] data = PluginCluster.random(256 * 1024, 21);
    Path p = new Path("/segment-overlap/one");
    try (RdmaDistributedFileSystem fs = (RdmaDistributedFileSystem) FileSystem.newInstance(cluster.getURI(),
        clientConf)) {
      try (FSDataOutputStream out = fs.create(p, (short) 1)) {
        out.write(data);
      }
      assertEquals(1, creationsHeldAtFetch.get(),
          "the replica's creation was under way (the write's request sent) when the segment was fetched");
      assertArrayEquals(data, PluginCluster.readWhole(fs, p));
      assertTrue(plugin.writeShm().byReference() > byReference0, "the packets went by reference");
    }
  }
}
