package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.File;
import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.SimulatedFSDataset;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsVolumeSpi;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.impl.FsVolumeImpl;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The DataNode's space accounting after writes through the plugin equals
 * stock's: used space, space reserved for replicas being written (all given
 * back once the file is closed), block and .meta file sizes; on a real
 * dataset and on Hadoop's SimulatedFSDataset (no local files).
 */
@Timeout(180)
class DataNodeSpaceTest {
  private static final int SMALL_BLOCK = 1024;

  private static void write(FileSystem f, Path p, int size, int blockSize) throws IOException {
    try (FSDataOutputStream out = f.create(p, true, 4096, (short) 1, blockSize)) {
      out.write(PluginCluster.random(size, size));
    }
  }

  private static long reserved(DataNode dn) throws IOException {
    long r = 0;
    try (FsDatasetSpi.FsVolumeReferences vols = dn.getFSDataset().getFsVolumeReferences()) {
      for (FsVolumeSpi v : vols) {
        r += ((FsVolumeImpl) v).getReservedForReplicas();
      }
    }
    return r;
  }

  @Test
  void writesThroughThePluginAccountAsStockOnARealDataset() throws Exception {
    Configuration conf = PluginCluster.baseConf();
    conf.set(org.hdfsrdma.transport.TransportConf.CONNECT_TIMEOUT_KEY, "30000"); // a loaded machine: no stock fallback
    MiniDFSCluster cluster = PluginCluster.start(conf, getClass(), 1);
    RdmaDistributedFileSystem fs = null;
    try {
      fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), PluginCluster.rdmaClientConf(cluster));
      DistributedFileSystem stock = cluster.getFileSystem();
      DataNode dn = cluster.getDataNodes().get(0);
      int size = 2 * SMALL_BLOCK + 300;
      long before = dn.getFSDataset().getDfsUsed();
      write(stock, new Path("/space/stock"), size, SMALL_BLOCK);
      DFSTestUtil.waitReplication(stock, new Path("/space/stock"), (short) 1);
      long stockUsed = dn.getFSDataset().getDfsUsed() - before;
      long writesBefore = fs.rdmaBytesWritten();
      before = dn.getFSDataset().getDfsUsed();
      write(fs, new Path("/space/ours"), size, SMALL_BLOCK);
      DFSTestUtil.waitReplication(stock, new Path("/space/ours"), (short) 1);
      assertEquals(size, fs.rdmaBytesWritten() - writesBefore, "written over hrdma");
      assertEquals(stockUsed, dn.getFSDataset().getDfsUsed() - before, "used space");
      assertEquals(0, reserved(dn), "space reserved for replicas being written");
      // block and .meta files, block by block
      var ours = stock.getClient().getLocatedBlocks("/space/ours", 0).getLocatedBlocks();
      var theirs = stock.getClient().getLocatedBlocks("/space/stock", 0).getLocatedBlocks();
      assertEquals(theirs.size(), ours.size());
      for (int i = 0; i < ours.size(); i++) {
        assertEquals(fileSizes(cluster, theirs.get(i)), fileSizes(cluster, ours.get(i)), "block " + i);
      }
    } finally {
      PluginCluster.shutdown(fs, cluster);
    }
  }

  private static String fileSizes(MiniDFSCluster cluster, LocatedBlock lb) throws IOException {
    ExtendedBlock b = lb.getBlock();
    File block = cluster.getBlockFile(0, b);
    File meta = cluster.getBlockMetadataFile(0, b);
    return block.length() + "/" + meta.length();
  }

  /** A dataset without local files: the plugin writes through its streams; it used to refuse (and leave a replica). */
  @Test
  void writesThroughThePluginAccountAsStockOnASimulatedDataset() throws Exception {
    Configuration conf = PluginCluster.baseConf();
    SimulatedFSDataset.setFactory(conf);
    conf.set(org.hdfsrdma.transport.TransportConf.CONNECT_TIMEOUT_KEY, "30000"); // a loaded machine: no stock fallback
    MiniDFSCluster cluster = PluginCluster.start(conf, getClass(), 1);
    RdmaDistributedFileSystem fs = null;
    try {
      fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), PluginCluster.rdmaClientConf(cluster));
      DataNode dn = cluster.getDataNodes().get(0);
      int size = 2 * SMALL_BLOCK + 300;
      long before = dn.getFSDataset().getDfsUsed();
      write(fs, new Path("/space/simulated"), size, SMALL_BLOCK);
      DFSTestUtil.waitReplication(cluster.getFileSystem(), new Path("/space/simulated"), (short) 1);
      assertEquals(0, fs.stockWriteFallbacks(), "no write went to the stock path");
      assertEquals(size, fs.rdmaBytesWritten(), "written over hrdma");
      assertEquals(size, dn.getFSDataset().getDfsUsed() - before, "used space: the file's bytes, nothing reserved");
    } finally {
      PluginCluster.shutdown(fs, cluster);
    }
  }
}
