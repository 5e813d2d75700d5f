package org.hdfsrdma.client.contract;

import java.io.File;
import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.hdfsrdma.client.RdmaDistributedFileSystem;
import org.hdfsrdma.datanode.PluginMiniClusters;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;

/**
 * Hadoop's FileSystem contract for {@link RdmaDistributedFileSystem} on a
 * MiniDFSCluster whose DataNode runs the plugin. One cluster for all contract
 * suites of the JVM (started on first use, stopped at exit); the options are
 * {@code contract/hrdma-hdfs.xml}.
 */
public class RdmaHdfsContract extends AbstractFSContract {
  public static final String CONTRACT_XML = "contract/hrdma-hdfs.xml";
  private static MiniDFSCluster cluster;
  private static RdmaDistributedFileSystem fs;
  private static IOException startFailure;

  public RdmaHdfsContract(Configuration conf) {
    super(conf);
    addConfResource(CONTRACT_XML);
  }

  /** The shared cluster's file system (ours), starting the cluster on first use. */
  public static synchronized RdmaDistributedFileSystem fileSystem() throws IOException {
    if (startFailure != null) {
      throw new IOException("the contract cluster did not start", startFailure);
    }
    if (fs == null) {
      try {
        start();
      } catch (IOException | RuntimeException e) {
        startFailure = e instanceof IOException io ? io : new IOException(e);
        if (cluster != null) {
          cluster.shutdown();
        }
        throw e;
      }
    }
    return fs;
  }

  private static void start() throws IOException {
    {
      Configuration conf = new Configuration();
      conf.set(DFSConfigKeys.DFS_DATANODE_PLUGINS_KEY, RdmaDataNodePlugin.class.getName());
      conf.setBoolean(DFSConfigKeys.DFS_BLOCK_ACCESS_TOKEN_ENABLE_KEY, true);
      conf.setBoolean(org.hdfsrdma.protocol.SocketPaths.ALLOW_STICKY_KEY, true); // its socket is in /tmp
      conf.setLong(DFSConfigKeys.DFS_BLOCK_SIZE_KEY, 1 << 20);
      conf.setInt(DFSConfigKeys.DFS_REPLICATION_KEY, 1);
      // one cluster per test JVM (the module's tests run in two at once)
      File base = new File("target/test-dir/contract-" + ProcessHandle.current().pid());
      cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(1).build();
      cluster.waitActive();
      try {
        PluginMiniClusters.awaitServing(cluster);
      } catch (Exception | AssertionError e) {
        throw new IOException("plugin not serving", e);
      }
      Configuration client = new Configuration(cluster.getConfiguration(0));
      client.set("fs.hdfs.impl", RdmaDistributedFileSystem.class.getName());
      client.setBoolean("fs.hdfs.impl.disable.cache", true);
      fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), client);
    }
  }

  /** Stops the cluster (each suite's {@code @AfterAll}; the next suite starts another). */
  public static synchronized void shutdown() throws IOException {
    try {
      if (fs != null) {
        fs.close();
      }
    } finally {
      fs = null;
      startFailure = null;
      if (cluster != null) {
        cluster.shutdown();
        cluster = null;
      }
    }
  }

  @Override
  public FileSystem getTestFileSystem() throws IOException {
    return fileSystem();
  }

  @Override
  public String getScheme() {
    return "hdfs";
  }

  @Override
  public Path getTestPath() {
    return new Path("/test");
  }
}
