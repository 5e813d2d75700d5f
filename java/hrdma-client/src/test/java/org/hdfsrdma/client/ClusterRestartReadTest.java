package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.BlockMissingException;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A whole cluster restarted under a file, as {@code hrdma cluster stop} and
 * {@code start} do: the NameNode knows the file at once but no replica of its
 * blocks until the DataNodes' block reports, and with a single block it
 * leaves safe mode before them. A read in that window waits and
 * asks again, as stock's does; with no replica ever known it is the stock
 * client's BlockMissingException, never a checksum failure.
 */
@Timeout(180)
class ClusterRestartReadTest {
  private MiniDFSCluster cluster;

  @AfterEach
  void stop() throws IOException {
    PluginCluster.shutdown(null, cluster);
  }

  /** Until the restarted NameNode answers (a connection to the old one may be cached and fail first). */
  private void awaitNameNode(Path p) throws Exception {
    long until = System.nanoTime() + 60_000_000_000L;
    while (true) {
      try {
        cluster.getFileSystem().getFileStatus(p);
        return;
      } catch (IOException e) {
        if (System.nanoTime() > until) {
          throw e;
        }
        Thread.sleep(200);
      }
    }
  }

  @Test
  void aReadBeforeTheBlockReportsWaitsForThemAsStocksDoes() throws Exception {
    cluster = PluginCluster.start(PluginCluster.baseConf(), getClass(), 2);
    Path p = new Path("/restart/data");
    // one block, as the file of a small cluster's first start: the NameNode's safe-mode threshold
    // (0.999 of the blocks, rounded down) is then 0, it leaves safe mode before any block report and
    // hands out the block with no location
    byte[] data = PluginCluster.random(PluginCluster.BLOCK - 17, 42);
    try (FSDataOutputStream out = cluster.getFileSystem().create(p, (short) 2)) {
      out.write(data);
    }
    List<MiniDFSCluster.DataNodeProperties> stopped = new ArrayList<>();
    while (!cluster.getDataNodes().isEmpty()) {
      stopped.add(cluster.stopDataNode(0));
    }
    cluster.restartNameNode(false); // it knows the file, and no replica
    awaitNameNode(p);
    assertFalse(cluster.getNameNode().isInSafeMode());

    // no replica will come: the stock client's exception, soon (short waits)
    Configuration quick = PluginCluster.rdmaClientConf(cluster);
    quick.setInt(HdfsClientConfigKeys.Retry.WINDOW_BASE_KEY, 50);
    try (FileSystem fs = FileSystem.get(cluster.getURI(), quick); FSDataInputStream in = fs.open(p)) {
      for (LocatedBlock lb : ((HdfsDataInputStream) in).getAllBlocks()) {
        assertEquals(0, lb.getLocations().length, "the NameNode knows no replica yet: " + lb);
      }
      assertThrows(BlockMissingException.class, () -> in.readAllBytes());
      assertThrows(BlockMissingException.class, () -> in.readFully(10, new byte[10]));
    }
    Configuration stockConf = new Configuration(cluster.getConfiguration(0));
    stockConf.setInt(HdfsClientConfigKeys.Retry.WINDOW_BASE_KEY, 50);
    try (DistributedFileSystem stock = (DistributedFileSystem) FileSystem.newInstance(cluster.getURI(), stockConf);
        FSDataInputStream in = stock.open(p)) {
      assertThrows(BlockMissingException.class, () -> in.readAllBytes(), "the reference");
    }

    // the DataNodes come back while the read waits (the client's default waits)
    try (FileSystem fs = FileSystem.get(cluster.getURI(), PluginCluster.rdmaClientConf(cluster));
        FSDataInputStream in = fs.open(p)) {
      assertEquals(0, ((HdfsDataInputStream) in).getAllBlocks().get(0).getLocations().length);
      CompletableFuture<Void> back = CompletableFuture.runAsync(() -> {
        try {
          for (MiniDFSCluster.DataNodeProperties dn : stopped) {
            cluster.restartDataNode(dn, false);
          }
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      });
      assertArrayEquals(data, in.readAllBytes());
      back.get();
    }
  }
}
