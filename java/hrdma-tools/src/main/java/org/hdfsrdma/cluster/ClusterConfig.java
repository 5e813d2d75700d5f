package org.hdfsrdma.cluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.hdfsrdma.protocol.HrdmaProtocolKeys;
import org.hdfsrdma.transport.HrdmaTransportKeys;

/**
 * Generates each daemon's core-site.xml / hdfs-site.xml / log4j.properties and the
 * client's configuration from a {@link ClusterState}. Each daemon binds and advertises its
 * host in the state: {@link #HOST} unless placed elsewhere (network namespaces).
 *
 * <p>Besides addresses and directories the daemons get settings for a single-host
 * test cluster: replication min(3, N), no safe-mode extension, 1 s heartbeats and a
 * DataNode declared dead after ~20 s (recheck 5 s). {@code --conf KEY=VALUE} entries
 * come last and override any of them, in every daemon's and the client's file.
 */
public final class ClusterConfig {
  public static final String HOST = "127.0.0.1";
  public static final String PLUGIN_CLASS = "org.hdfsrdma.datanode.RdmaDataNodePlugin";
  /** Our client, which client-site.xml selects for hdfs:// (the application needs the plugin jar). */
  public static final String CLIENT_CLASS = "org.hdfsrdma.client.RdmaDistributedFileSystem";
  /** The plugin's port offset and the transport order, as the daemons read them. */
  public static final String PORT_OFFSET_KEY = HrdmaProtocolKeys.DATANODE_PORT_OFFSET_KEY;
  public static final int PORT_OFFSET_DEFAULT = HrdmaProtocolKeys.DATANODE_PORT_OFFSET_DEFAULT;
  public static final String TRANSPORT_ORDER_KEY = HrdmaTransportKeys.TRANSPORT_ORDER_KEY;
  /**
   * The storage types of each DataNode's volumes, comma-separated (e.g. SSD,DISK): one
   * directory per entry under DIR/dnI/data, tagged [SSD]/[DISK] in dfs.datanode.data.dir.
   * Unset: one untagged (DISK) volume.
   */
  public static final String STORAGE_TYPES_KEY = HrdmaClusterKeys.STORAGE_TYPES_KEY;
  public static final java.util.List<String> STORAGE_TYPES = java.util.List.of("DISK", "SSD", "ARCHIVE",
      "RAM_DISK", "NVDIMM");

  /** The storage types of {@link #STORAGE_TYPES_KEY}'s value, upper case; refused when unknown. */
  public static java.util.List<String> storageTypes(String value) {
    java.util.List<String> out = new java.util.ArrayList<>();
    for (String t : value.split(",")) {
      String u = t.trim().toUpperCase(java.util.Locale.ROOT);
      if (!STORAGE_TYPES.contains(u)) {
        throw new IllegalArgumentException("unknown storage type '" + t.trim() + "' (one of " + STORAGE_TYPES + ")");
      }
      out.add(u);
    }
    return out;
  }

  private final ClusterLayout layout;
  private final ClusterState state;

  public ClusterConfig(ClusterLayout layout, ClusterState state) {
    this.layout = layout;
    this.state = state;
  }

  public static String fsDefaultFs(int rpcPort) {
    return fsDefaultFs(HOST, rpcPort);
  }

  public static String fsDefaultFs(String host, int rpcPort) {
    return "hdfs://" + host + ":" + rpcPort;
  }

  private int replication() {
    return Math.min(3, state.dataNodes().size());
  }

