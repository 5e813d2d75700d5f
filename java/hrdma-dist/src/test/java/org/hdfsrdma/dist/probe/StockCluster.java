package org.hdfsrdma.dist.probe;

import java.io.File;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.namenode.NameNode;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;

/**
 * Runs INSIDE an isolated class loader of {@code ShadedJarOnStockHadoopTest} (stock Hadoop 3.5.0's
 * jars + the shaded jar): a stock NameNode and one stock DataNode with the plugin, in this JVM,
 * from Hadoop's own classes (not MiniDFSCluster, which is in no stock jar). {@link #apply} takes
 * the base directory, starts them and returns {@code fs.defaultFS}; {@link #close} stops them.
 */
public final class StockCluster implements Function<File, String>, AutoCloseable {
  private static final long WAIT_S = 60;
  private NameNode nn;
  private DataNode dn;

  @Override
  public String apply(File base) {
    try {
      return start(base);
    } catch (RuntimeException | Error e) {
      close();
      throw e;
    } catch (Exception e) {
      close();
      throw new IllegalStateException(e);
    }
  }

  private String start(File base) throws Exception {
    Configuration conf = new HdfsConfiguration();
    conf.set("hadoop.tmp.dir", new File(base, "tmp").getAbsolutePath());
    conf.set("dfs.namenode.name.dir", new File(base, "nn").toURI().toString());
    conf.set("fs.defaultFS", "hdfs://127.0.0.1:0");
    conf.set("dfs.namenode.rpc-address", "127.0.0.1:0");
    conf.set("dfs.namenode.http-address", "127.0.0.1:0");
    conf.set("dfs.namenode.safemode.extension", "0");
    conf.set("dfs.namenode.datanode.registration.ip-hostname-check", "false");
    conf.setInt("dfs.replication", 1);
    conf.setInt("dfs.heartbeat.interval", 1);
    // format and start each make a namesystem, whose metrics would clash (as MiniDFSCluster does)
    DefaultMetricsSystem.setMiniClusterMode(true);
    NameNode.format(conf);
    nn = NameNode.createNameNode(new String[0], conf);
    InetSocketAddress rpc = nn.getNameNodeAddress();
    String fsUri = "hdfs://127.0.0.1:" + rpc.getPort();

    Configuration d = new Configuration(conf);
    d.set("fs.defaultFS", fsUri);
    d.set("dfs.namenode.rpc-address", "127.0.0.1:" + rpc.getPort());
    d.set("dfs.datanode.data.dir", new File(base, "dn").toURI().toString());
    d.set("dfs.datanode.address", "127.0.0.1:0");
    d.set("dfs.datanode.ipc.address", "127.0.0.1:0");
    d.set("dfs.datanode.http.address", "127.0.0.1:0");
    d.set("dfs.datanode.hostname", "127.0.0.1");
    d.set("dfs.datanode.plugins", RdmaDataNodePlugin.class.getName());
    dn = DataNode.createDataNode(new String[0], d);

    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_S);
    while (!(dn.isDatanodeFullyStarted() && nn.getNamesystem().getNumLiveDataNodes() == 1
        && !nn.getNamesystem().isInSafeMode() && serving())) {
      if (System.nanoTime() > until) {
        throw new IllegalStateException("the cluster did not come up in " + WAIT_S + " s: DataNode started "
            + dn.isDatanodeFullyStarted() + ", live " + nn.getNamesystem().getNumLiveDataNodes() + ", plugins "
            + RdmaDataNodePlugin.running());
      }
      Thread.sleep(20);
    }
    return fsUri;
  }

  private static boolean serving() {
    return RdmaDataNodePlugin.running().stream().anyMatch(p -> p.serviceAddress() != null);
  }

  @Override
  public void close() {
    if (dn != null) {
      dn.shutdown();
      dn = null;
    }
    if (nn != null) {
      nn.stop();
      nn.join();
      nn = null;
    }
  }
}
