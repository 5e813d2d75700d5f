package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.hdfsrdma.datanode.PluginMiniClusters;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.protocol.SocketPaths;
import org.hdfsrdma.transport.TransportConf;

/**
 * The client tests' cluster: a MiniDFSCluster whose DataNodes run the plugin,
 * with block tokens on, 1 MiB blocks and 512-byte checksum chunks.
 */
final class PluginCluster {
  static final int BLOCK = 1 << 20;
  static final int BPC = 512;

  private PluginCluster() {}

  /** The settings every client test starts from (tests may add to them before start). */
  static Configuration baseConf() {
    Configuration conf = new Configuration();
    conf.set(DFSConfigKeys.DFS_DATANODE_PLUGINS_KEY, RdmaDataNodePlugin.class.getName());
    conf.setBoolean(DFSConfigKeys.DFS_BLOCK_ACCESS_TOKEN_ENABLE_KEY, true);
    conf.setLong(DFSConfigKeys.DFS_BLOCK_SIZE_KEY, BLOCK);
    conf.setInt(DFSConfigKeys.DFS_BYTES_PER_CHECKSUM_KEY, BPC);
    conf.set(TransportConf.CONNECT_TIMEOUT_KEY, "3000");
    // the tests' socket paths lie in /tmp or a checkout below it: sticky directories accepted
    // (SocketSquattingTest checks the refusal of them)
    conf.setBoolean(SocketPaths.ALLOW_STICKY_KEY, true);
    return conf;
  }

  /**
   * {@link #baseConf} with {@code block}-byte blocks and DISK volumes on the rotational policy
   * (an untagged DISK volume goes by its device: "auto"), written in {@code writeMode} (null:
   * left at "auto", which gives cache-first there).
   */
  static Configuration diskConf(long block, String writeMode) {
    Configuration conf = baseConf();
    conf.setLong(DFSConfigKeys.DFS_BLOCK_SIZE_KEY, block);
    conf.set(org.hdfsrdma.datanode.disk.DiskSettings.POLICY_KEY_PREFIX + "disk", "rotational");
    if (writeMode != null) {
      conf.set(org.hdfsrdma.datanode.disk.DiskSettings.WRITE_MODE_KEY_PREFIX + "disk", writeMode);
    }
    return conf;
  }

  /**
   * The file holding {@code dn}'s replica of {@code block}, asked of that
   * DataNode's dataset. MiniDFSCluster#getBlockFile(index, ...) looks in the
   * storage directories of the index's first DataNode, which is another one
   * once a DataNode was restarted (it moves to the end of the list).
   */
  static File blockFile(MiniDFSCluster cluster, DatanodeInfo dn, ExtendedBlock block) throws IOException {
    for (DataNode d : cluster.getDataNodes()) {
      if (d.getDatanodeUuid().equals(dn.getDatanodeUuid())) {
        File f = new File(d.getFSDataset().getBlockLocalPathInfo(block).getBlockPath());
        assertTrue(f.isFile(), "block file " + f);
        return f;
      }
    }
    throw new AssertionError("no DataNode " + dn);
  }

  /** Starts {@code dataNodes} DataNodes under target/test-dir/OWNER and waits for their plugins. */
  static MiniDFSCluster start(Configuration conf, Class<?> owner, int dataNodes) throws Exception {
    File base = new File("target/test-dir/" + owner.getSimpleName());
    MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(dataNodes).build();
    try {
      cluster.waitActive();
      awaitPluginsServing(cluster);
    } catch (Exception | Error e) {
      // a cluster that did not come up must not outlive its test: its DataNodes' ports and
      // plugins would be taken for the next test's
      cluster.shutdown();
      throw e;
    }
    return cluster;
  }

  /**
   * Waits until the plugin of every DataNode of this cluster serves, restarting a DataNode
   * whose plugin port another socket held (PluginMiniClusters).
   */
  static void awaitPluginsServing(MiniDFSCluster cluster) throws Exception {
    PluginMiniClusters.awaitServing(cluster);
  }

  /** The sum of {@code f} over the write-segment statistics of every running plugin. */
  static long writeShmSum(java.util.function.ToLongFunction<RdmaDataNodePlugin.WriteShmStats> f) {
    long n = 0;
    for (RdmaDataNodePlugin p : RdmaDataNodePlugin.running()) {
      RdmaDataNodePlugin.WriteShmStats s = p.writeShm();
      if (s != null) {
        n += f.applyAsLong(s);
      }
    }
    return n;
  }

  /** Waits up to 30 s for {@code value} to become {@code want} (released asynchronously), then asserts it. */
  static void awaitValue(java.util.function.LongSupplier value, long want, String what) throws InterruptedException {
    long until = System.nanoTime() + 30_000_000_000L;
    while (value.getAsLong() != want && System.nanoTime() < until) {
      Thread.sleep(20);
    }
    assertEquals(want, value.getAsLong(), what);
  }

  /** Closes {@code fs} and shuts {@code cluster} down; either may be null (a setup that failed). */
  static void shutdown(org.apache.hadoop.fs.FileSystem fs, MiniDFSCluster cluster) throws java.io.IOException {
    try {
      if (fs != null) {
        fs.close();
      }
    } finally {
      if (cluster != null) {
        cluster.shutdown();
      }
    }
  }

  /** The whole of {@code p} read through {@code fs}, checking that the stream ends where the file does. */
  static byte[] readWhole(org.apache.hadoop.fs.FileSystem fs, org.apache.hadoop.fs.Path p) throws IOException {
    byte[] got = new byte[(int) fs.getFileStatus(p).getLen()];
    try (org.apache.hadoop.fs.FSDataInputStream in = fs.open(p)) {
      in.readFully(got);
      assertEquals(-1, in.read());
    }
    return got;
  }

  /** {@code n} reproducible random bytes. */
  static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new java.util.Random(seed).nextBytes(b);
    return b;
  }

  /**
   * A client configuration whose hdfs:// FileSystem is ours (not cached).
   * Short-circuit reads are off: every DataNode of a MiniDFSCluster is on
   * this host, and these tests are about the transports (LocalReadTest turns
   * them on).
   */
  static Configuration rdmaClientConf(MiniDFSCluster cluster) {
    Configuration c = new Configuration(cluster.getConfiguration(0));
    c.set("fs.hdfs.impl", RdmaDistributedFileSystem.class.getName());
    c.setBoolean("fs.hdfs.impl.disable.cache", true);
    c.setBoolean(RdmaBlockClient.LOCAL_READS_KEY, false);
    return c;
  }

  /** This process's open descriptors of {@code file} (a leak check: the DataNodes run in this JVM). */
  static long descriptorsOf(String file) throws IOException {
    long n = 0;
    try (java.util.stream.Stream<java.nio.file.Path> fds = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/fd"))) {
      for (java.nio.file.Path fd : (Iterable<java.nio.file.Path>) fds::iterator) {
        try {
          if (java.nio.file.Files.readSymbolicLink(fd).toString().equals(file)) {
            n++;
          }
        } catch (IOException gone) {
          // closed while listed
        }
      }
    }
    return n;
  }
}