  /** core-site.xml of every daemon. */
  public Map<String, String> coreSite() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("fs.defaultFS", state.fsDefaultFs());
    m.put("hadoop.tmp.dir", layout.tmpDir().toString());
    return m;
  }

  private Map<String, String> commonHdfs() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("dfs.replication", Integer.toString(replication()));
    m.put("dfs.http.policy", "HTTP_ONLY");
    String nn = state.host(ClusterLayout.NAMENODE);
    m.put("dfs.namenode.rpc-address", nn + ":" + state.nameNode().rpcPort());
    m.put("dfs.namenode.http-address", nn + ":" + state.nameNode().httpPort());
    m.put("dfs.namenode.secondary.http-address", nn + ":0");
    m.put("dfs.heartbeat.interval", "1");
    m.put("dfs.namenode.heartbeat.recheck-interval", "5000");
    m.put(PORT_OFFSET_KEY, Integer.toString(state.portOffset()));
    if (!state.transportOrder().isEmpty()) {
      m.put(TRANSPORT_ORDER_KEY, state.transportOrder());
    }
    return m;
  }

  /** hdfs-site.xml of the NameNode. */
  public Map<String, String> nameNodeHdfsSite() {
    Map<String, String> m = commonHdfs();
    m.put("dfs.namenode.name.dir", layout.nameDir().toUri().toString());
    m.put("dfs.namenode.safemode.extension", "0");
    m.put("dfs.namenode.datanode.registration.ip-hostname-check", "false");
    m.putAll(state.extraConf());
    return m;
  }

  /** hdfs-site.xml of DataNode {@code i} (1-based). */
  public Map<String, String> dataNodeHdfsSite(int i) {
    DaemonState d = state.dataNodes().get(i - 1);
    String host = state.host(d.name());
    Map<String, String> m = commonHdfs();
    String types = state.extraConf().get(STORAGE_TYPES_KEY);
    if (types == null || types.isBlank()) {
      m.put("dfs.datanode.data.dir", layout.dataDir(i).toUri().toString());
    } else {
      java.util.List<String> dirs = new java.util.ArrayList<>();
      java.util.List<String> ts = storageTypes(types);
      for (int k = 0; k < ts.size(); k++) {
        String t = ts.get(k);
        dirs.add("[" + t + "]" + layout.dataDir(i).resolve(t.toLowerCase(java.util.Locale.ROOT) + k).toUri());
      }
      m.put("dfs.datanode.data.dir", String.join(",", dirs));
    }
    m.put("dfs.datanode.address", host + ":" + d.xferPort());
    m.put("dfs.datanode.ipc.address", host + ":" + d.ipcPort());
    m.put("dfs.datanode.http.address", host + ":" + d.httpPort());
    m.put("dfs.datanode.hostname", host);
    m.put("dfs.datanode.plugins", PLUGIN_CLASS);
    m.putAll(state.extraConf());
    return m;
  }

  /**
   * What a client needs: client-site.xml (and client-conf/core-site.xml). It selects our
   * client for hdfs:// ({@code fs.hdfs.impl}); {@code --conf fs.hdfs.impl=...} overrides it.
   */
  public Map<String, String> clientSite() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("fs.defaultFS", state.fsDefaultFs());
    m.put("fs.hdfs.impl", CLIENT_CLASS);
    m.put("dfs.replication", Integer.toString(replication()));
    m.put(PORT_OFFSET_KEY, Integer.toString(state.portOffset()));
    if (!state.transportOrder().isEmpty()) {
      m.put(TRANSPORT_ORDER_KEY, state.transportOrder());
    }
    m.putAll(state.extraConf());
    return m;
  }

  static String log4jProperties() {
    return """
        # Everything to stderr, which 'hrdma cluster' sends to DIR/logs/<daemon>.log
        log4j.rootLogger=INFO,console
        log4j.appender.console=org.apache.log4j.ConsoleAppender
        log4j.appender.console.target=System.err
        log4j.appender.console.layout=org.apache.log4j.PatternLayout
        log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2}: %m%n
        log4j.logger.FSNamesystem.audit=WARN
        log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
        """;
  }

  /** Writes conf/nn, conf/dnI (I = 1..N), client-site.xml and client-conf/core-site.xml. */
  public void writeAll() throws IOException {
    Path nn = layout.confDir(ClusterLayout.NAMENODE);
    writeDaemon(nn, nameNodeHdfsSite());
    for (int i = 1; i <= state.dataNodes().size(); i++) {
      writeDaemon(layout.confDir(ClusterLayout.dataNodeName(i)), dataNodeHdfsSite(i));
    }
    String client = toXml(clientSite(), "Client settings for the hdfs-rdma local cluster in " + layout.dir()
        + ".\n     Use: Configuration.addResource(new Path(\"" + layout.clientSite() + "\")),\n"
        + "     or HADOOP_CONF_DIR=" + layout.clientConfDir() + " (same content as core-site.xml).");
    write(layout.clientSite(), client);
    write(layout.clientConfDir().resolve("core-site.xml"), client);
  }

  private void writeDaemon(Path dir, Map<String, String> hdfsSite) throws IOException {
    write(dir.resolve("core-site.xml"), toXml(coreSite(), "generated by hrdma cluster start; rewritten on every start"));
    write(dir.resolve("hdfs-site.xml"), toXml(hdfsSite, "generated by hrdma cluster start; rewritten on every start"));
    write(dir.resolve("log4j.properties"), log4jProperties());
  }

  private static void write(Path file, String text) throws IOException {
    Files.createDirectories(file.getParent());
    Files.writeString(file, text, StandardCharsets.UTF_8);
  }

  /** A Hadoop configuration file with {@code props} in order. */
  public static String toXml(Map<String, String> props, String comment) {
    StringBuilder b = new StringBuilder("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    if (comment != null) {
      b.append("<!-- ").append(comment.replace("--", "- -")).append(" -->\n");
    }
    b.append("<configuration>\n");
    for (Map.Entry<String, String> e : props.entrySet()) {
      b.append("  <property><name>").append(xml(e.getKey())).append("</name><value>")
          .append(xml(e.getValue())).append("</value></property>\n");
    }
    return b.append("</configuration>\n").toString();
  }

  private static String xml(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
  }
}
