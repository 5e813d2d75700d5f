package org.hdfsrdma.bench.mr;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.hdfsrdma.tools.fs.LocalCluster;
import org.hdfsrdma.client.RdmaDistributedFileSystem;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;

/**
 * {@code bench dfsio --mini}: Hadoop's MiniDFSCluster in this JVM, a NameNode and N
 * DataNodes each with the plugin, the way Hadoop's own tests (and TestDFSIO's) run a
 * cluster. The jobs then run in the same JVM as every daemon; the plugins share the JVM's transports
 * ({@code hrdma.datanode.share-transports=auto}; {@code --conf hrdma.datanode.share-transports=false} not).
 */
final class MiniCluster implements AutoCloseable {
  private static final long SERVING_TIMEOUT_S = 60;

  private final MiniDFSCluster cluster;
  private final Map<String, String> extra;
  private final Path base;
  private final boolean deleteBase;

  private MiniCluster(MiniDFSCluster cluster, Map<String, String> extra, Path base, boolean deleteBase) {
    this.cluster = cluster;
    this.extra = extra;
    this.base = base;
    this.deleteBase = deleteBase;
  }

  /** Starts {@code dataNodes} DataNodes under {@code dir} (null: a temporary directory) and waits for their plugins. */
  static MiniCluster start(Path dir, int dataNodes, long blockBytes, Map<String, String> extra) throws Exception {
    Path base = dir != null ? Files.createDirectories(dir) : Files.createTempDirectory("hrdma-mini-");
    Configuration conf = new Configuration();
    conf.set(DFSConfigKeys.DFS_DATANODE_PLUGINS_KEY, RdmaDataNodePlugin.class.getName());
    conf.setLong(DFSConfigKeys.DFS_BLOCK_SIZE_KEY, blockBytes);
    extra.forEach(conf::set);
    MiniDFSCluster c = null;
    try {
      c = new MiniDFSCluster.Builder(conf, base.toFile()).numDataNodes(dataNodes).build();
      c.waitActive();
      awaitServing(c);
      return new MiniCluster(c, extra, base, dir == null);
    } catch (Exception | Error e) {
      if (c != null) {
        c.shutdown();
      }
      if (dir == null) {
        LocalCluster.deleteTree(base);
      }
      throw e;
    }
  }

  /**
   * Waits until every DataNode's plugin serves. A plugin listens on its DataNode's
   * (ephemeral) xfer port + the port offset, which another socket may hold: that plugin
   * fails (the DataNode stays on the stock path), and its DataNode is restarted on new ports.
   */
  private static void awaitServing(MiniDFSCluster c) throws Exception {
    for (int attempt = 0; ; attempt++) {
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(SERVING_TIMEOUT_S);
      int failed = -1;
      while (true) {
        boolean all = true;
        List<DataNode> dns = c.getDataNodes();
        for (int i = 0; i < dns.size(); i++) {
          RdmaDataNodePlugin p = plugin(dns.get(i).getDatanodeUuid());
          if (p != null && p.state() == RdmaDataNodePlugin.State.FAILED) {
            failed = i;
            break;
          }
          all &= p != null && p.state() == RdmaDataNodePlugin.State.SERVING;
        }
        if (all && failed < 0) {
          return;
        }
        if (failed >= 0) {
          break;
        }
        if (System.nanoTime() > end) {
          throw new IOException("the DataNodes' plugins did not all serve within " + SERVING_TIMEOUT_S + " s: "
              + RdmaDataNodePlugin.running());
        }
        Thread.sleep(20);
      }
      String why = plugin(c.getDataNodes().get(failed).getDatanodeUuid()).failure();
      if (attempt >= 3 || why == null || !why.contains("cannot listen")) {
        throw new IOException("the plugin of DataNode " + failed + " failed: " + why);
      }
      c.restartDataNode(failed, false); // new ephemeral ports
      c.waitActive();
    }
  }

  private static RdmaDataNodePlugin plugin(String uuid) {
    return uuid == null ? null : RdmaDataNodePlugin.running().stream().filter(p -> uuid.equals(p.datanodeUuid()))
        .findFirst().orElse(null);
  }

  /** A client configuration for this cluster, {@code fs.hdfs.impl} ours or stock. */
  Configuration clientConf(boolean ours) {
    Configuration c = new Configuration(cluster.getConfiguration(0));
    extra.forEach(c::set);
    c.set("fs.hdfs.impl", (ours ? RdmaDistributedFileSystem.class : DistributedFileSystem.class).getName());
    return c;
  }

  /** Where the jobs' logs and outputs go. */
  Path workDir() throws IOException {
    return Files.createDirectories(base.resolve("jobs"));
  }

  @Override
  public void close() {
    try {
      cluster.shutdown();
    } finally {
      if (deleteBase) {
        LocalCluster.deleteTree(base);
      }
    }
  }
}
