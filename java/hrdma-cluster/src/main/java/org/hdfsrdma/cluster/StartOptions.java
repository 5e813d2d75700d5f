package org.hdfsrdma.cluster;

import java.util.Map;

/**
 * Options of {@code cluster start}. Unset values (0, null) come from the cluster's
 * previous start (cluster.properties), else from the defaults.
 *
 * @param dataNodes      --datanodes (default 3)
 * @param transportOrder --transport-order (default: none set, the plugin's default)
 * @param portOffset     --port-offset, hrdma.datanode.port-offset (default 1000)
 * @param nameNodePort   --namenode-port: a fixed NameNode RPC port (default: picked)
 * @param jvmOpts        --jvm-opts for every daemon (default {@value #DEFAULT_JVM_OPTS})
 * @param conf           --conf KEY=VALUE, added to every daemon's and the client's settings
 * @param timeoutMs      --timeout: how long start waits for a healthy cluster
 * @param classpath      Hadoop + hrdma jars for the daemons
 */
public record StartOptions(int dataNodes, String transportOrder, Integer portOffset, int nameNodePort,
    String jvmOpts, Map<String, String> conf, long timeoutMs, String classpath) {
  public static final int DEFAULT_DATANODES = 3;
  public static final String DEFAULT_JVM_OPTS = "-Xmx1g";
  public static final long DEFAULT_TIMEOUT_MS = 180_000;

  public StartOptions {
    conf = Map.copyOf(conf);
  }
}
