package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Replicas kept mapped for positional reads ({@link LocalReplicas}) do not
 * outlive the DataNode that gave them out, as stock's short-circuit cache's do
 * not (the DataNode's exit closes the shared-memory segment and its slots turn
 * invalid): after a DataNode restart the next positional read asks the
 * DataNode again, with the stream's token. So a token the restarted DataNode
 * no longer accepts (the NameNode restarted with new keys, then the DataNode,
 * as TestBlockTokenWithDFS#testRead does) fails the read with the NameNode
 * down, as stock's read does, and a token it still accepts reads on.
 */
@Timeout(240)
class LocalReplicaRestartTest {
  private MiniDFSCluster cluster;
  private RdmaDistributedFileSystem fs;

  @AfterEach
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  private static byte[] pread(FSDataInputStream in, int len) throws IOException {
    byte[] b = new byte[len];
    in.readFully(0, b);
    return b;
  }

  @Test
  void aRestartedDataNodeIsAskedAgainAndRefusesTokensOfOldKeys() throws Exception {
    LocalReadFixture local = new LocalReadFixture("scr-restart-");
    cluster = PluginCluster.start(local.clusterConf(), getClass(), 1);
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), local.clientConf(cluster, true, 0, 0));
    Path p = new Path("/restart/pread");
    byte[] data = PluginCluster.random(PluginCluster.BLOCK / 2 + 77, 7);
    try (FSDataOutputStream out = cluster.getFileSystem().create(p, (short) 1)) {
      out.write(data);
    }
    LocalReplicas kept = fs.blockClient().replicas();
    try (FSDataInputStream in = fs.open(p)) {
      assertArrayEquals(data, pread(in, data.length));
      assertEquals(1, kept.opened(), "the first positional read maps the replica");
      assertArrayEquals(data, pread(in, data.length));
      assertEquals(1, kept.opened(), "the second is served by the mapping");

      // the DataNode restarts (same keys): the stream's token is still good, the replica is asked for again
      assertEquals(true, cluster.restartDataNodes(true));
      cluster.waitActive();
      PluginCluster.awaitPluginsServing(cluster);
      assertArrayEquals(data, pread(in, data.length));
      assertEquals(2, kept.opened(), "the replica of the DataNode's earlier run was used after its restart");

      // new keys: the NameNode restarts, then the DataNode registers with it; NameNode down for the read
      cluster.restartNameNode(0);
      assertEquals(true, cluster.restartDataNodes(true));
      cluster.waitActive();
      PluginCluster.awaitPluginsServing(cluster);
      cluster.shutdownNameNode(0);
      assertThrows(IOException.class, () -> pread(in, data.length),
          "a token of the old keys was not presented to the restarted DataNode");
    }
  }
}
