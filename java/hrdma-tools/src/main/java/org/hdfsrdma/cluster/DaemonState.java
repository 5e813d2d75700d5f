package org.hdfsrdma.cluster;

/**
 * One daemon as recorded in cluster.properties: its name ({@code nn}, {@code dn1}...),
 * the pid and process start time while it runs (0 when not running), and its ports
 * (0 where a port does not apply: rpc for the NameNode, xfer/ipc/plugin for DataNodes).
 */
public record DaemonState(String name, long pid, long startMillis, int rpcPort, int httpPort,
    int xferPort, int ipcPort, int pluginPort) {

  public static DaemonState nameNode(int rpcPort, int httpPort) {
    return new DaemonState(ClusterLayout.NAMENODE, 0, 0, rpcPort, httpPort, 0, 0, 0);
  }

  public static DaemonState dataNode(int i, int xferPort, int ipcPort, int httpPort, int pluginPort) {
    return new DaemonState(ClusterLayout.dataNodeName(i), 0, 0, 0, httpPort, xferPort, ipcPort, pluginPort);
  }

  public boolean isNameNode() {
    return ClusterLayout.NAMENODE.equals(name);
  }

  public DaemonState withProcess(long newPid, long newStartMillis) {
    return new DaemonState(name, newPid, newStartMillis, rpcPort, httpPort, xferPort, ipcPort, pluginPort);
  }

  public DaemonState withoutProcess() {
    return withProcess(0, 0);
  }

  /** The main class Hadoop's own scripts run for this daemon. */
  public String mainClass() {
    return isNameNode() ? "org.apache.hadoop.hdfs.server.namenode.NameNode"
        : "org.apache.hadoop.hdfs.server.datanode.DataNode";
  }

  /** Every port this daemon listens on, for conflict checks and messages. */
  public int[] ports() {
    return isNameNode() ? new int[] {rpcPort, httpPort} : new int[] {xferPort, ipcPort, httpPort, pluginPort};
  }

  public String describePorts() {
    return isNameNode() ? "rpc " + rpcPort + ", http " + httpPort
        : "xfer " + xferPort + ", ipc " + ipcPort + ", http " + httpPort + ", plugin " + pluginPort;
  }
}
