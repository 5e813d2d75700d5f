package org.hdfsrdma.hdfstests;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.hdfsrdma.client.RdmaDistributedFileSystem;
import org.hdfsrdma.datanode.PluginMiniClusters;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The harness runs Hadoop's HDFS tests the way they run themselves: a
 * {@code new HdfsConfiguration()}, a MiniDFSCluster, {@code cluster.getFileSystem()}.
 * This test does the same and checks that what they get is ours (mode "ours",
 * the default) and that bytes really move over hrdma, so a broken class path
 * or a changed key cannot make the harness test the stock client unnoticed;
 * in the stock run ({@code -Phdfs-stock}) it checks the opposite.
 */
class HarnessIsOursTest {
  private static final String MODE = System.getProperty("hrdma.hdfs-tests.mode", "ours");

  @Test
  @Timeout(180)
  void clusterFileSystemIsTheModesClient() throws Exception {
    Configuration conf = new HdfsConfiguration();
    File base = new File(System.getProperty("test.build.data", "target/test/data"), "HarnessIsOursTest");
    MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(2).build();
    try {
      cluster.waitActive();
      if (MODE.equals("ours")) {
        PluginMiniClusters.awaitServing(cluster);
      }
      DistributedFileSystem fs = cluster.getFileSystem();
      byte[] data = new byte[3 << 20];
      new Random(7).nextBytes(data);
      Path p = new Path("/harness/file");
      try (FSDataOutputStream out = fs.create(p, (short) 2)) {
        out.write(data);
        out.hflush();
      }
      byte[] back = new byte[data.length];
      try (FSDataInputStream in = fs.open(p)) {
        in.readFully(0, back);
      }
      assertArrayEquals(data, back);

      if (MODE.equals("stock")) {
        assertEquals(DistributedFileSystem.class, fs.getClass());
        assertEquals(DistributedFileSystem.class, FileSystem.get(cluster.getURI(), conf).getClass());
        for (var dn : cluster.getDataNodes()) {
          String uuid = dn.getDatanodeUuid();
          assertFalse(RdmaDataNodePlugin.running().stream().anyMatch(pl -> uuid.equals(pl.datanodeUuid())),
              "a plugin runs in the stock run");
        }
        return;
      }
      assertEquals("ours", MODE, "unknown hrdma.hdfs-tests.mode");
      assertEquals(RdmaDistributedFileSystem.class, fs.getClass(),
          "cluster.getFileSystem() is not ours: core-site.xml of the harness not on the class path?");
      RdmaDistributedFileSystem ours = (RdmaDistributedFileSystem) fs;
      assertEquals(0, ours.stockWriteFallbacks(), "the write fell back to the stock data path");
      assertEquals(data.length, ours.rdmaBytesWritten(), "bytes written over hrdma");
      assertEquals(0, ours.stockFallbacks(), "the read fell back to the stock data path");
      assertEquals(data.length, ours.rdmaBytesRead() + ours.localBytesRead(), "bytes read by our readers");
      for (var dn : cluster.getDataNodes()) {
        String uuid = dn.getDatanodeUuid();
        assertTrue(RdmaDataNodePlugin.running().stream().anyMatch(pl -> uuid.equals(pl.datanodeUuid())),
            "DataNode " + uuid + " runs no plugin: hdfs-site.xml of the harness not on the class path?");
      }
    } finally {
      cluster.shutdown();
    }
  }
}
