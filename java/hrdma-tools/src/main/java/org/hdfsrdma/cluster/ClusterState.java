package org.hdfsrdma.cluster;

import java.io.IOException;
import java.io.Reader;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

/**
 * The contents of DIR/cluster.properties: how the cluster was started (so that a
 * plain {@code start --dir DIR} restarts it the same way), its ports and, while it
 * runs, the daemons' pids. Written atomically (temp file + rename).
 *
 * @param phase    starting (a start is in progress or was interrupted), running, stopped
 * @param extraConf the {@code --conf KEY=VALUE} settings, stored as {@code conf.KEY}
 * @param hosts    the address of each daemon not on {@link ClusterConfig#HOST}, stored as {@code NAME.host}
 */
public record ClusterState(String phase, String fsDefaultFs, int portOffset, String transportOrder,
    String jvmOpts, Map<String, String> extraConf, DaemonState nameNode, List<DaemonState> dataNodes,
    Map<String, String> hosts) {

  public static final String STARTING = "starting";
  public static final String RUNNING = "running";
  public static final String STOPPED = "stopped";

  public ClusterState {
    extraConf = Map.copyOf(extraConf);
    dataNodes = List.copyOf(dataNodes);
    hosts = Map.copyOf(hosts);
  }

  /** Every daemon on {@link ClusterConfig#HOST}. */
  public ClusterState(String phase, String fsDefaultFs, int portOffset, String transportOrder, String jvmOpts,
      Map<String, String> extraConf, DaemonState nameNode, List<DaemonState> dataNodes) {
    this(phase, fsDefaultFs, portOffset, transportOrder, jvmOpts, extraConf, nameNode, dataNodes, Map.of());
  }

  /** The address daemon {@code name} binds and advertises. */
  public String host(String name) {
    return hosts.getOrDefault(name, ClusterConfig.HOST);
  }

  public List<DaemonState> daemons() {
    List<DaemonState> all = new ArrayList<>();
    all.add(nameNode);
    all.addAll(dataNodes);
    return all;
  }

  public ClusterState withPhase(String p) {
    return new ClusterState(p, fsDefaultFs, portOffset, transportOrder, jvmOpts, extraConf, nameNode, dataNodes,
        hosts);
  }

  public ClusterState withDaemons(DaemonState nn, List<DaemonState> dns) {
    return new ClusterState(phase, fsDefaultFs, portOffset, transportOrder, jvmOpts, extraConf, nn, dns, hosts);
  }

  /** Every daemon without pid: what stop leaves behind. */
  public ClusterState withoutProcesses() {
    return withDaemons(nameNode.withoutProcess(), dataNodes.stream().map(DaemonState::withoutProcess).toList());
  }

  // ---- text form

  public String toText() {
    StringBuilder b = new StringBuilder();
    b.append("# hdfs-rdma local cluster, written by 'hrdma cluster'; do not edit while it runs\n");
    b.append("state=").append(phase).append('\n');
    b.append("fs.defaultFS=").append(fsDefaultFs).append('\n');
    b.append("datanodes=").append(dataNodes.size()).append('\n');
    b.append("port-offset=").append(portOffset).append('\n');
    b.append("transport-order=").append(escape(transportOrder)).append('\n');
    b.append("jvm-opts=").append(escape(jvmOpts)).append('\n');
    for (Map.Entry<String, String> e : new TreeMap<>(extraConf).entrySet()) {
      b.append("conf.").append(escape(e.getKey())).append('=').append(escape(e.getValue())).append('\n');
    }
    for (DaemonState d : daemons()) {
      String n = d.name();
      b.append(n).append(".pid=").append(d.pid()).append('\n');
      b.append(n).append(".start-millis=").append(d.startMillis()).append('\n');
      if (hosts.containsKey(n)) {
        b.append(n).append(".host=").append(escape(hosts.get(n))).append('\n');
      }
      if (d.isNameNode()) {
        b.append(n).append(".rpc.port=").append(d.rpcPort()).append('\n');
        b.append(n).append(".http.port=").append(d.httpPort()).append('\n');
      } else {
        b.append(n).append(".xfer.port=").append(d.xferPort()).append('\n');
        b.append(n).append(".ipc.port=").append(d.ipcPort()).append('\n');
        b.append(n).append(".http.port=").append(d.httpPort()).append('\n');
        b.append(n).append(".plugin.port=").append(d.pluginPort()).append('\n');
      }
    }
    return b.toString();
  }

  private static String escape(String s) {
    StringBuilder b = new StringBuilder();
    for (char c : s.toCharArray()) {
      switch (c) {
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '=' -> b.append("\\=");
        case ':' -> b.append("\\:");
        case '#' -> b.append("\\#");
        case '!' -> b.append("\\!");
        default -> b.append(c);
      }
    }
    return b.toString();
  }

  /** Parses {@link #toText}'s output; a malformed file is an IOException naming the problem. */
  public static ClusterState parse(String text) throws IOException {
    Properties p = new Properties();
    try (Reader r = new StringReader(text)) {
      p.load(r);
    }
    String phase = required(p, "state");
    if (!List.of(STARTING, RUNNING, STOPPED).contains(phase)) {
      throw new IOException("unknown state '" + phase + "'");
    }
    int n = intOf(p, "datanodes");
    if (n < 1) {
      throw new IOException("datanodes must be at least 1, not " + n);
    }
    Map<String, String> extra = new TreeMap<>();
    for (String k : p.stringPropertyNames()) {
      if (k.startsWith("conf.")) {
        extra.put(k.substring(5), p.getProperty(k));
      }
    }
    DaemonState nn = new DaemonState(ClusterLayout.NAMENODE, longOf(p, "nn.pid"), longOf(p, "nn.start-millis"),
        intOf(p, "nn.rpc.port"), intOf(p, "nn.http.port"), 0, 0, 0);
    List<DaemonState> dns = new ArrayList<>();
    for (int i = 1; i <= n; i++) {
      String d = ClusterLayout.dataNodeName(i);
      dns.add(new DaemonState(d, longOf(p, d + ".pid"), longOf(p, d + ".start-millis"), 0,
          intOf(p, d + ".http.port"), intOf(p, d + ".xfer.port"), intOf(p, d + ".ipc.port"),
          intOf(p, d + ".plugin.port")));
    }
    Map<String, String> hosts = new TreeMap<>();
    for (DaemonState d : dnsWith(nn, dns)) {
      String h = p.getProperty(d.name() + ".host");
      if (h != null && !h.isBlank()) {
        hosts.put(d.name(), h.trim());
      }
    }
    return new ClusterState(phase, required(p, "fs.defaultFS"), intOf(p, "port-offset"),
        p.getProperty("transport-order", ""), p.getProperty("jvm-opts", ""), extra, nn, dns, hosts);
  }

  private static List<DaemonState> dnsWith(DaemonState nn, List<DaemonState> dns) {
    List<DaemonState> all = new ArrayList<>(dns);
    all.add(0, nn);
    return all;
  }

  private static String required(Properties p, String key) throws IOException {
    String v = p.getProperty(key);
    if (v == null) {
      throw new IOException("missing '" + key + "'");
    }
    return v.trim();
  }

  private static long longOf(Properties p, String key) throws IOException {
    String v = required(p, key);
    try {
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw new IOException("'" + key + "' is not a number: '" + v + "'");
    }
  }

  private static int intOf(Properties p, String key) throws IOException {
    long v = longOf(p, key);
    if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
      throw new IOException("'" + key + "' out of range: " + v);
    }
    return (int) v;
  }

  /** The state in {@code file}, or null when there is none. */
  public static ClusterState load(Path file) throws IOException {
    if (!Files.exists(file)) {
      return null;
    }
    try {
      return parse(Files.readString(file, StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new IOException(file + " is unreadable (" + e.getMessage() + "); if no cluster runs from this"
          + " directory, remove that file", e);
    }
  }

  public void store(Path file) throws IOException {
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    Files.writeString(tmp, toText(), StandardCharsets.UTF_8);
    Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }
}
