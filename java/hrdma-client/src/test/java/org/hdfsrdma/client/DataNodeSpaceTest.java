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
  /**
   * A replica is created with the client's length hint, the file's block size, as stock's
   * DataXceiver passes it to {@code createRbw} (the dataset reserves that much and picks a volume
   * with room for it), also when it exceeds the DataNode's own dfs.blocksize (Hadoop's
   * TestWriteBlockGetsBlockLengthHint). Before, the plugin cut it to the DataNode's block size.
   */
  @Test
  void aNewReplicaIsCreatedWithTheFilesBlockSizeAsStock() throws Exception {
    Configuration conf = PluginCluster.baseConf();
    conf.setLong(org.apache.hadoop.hdfs.DFSConfigKeys.DFS_BLOCK_SIZE_KEY, SMALL_BLOCK);
    conf.set(org.apache.hadoop.hdfs.DFSConfigKeys.DFS_DATANODE_FSDATASET_FACTORY_KEY,
        RecordingDataset.Factory.class.getName());
    conf.set(org.hdfsrdma.transport.TransportConf.CONNECT_TIMEOUT_KEY, "30000"); // a loaded machine: no stock fallback
    MiniDFSCluster cluster = PluginCluster.start(conf, getClass(), 1);
    RdmaDistributedFileSystem fs = null;
    try {
      fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), PluginCluster.rdmaClientConf(cluster));
      int fileBlock = 4 * SMALL_BLOCK;
      RecordingDataset.CREATED.clear();
      write(cluster.getFileSystem(), new Path("/hint/stock"), 300, fileBlock);
      assertEquals(java.util.List.of((long) fileBlock), RecordingDataset.CREATED, "stock's createRbw length");
      RecordingDataset.CREATED.clear();
      write(fs, new Path("/hint/ours"), 300, fileBlock);
      assertEquals(0, fs.stockWriteFallbacks(), "no write went to the stock path");
      assertEquals(300, fs.rdmaBytesWritten(), "written over hrdma");
      assertEquals(java.util.List.of((long) fileBlock), RecordingDataset.CREATED, "our createRbw length");
    } finally {
      PluginCluster.shutdown(fs, cluster);
    }
  }

  /**
   * A dataset whose createRbw throws an Error (pluggable code may) fails the write at once, as
   * stock's DataXceiver does by closing its connection on any Throwable. Before, the plugin's
   * set-up thread died unanswered and the client waited out its 60 s set-up timeout per try.
   */
  @Test
  void aDatasetThrowingAnErrorFailsTheWriteAtOnce() throws Exception {
    Configuration conf = PluginCluster.baseConf();
    conf.set(org.apache.hadoop.hdfs.DFSConfigKeys.DFS_DATANODE_FSDATASET_FACTORY_KEY,
        RecordingDataset.Factory.class.getName());
    conf.set(org.hdfsrdma.transport.TransportConf.CONNECT_TIMEOUT_KEY, "30000");
    MiniDFSCluster cluster = PluginCluster.start(conf, getClass(), 1);
    RdmaDistributedFileSystem fs = null;
    try {
      fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), PluginCluster.rdmaClientConf(cluster));
      RecordingDataset.failCreate = true;
      long t0 = System.nanoTime();
      RdmaDistributedFileSystem f = fs;
      IOException e = org.junit.jupiter.api.Assertions.assertThrows(IOException.class,
          () -> write(f, new Path("/hint/failing"), 300, SMALL_BLOCK));
      long ms = (System.nanoTime() - t0) / 1_000_000;
      for (Throwable c = e; c != null; c = c.getCause()) {
        org.junit.jupiter.api.Assertions.assertFalse(c instanceof java.net.SocketTimeoutException,
            "the DataNode left the set-up unanswered: " + e);
      }
      org.junit.jupiter.api.Assertions.assertTrue(ms < 60_000, "failed after " + ms + " ms: " + e);
    } finally {
      RecordingDataset.failCreate = false;
      PluginCluster.shutdown(fs, cluster);
    }
  }

  /** SimulatedFSDataset recording the length each new replica is created with. */
  public static class RecordingDataset extends SimulatedFSDataset {
    static final java.util.List<Long> CREATED = new java.util.concurrent.CopyOnWriteArrayList<>();
    static volatile boolean failCreate;

    RecordingDataset(DataNode dn, org.apache.hadoop.hdfs.server.datanode.DataStorage storage, Configuration conf) {
      super(dn, storage, conf);
    }

    @Override
    public synchronized org.apache.hadoop.hdfs.server.datanode.ReplicaHandler createRbw(
        org.apache.hadoop.fs.StorageType type, String storageId, ExtendedBlock b, boolean lazyPersist)
        throws IOException {
      CREATED.add(b.getNumBytes());
      if (failCreate) {
        throw new AssertionError("createRbw refused by the test");
      }
      return super.createRbw(type, storageId, b, lazyPersist);
    }

    /** Named by dfs.datanode.fsdataset.factory. */
    public static class Factory extends FsDatasetSpi.Factory<SimulatedFSDataset> {
      @Override
      public SimulatedFSDataset newInstance(DataNode dn, org.apache.hadoop.hdfs.server.datanode.DataStorage storage,
          Configuration conf) {
        return new RecordingDataset(dn, storage, conf);
      }

      @Override
      public boolean isSimulated() {
        return true;
      }
    }
  }
}
