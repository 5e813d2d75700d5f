package org.hdfsrdma.cluster;

import java.util.List;
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
 * @param hosts          the address each daemon binds and advertises, by daemon name ({@code nn},
 *                       {@code dn1}...); a daemon not listed binds {@link ClusterConfig#HOST}
 * @param launchPrefix   a command each daemon's java runs under, by daemon name (e.g.
 *                       {@code ip netns exec NS}); must exec java in the same process
 */
public record StartOptions(int dataNodes, String transportOrder, Integer portOffset, int nameNodePort,
    String jvmOpts, Map<String, String> conf, long timeoutMs, String classpath, Map<String, String> hosts,
    Map<String, List<String>> launchPrefix) {
  public static final int DEFAULT_DATANODES = 3;
  public static final String DEFAULT_JVM_OPTS = "-Xmx1g";
  public static final long DEFAULT_TIMEOUT_MS = 180_000;

  public StartOptions {
    conf = Map.copyOf(conf);
    hosts = Map.copyOf(hosts);
    launchPrefix = Map.copyOf(launchPrefix);
  }

  /** Every daemon on {@link ClusterConfig#HOST}, started directly (the local cluster). */
  public StartOptions(int dataNodes, String transportOrder, Integer portOffset, int nameNodePort, String jvmOpts,
      Map<String, String> conf, long timeoutMs, String classpath) {
    this(dataNodes, transportOrder, portOffset, nameNodePort, jvmOpts, conf, timeoutMs, classpath, Map.of(),
        Map.of());
  }
}
