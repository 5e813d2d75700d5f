package org.hdfsrdma.cluster;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code hrdma cluster start|stop|status --dir DIR [options]}: exit 0 on success (status:
 * all healthy), 1 on failure (status: not healthy), 2 on a usage error.
 */
public final class ClusterMain {
  /** System property naming the daemons' classpath; default: this JVM's class path. */
  public static final String CLASSPATH_PROPERTY = "hrdma.cluster.classpath";

  static final String USAGE = """
      usage: hrdma cluster start  --dir DIR [--datanodes N] [--transport-order LIST] [--port-offset K]
                                  [--namenode-port P] [--storage TYPES] [--conf KEY=VALUE]... [--jvm-opts "OPTS"]
                                  [--timeout SEC]
             hrdma cluster stop   --dir DIR [--timeout SEC]
             hrdma cluster status --dir DIR
        start   a stock Hadoop NameNode and N DataNodes (default 3) with the hrdma plugin, one JVM each,
                on 127.0.0.1, data and logs under DIR; formats on the first start only. Options not given
                are those of the previous start in DIR. Prints fs.defaultFS and the client configuration
                (DIR/client-site.xml), waits until every DataNode is live and every plugin serves.
                --transport-order   hrdma.transport.order for the DataNodes and the client (e.g. ucx,tcp)
                --port-offset       hrdma.datanode.port-offset: plugin port = xfer port + K (default 1000)
                --namenode-port     fixed NameNode RPC port (default: a free one, the previous one if free)
                --storage TYPES     each DataNode's volumes by storage type, e.g. SSD,DISK: one directory
                                    per entry under DIR/dnI/data, [SSD]/[DISK] in dfs.datanode.data.dir
                --conf KEY=VALUE    extra setting for every daemon and the client (repeatable)
                --jvm-opts          JVM options of each daemon (default -Xmx1g)
                --timeout           seconds to wait for a healthy cluster (default 180)
        stop    SIGTERM to every daemon, SIGKILL after --timeout seconds (default 30); data stays
        status  per daemon: pid alive, ports, state at the NameNode, plugin port reachable;
                exit 0 when all are healthy, 1 otherwise
      """;

  private ClusterMain() {}

  public static void main(String[] args) {
    System.exit(run(args, System.out, System.err));
  }

  static final class UsageException extends Exception {
    UsageException(String message) {
      super(message);
    }
  }

  /** Parsed command line. */
  record Command(String action, Path dir, StartOptions start, long stopTimeoutMs) {}

  static Command parse(String[] args) throws UsageException {
    if (args.length == 0) {
      throw new UsageException("missing start, stop or status");
    }
    String action = args[0];
    if (!List.of("start", "stop", "status").contains(action)) {
      throw new UsageException("unknown action '" + action + "'");
    }
    Path dir = null;
    int dataNodes = 0;
    String order = null;
    Integer offset = null;
    int nnPort = 0;
    String jvmOpts = null;
    Map<String, String> conf = new LinkedHashMap<>();
    Long timeoutSec = null;
    List<String> rest = new ArrayList<>(List.of(args).subList(1, args.length));
    for (int i = 0; i < rest.size(); i++) {
      String a = rest.get(i);
      String v = null;
      int eq = a.indexOf('=');
      if (a.startsWith("--") && eq > 0) {
        v = a.substring(eq + 1);
        a = a.substring(0, eq);
      }
      boolean startOnly = !List.of("--dir", "--timeout").contains(a);
      if (startOnly && !action.equals("start") && a.startsWith("--")) {
        throw new UsageException(a + " is an option of start only");
      }
      if (v == null) {
        if (i + 1 >= rest.size()) {
          throw new UsageException(a.startsWith("--") ? a + " needs a value" : "unexpected argument '" + a + "'");
        }
        if (!a.startsWith("--")) {
          throw new UsageException("unexpected argument '" + a + "'");
        }
        v = rest.get(++i);
      }
      switch (a) {
        case "--dir" -> dir = Path.of(v);
        case "--datanodes" -> {
          dataNodes = intArg(a, v);
          if (dataNodes < 1 || dataNodes > 64) {
            throw new UsageException("--datanodes must be 1..64, not " + v);
          }
        }
        case "--transport-order" -> {
          order = v.replace(" ", "");
          if (!order.matches("[a-z0-9]+(,[a-z0-9]+)*")) {
            throw new UsageException("--transport-order is a comma-separated list like ucx,stream,tcp, not '" + v + "'");
          }
        }
        case "--port-offset" -> offset = intArg(a, v);
        case "--namenode-port" -> {
          nnPort = intArg(a, v);
          if (nnPort < 1 || nnPort > 65535) {
            throw new UsageException("--namenode-port must be a port, not " + v);
          }
        }
        case "--jvm-opts" -> jvmOpts = v;
        case "--storage" -> {
          try {
            conf.put(ClusterConfig.STORAGE_TYPES_KEY, String.join(",", ClusterConfig.storageTypes(v)));
          } catch (IllegalArgumentException e) {
            throw new UsageException("--storage: " + e.getMessage());
          }
        }
        case "--conf" -> {
          int e = v.indexOf('=');
          if (e <= 0) {
            throw new UsageException("--conf takes KEY=VALUE, not '" + v + "'");
          }
          conf.put(v.substring(0, e).trim(), v.substring(e + 1).trim());
        }
        case "--timeout" -> {
          timeoutSec = (long) intArg(a, v);
          if (timeoutSec < 1) {
            throw new UsageException("--timeout must be at least 1 s");
          }
        }
        default -> throw new UsageException("unknown option " + a);
      }
    }
    if (dir == null) {
      throw new UsageException("--dir DIR is required");
    }
    String cp = System.getProperty(CLASSPATH_PROPERTY, System.getProperty("java.class.path"));
    StartOptions so = new StartOptions(dataNodes, order, offset, nnPort, jvmOpts, conf,
        timeoutSec != null ? timeoutSec * 1000 : StartOptions.DEFAULT_TIMEOUT_MS, cp);
    return new Command(action, dir, so, timeoutSec != null ? timeoutSec * 1000 : 30_000);
  }

  private static int intArg(String name, String v) throws UsageException {
    try {
      return Integer.parseInt(v.trim());
    } catch (NumberFormatException e) {
      throw new UsageException(name + " takes a number, not '" + v + "'");
    }
  }

  public static int run(String[] args, PrintStream out, PrintStream err) {
    if (args.length > 0 && List.of("-h", "--help", "help").contains(args[0])) {
      out.print(USAGE);
      return 0;
    }
    Command c;
    try {
      c = parse(args);
    } catch (UsageException e) {
      err.println("hrdma cluster: " + e.getMessage());
      err.print(USAGE);
      return 2;
    }
    ClusterManager m = new ClusterManager(c.dir(), out);
    try {
      switch (c.action()) {
        case "start" -> {
          m.start(c.start());
          return 0;
        }
        case "stop" -> {
          m.stop(c.stopTimeoutMs());
          return 0;
        }
        default -> {
          StatusReport r = m.status();
          out.print(r.format());
          return r.healthy() ? 0 : 1;
        }
      }
    } catch (ClusterException e) {
      err.println("hrdma cluster " + c.action() + ": " + e.getMessage());
      return 1;
    } catch (IOException e) {
      err.println("hrdma cluster " + c.action() + ": " + e);
      return 1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      err.println("hrdma cluster " + c.action() + ": interrupted");
      return 1;
    }
  }
}
