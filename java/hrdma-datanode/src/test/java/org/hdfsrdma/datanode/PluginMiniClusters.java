package org.hdfsrdma.datanode;

import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;

/**
 * For tests that run the plugin in a MiniDFSCluster (this module's test jar, used by the
 * client and Hadoop-test modules). A plugin listens on its DataNode's xfer port + the port
 * offset; with MiniDFSCluster's ephemeral ports another socket of the machine sometimes holds
 * that port (more often the busier the machine), and the plugin then leaves its DataNode on
 * the stock path, logged once, by design. Tests that need every DataNode served by the plugin
 * restart such a DataNode on new ports.
 */
public final class PluginMiniClusters {
  private static final int RESTARTS = 3;
  private static final long SETTLE_NS = TimeUnit.SECONDS.toNanos(30);

  private PluginMiniClusters() {}

  /**
   * Waits until the plugin of every DataNode of {@code cluster} serves, restarting (at most
   * three times) a DataNode whose plugin could not listen. Plugins are matched by DataNode
   * UUID: other clusters may run in the same JVM.
   *
   * @throws AssertionError when a plugin fails otherwise or does not serve within 30 s
   */
  public static void awaitServing(MiniDFSCluster cluster) throws Exception {
    for (int restarts = 0; ; restarts++) {
      int taken = awaitSettled(cluster.getDataNodes());
      if (taken < 0) {
        return;
      }
      if (restarts == RESTARTS) {
        throw new AssertionError("plugin port still taken after " + RESTARTS + " restarts: "
            + RdmaDataNodePlugin.running());
      }
      cluster.restartDataNode(taken, false); // new ephemeral ports
      cluster.waitActive();
    }
  }

  /** -1 once every plugin serves; the index of a DataNode whose plugin could not listen. */
  private static int awaitSettled(List<DataNode> dataNodes) throws InterruptedException {
    long end = System.nanoTime() + SETTLE_NS;
    while (true) {
      boolean serving = true;
      for (int i = 0; i < dataNodes.size(); i++) {
        RdmaDataNodePlugin p = pluginOf(dataNodes.get(i).getDatanodeUuid());
        RdmaDataNodePlugin.State st = p == null ? null : p.state();
        if (st == RdmaDataNodePlugin.State.FAILED && String.valueOf(p.failure()).contains("cannot listen")) {
          return i;
        }
        serving &= st == RdmaDataNodePlugin.State.SERVING;
      }
      if (serving) {
        return -1;
      }
      if (System.nanoTime() > end) {
        throw new AssertionError("plugins not serving: " + RdmaDataNodePlugin.running());
      }
      Thread.sleep(20);
    }
  }

  /**
   * Until the returned handle is closed, a plugin that starts in this JVM stays "starting" (it
   * listens and refuses every hello as starting) until {@code release} opens: its warm-up waits
   * for it ({@link RdmaDataNodePlugin#warmUpBody}), then runs. Closing restores the warm-up (and
   * does not open {@code release}).
   */
  public static AutoCloseable holdStarting(java.util.concurrent.CountDownLatch release) {
    java.util.concurrent.Callable<Integer> real = RdmaDataNodePlugin.warmUpBody;
    RdmaDataNodePlugin.warmUpBody = () -> {
      release.await();
      return real.call();
    };
    return () -> RdmaDataNodePlugin.warmUpBody = real;
  }

  private static RdmaDataNodePlugin pluginOf(String uuid) {
    return uuid == null ? null : RdmaDataNodePlugin.running().stream()
        .filter(p -> uuid.equals(p.datanodeUuid())).findFirst().orElse(null);
  }
}
