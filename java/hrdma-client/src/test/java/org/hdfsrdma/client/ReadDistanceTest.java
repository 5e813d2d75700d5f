package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CommonConfigurationKeys;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.net.NetUtils;
import org.apache.hadoop.net.StaticMapping;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * Bytes read by network distance when the topology puts this host's DataNode in
 * another rack than the client (Hadoop's TestDistributedFileSystem
 * #testRemoteRackOfFirstDegreeReadStatistics: client in /rackClient, DataNode in
 * /rackFoo, distance 4). A read over a connection to the DataNode counts the
 * topology's distance, ours as stock's TCP reader
 * ({@code ClientContext#getNetworkDistance}); a replica read from its file on this
 * host counts at distance 0, whatever the racks say, as stock's short-circuit
 * reader ({@code BlockReaderLocal#getNetworkDistance} is 0). Stock does that only
 * with {@code dfs.client.read.shortcircuit} on; ours reads such a replica from its
 * file by default ({@code hrdma.client.read.local}), so with no settings changed
 * the two count the same bytes at different distances (docs/client-reads.md,
 * "Statistics").
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class ReadDistanceTest {
  private static final String TEXT = "hello world";
  private static final Path FILE = new Path("/distance/file");

  private MiniDFSCluster cluster;

  @BeforeAll
  void start() throws Exception {
    StaticMapping.addNodeToRack(NetUtils.getLocalHostname(), "/rackClient");
    Configuration conf = PluginCluster.baseConf();
    conf.setBoolean(CommonConfigurationKeys.FS_CLIENT_TOPOLOGY_RESOLUTION_ENABLED, true);
    // ClientContext keeps the client's place in the topology per context name
    conf.set(HdfsClientConfigKeys.DFS_CLIENT_CONTEXT, "ReadDistanceTest");
    File base = new File("target/test-dir/" + getClass().getSimpleName());
    cluster = new MiniDFSCluster.Builder(conf, base).racks(new String[] {"/rackFoo"}).build();
    try {
      cluster.waitActive();
      PluginCluster.awaitPluginsServing(cluster);
      DFSTestUtil.writeFile(cluster.getFileSystem(), FILE, TEXT);
    } catch (Exception | Error e) {
      cluster.shutdown();
      throw e;
    }
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(null, cluster);
  }

  @Test
  void theStockClientCountsTheTopologysDistance() throws Exception {
    DistributedFileSystem stock = cluster.getFileSystem();
    assertEquals(DistributedFileSystem.class, stock.getClass());
    assertDistance(stock, 4);
  }

  @Test
  void oursOverTheTransportCountsTheTopologysDistanceAsStock() throws Exception {
    Configuration c = PluginCluster.rdmaClientConf(cluster); // local reads off
    try (RdmaDistributedFileSystem ours = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c)) {
      assertDistance(ours, 4);
      assertEquals(0, ours.localBytesRead());
    }
  }

  @Test
  void oursFromTheReplicaFileCountsDistanceZeroAsStocksShortCircuitReader() throws Exception {
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    c.unset(RdmaBlockClient.LOCAL_READS_KEY); // the default: on
    try (RdmaDistributedFileSystem ours = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c)) {
      assertDistance(ours, 0);
      assertEquals(TEXT.length(), ours.localBytesRead());
    }
  }

  /** Reads the file as Hadoop's test does and checks every byte was counted at {@code distance}. */
  @SuppressWarnings("deprecation")
  private static void assertDistance(FileSystem fs, int distance) throws IOException {
    FileSystem.Statistics s = DFSTestUtil.getStatistics(fs);
    FileSystem.Statistics before = new FileSystem.Statistics(s);
    byte[] got = new byte[4096];
    int n;
    try (FSDataInputStream in = fs.open(FILE)) {
      assertInstanceOf(HdfsDataInputStream.class, in);
      n = in.read(got);
    }
    assertArrayEquals(TEXT.getBytes(StandardCharsets.UTF_8), Arrays.copyOf(got, n));
    long[] byDistance = new long[5];
    for (int d = 0; d < byDistance.length; d++) {
      byDistance[d] = s.getBytesReadByDistance(d) - before.getBytesReadByDistance(d);
    }
    long[] want = new long[5];
    want[distance] = TEXT.length();
    // getBytesReadByDistance groups 1-2 and 3-4: index 2 and 4 repeat 1 and 3
    if (distance == 2 || distance == 4) {
      want[distance - 1] = TEXT.length();
    }
    assertArrayEquals(want, byDistance, fs.getClass().getSimpleName() + ": bytes read at distance 0..4");
  }
}
