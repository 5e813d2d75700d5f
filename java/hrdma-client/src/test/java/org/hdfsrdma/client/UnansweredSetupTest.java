package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;
import org.apache.hadoop.hdfs.server.datanode.DataNodeFaultInjector;
import org.hdfsrdma.transport.TransportConf;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * A first DataNode that keeps a block's set-up unanswered (held in stock's fault hook before it
 * connects to its mirror, as a DataNode stuck on a hung peer or volume would be): the client
 * waits its set-up time, then treats the silence as a failed set-up, as stock's
 * createBlockOutputStream treats a timeout: it abandons the block and asks the NameNode again
 * without that DataNode, and the file is written over hrdma while the first DataNode is still
 * stuck. Before, the timeout reached the caller as an interrupted write.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class UnansweredSetupTest {
  private static final int CLIENT_TIMEOUT_MS = 2000;
  private static final int CONNECT_TIMEOUT_MS = 2000;

  private MiniDFSCluster cluster;
  private final DataNodeFaultInjector before = DataNodeFaultInjector.get();

  @BeforeAll
  void start() throws Exception {
    cluster = PluginCluster.start(PluginCluster.baseConf(), getClass(), 3);
  }

  @AfterAll
  void stop() throws IOException {
    DataNodeFaultInjector.set(before);
    PluginCluster.shutdown(null, cluster);
  }

  @Test
  void aSetUpLeftUnansweredIsRetriedWithoutThatDataNode() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger setUps = new AtomicInteger();
    DataNodeFaultInjector.set(new DataNodeFaultInjector() {
      @Override
      public void failMirrorConnection() throws IOException {
        if (setUps.incrementAndGet() == 2) { // the second block's first DataNode: held until the test ends
          try {
            release.await(120, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }
    });
    Configuration conf = PluginCluster.rdmaClientConf(cluster);
    conf.setLong(RdmaBlockClient.TIMEOUT_KEY, CLIENT_TIMEOUT_MS);
    conf.setInt(TransportConf.CONNECT_TIMEOUT_KEY, CONNECT_TIMEOUT_MS);
    Path p = new Path("/unanswered-setup");
    // two blocks: a first block's set-up that fails sends the whole file to the stock path
    // (RdmaOutputStream#fallBack); a later block's is retried over hrdma without the DataNode
    byte[] data = PluginCluster.random(PluginCluster.BLOCK + PluginCluster.BLOCK / 4, 7);
    try (RdmaDistributedFileSystem ours = (RdmaDistributedFileSystem) FileSystem.newInstance(cluster.getURI(),
        conf)) {
      long fallbacks = ours.stockWriteFallbacks();
      try (FSDataOutputStream out = ours.create(p, (short) 2)) {
        out.write(data);
      }
      assertEquals(1, release.getCount(), "the write ended while the first DataNode was still held");
      assertTrue(setUps.get() >= 3, "the second block's pipeline was set up again: " + setUps.get());
      assertEquals(data.length, ours.rdmaBytesWritten(), "the retried write went over hrdma");
      assertEquals(fallbacks, ours.stockWriteFallbacks());
      LocatedBlocks blocks = ours.getClient().getLocatedBlocks(p.toString(), 0);
      assertEquals(2, blocks.locatedBlockCount());
      assertEquals(2, blocks.get(1).getLocations().length, "two replicas");
      byte[] got = new byte[data.length];
      try (FSDataInputStream in = ours.open(p)) {
        in.readFully(0, got);
      }
      assertArrayEquals(data, got);
    } finally {
      release.countDown();
      DataNodeFaultInjector.set(before);
    }
  }
}
