package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.datanode.disk.VolumeScheduler;
import org.hdfsrdma.datanode.disk.VolumeStats;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * A replication-3 write in direct mode over ucx: the client and each forwarding DataNode ask
 * for the packets' data to land page-aligned, so every DataNode writes it O_DIRECT straight
 * from the received buffer: nothing goes through the staging copy, and the file is the one
 * stock writes. {@link PlacedSealedWriteTest}: the same on a cluster that seals every message.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(300)
class PlacedWriteTest {
  private static final long BLOCK = 8L << 20;

  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private FileSystem fs;

  @BeforeAll
  void start() throws Exception {
    Configuration conf = PluginCluster.diskConf(BLOCK, "direct");
    conf.setInt(DFSConfigKeys.DFS_REPLICATION_KEY, 3);
    conf.set("hrdma.transport.order", "ucx");
    if (sealed()) {
      WireProtectionTest.encrypted(conf);
    }
    cluster = PluginCluster.start(conf, getClass(), 3);
    stock = cluster.getFileSystem();
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    fs = FileSystem.get(cluster.getURI(), c);
  }

  /** Whether the cluster protects data transfer (every message sealed with AES-GCM). */
  protected boolean sealed() {
    return false;
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  /** {directWrittenBytes, directStagedBytes} over every volume of every DataNode. */
  private long[] direct() {
    long[] t = new long[2];
    for (DataNode dn : cluster.getDataNodes()) {
      RdmaDataNodePlugin p = RdmaDataNodePlugin.running().stream()
          .filter(x -> dn.getDatanodeUuid().equals(x.datanodeUuid())).findFirst().orElseThrow();
      for (VolumeScheduler s : p.disk().schedulers().values()) {
        VolumeStats.Snapshot v = s.stats().snapshot();
        t[0] += v.directWrittenBytes();
        t[1] += v.directStagedBytes();
      }
    }
    return t;
  }

  @Test
  void threeReplicasAreWrittenDirectWithoutStaging() throws Exception {
    int size = (20 << 20) + 1000; // three blocks, the last ending inside a page
    byte[] data = PluginCluster.random(size, 33);
    Path ours = new Path("/placed/ours");
    Path theirs = new Path("/placed/stock");
    long[] before = direct();
    try (OutputStream out = fs.create(ours)) {
      out.write(data);
    }
    long[] after = direct();
    long written = after[0] - before[0];
    long staged = after[1] - before[1];
    System.out.printf("placed write: %d bytes x 3 replicas, %d written O_DIRECT, %d of them staged%n",
        size, written, staged);
    // every replica's data but the tail of its last page
    assertTrue(written >= 3L * (size - 4096), "O_DIRECT: " + written);
    assertEquals(0, staged, "data the transport placed needs no staging copy");
    try (OutputStream out = stock.create(theirs)) {
      out.write(data);
    }
    byte[] got = new byte[size];
    try (InputStream in = stock.open(ours)) {
      org.apache.hadoop.io.IOUtils.readFully(in, got, 0, size);
      assertEquals(-1, in.read());
    }
    assertArrayEquals(data, got);
    assertEquals(stock.getFileChecksum(theirs), stock.getFileChecksum(ours));
    assertEquals(3, stock.getFileStatus(ours).getReplication());
  }
}
