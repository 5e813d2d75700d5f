package org.hdfsrdma.bench.mr;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.hdfsrdma.tools.Sizes;
import org.hdfsrdma.tools.UsageException;

/**
 * Options of {@code hrdma bench dfsio|randomwriter|sort|sweep}. Immutable.
 *
 * @param command     dfsio, randomwriter, sort or sweep
 * @param job         the Hadoop program (sweep: --job, default dfsio)
 * @param files       files / maps (--files)
 * @param fileBytes   bytes per file (--size)
 * @param blockBytes  dfs.blocksize (--block-size)
 * @param dataNodes   DataNodes of the cluster (--datanodes)
 * @param clients     concurrent tasks (--clients)
 * @param replication dfs.replication (--replication; default min(3, DataNodes))
 * @param transport   hrdma.transport.order for daemons and client (--transport; null: the plugin's default)
 * @param runs        runs per path (--runs); paths alternate ours, stock / stock, ours
 * @param quick       --quick: the small profile
 * @param validate    sort: SortValidator over each path's first output (--no-validate turns it off)
 * @param json        --json: JSON lines on stdout instead of the table
 * @param dir         the cluster's directory (--dir; null: temporary)
 * @param resultsDir  --results DIR (null: ROOT/results/DATE-COMMIT)
 * @param yarnRm      --yarn HOST:PORT: submit to this ResourceManager instead of the local job runner
 * @param nets        --net: emulated interconnects (network namespaces, tc-shaped veth): rates in
 *                    Gbit/s, 0 = unshaped; empty: no namespaces (everything on 127.0.0.1)
 * @param sweep       sweep only: parameter name -> values (--sweep NAME=V1,V2,...; default all four)
 * @param conf        --conf KEY=VALUE: daemons and client
 * @param cluster     --cluster FILE: a running cluster's client configuration (fs.defaultFS ...);
 *                    null: start one here
 * @param mini        --mini: the NameNode and the DataNodes (each with the plugin) in this JVM, a
 *                    MiniDFSCluster, instead of a JVM each
 */
public record MrOptions(String command, String job, int files, long fileBytes, long blockBytes, int dataNodes,
    int clients, int replication, String transport, int runs, boolean quick, boolean validate, boolean json,
    Path dir, Path resultsDir, String yarnRm, List<Double> nets, Map<String, List<Long>> sweep,
    Map<String, String> conf, Path cluster, boolean mini) {

  public static final List<String> COMMANDS = List.of("dfsio", "randomwriter", "sort", "sweep");
  public static final List<String> JOBS = List.of("dfsio", "randomwriter", "sort");
  public static final List<String> SWEEP_PARAMS = List.of("block-size", "datanodes", "clients", "replication");
  public static final int MAX_DATANODES = 16;

  public MrOptions {
    nets = List.copyOf(nets);
    sweep = Collections.unmodifiableMap(new LinkedHashMap<>(sweep));
    conf = Collections.unmodifiableMap(new LinkedHashMap<>(conf));
  }

  public static String usage(String command) {
    String common = """
          --files N            files (TestDFSIO -nrFiles) or maps (RandomWriter)       [4; --quick 2]
          --size SIZE          bytes per file / per map, e.g. 64M, 1G                  [256M; --quick 16M]
          --block-size SIZE    dfs.blocksize                                           [128M; --quick 16M]
          --datanodes N        DataNodes of the cluster (1..16)                        [3]
          --clients N          concurrent tasks (local job runner slots; Sort reduces) [2]
          --replication N      dfs.replication (1..DataNodes)                          [min(3, DataNodes)]
          --transport LIST     hrdma.transport.order of daemons and client, e.g. ucx,tcp [plugin default]
          --runs N             runs per path; ours and stock alternate, medians         [3; --quick 2]
          --quick              the small profile (under two minutes here)
          --net RATES          emulated interconnects: each DataNode and the client in its own network
                               namespace on a bridge, veth links shaped with tc; RATES in Gbit/s, comma
                               separated, 0 = unshaped, e.g. 1,10,40,0 (needs root)
          --yarn HOST:PORT     submit the jobs to this ResourceManager instead of the local job runner
          --mini               the NameNode and DataNodes in this JVM (a MiniDFSCluster, each DataNode
                               with the plugin) instead of a JVM each; DataNode CPU is then in the client's
          --cluster FILE       use a running cluster (its DataNodes with the plugin) instead of starting
                               one: FILE is a client configuration (core-site.xml / hdfs-site.xml)
          --no-validate        sort: skip SortValidator
          --dir DIR            the cluster's directory [a temporary one, removed afterwards]
          --results DIR        where CSV, JSON, PNG and summary.md go [results/DATE-COMMIT]
          --json               JSON lines on stdout instead of the table
          --conf KEY=VALUE     set in the daemons' and the client's configuration (repeatable)
          --encrypt            dfs.encrypt.data.transfer (AES/CTR cipher suite) and block tokens on the
                               whole cluster, as 'bench fs --encrypt': both clients encrypt every byte
                               on the wire (ours: AES-GCM, docs/security.md)
        """;
    if (command.equals("sweep")) {
      return "usage: hrdma bench sweep [--job dfsio] [--sweep NAME=V1,V2,...]... [options]\n"
          + "  the design-factor sweeps, ours and stock side by side at every point: block-size (4M..1G),\n"
          + "  datanodes (3..8), clients (1..8), replication (1..3); the others stay at their defaults.\n"
          + "  --sweep block-size=4M,64M,1G  only this parameter (repeatable); default: all four\n"
          + "  --job dfsio|randomwriter|sort the program at each point [dfsio]\n" + common;
    }
    return "usage: hrdma bench " + command + " [options]\n"
        + "  Hadoop's own " + switch (command) {
          case "dfsio" -> "TestDFSIO (-write, then -read)";
          case "randomwriter" -> "RandomWriter";
          default -> "Sort of a RandomWriter output, checked by SortValidator";
        } + " on a local cluster (NameNode + DataNodes with the plugin), through our client\n"
        + "  and the stock client in alternating order; medians, min..max, ours/stock per metric.\n" + common;
  }

  public static MrOptions parse(String command, String[] args) {
    if (!COMMANDS.contains(command)) {
      throw new UsageException("unknown benchmark '" + command + "' (one of " + String.join(", ", COMMANDS) + ")");
    }
    String job = command.equals("sweep") ? "dfsio" : command;
    Integer files = null;
    Long size = null;
    Long block = null;
    int dataNodes = 3;
    int clients = 2;
    Integer repl = null;
    String transport = null;
    Integer runs = null;
    boolean quick = false;
    boolean validate = true;
    boolean json = false;
    Path dir = null;
    Path results = null;
    String yarn = null;
    List<Double> nets = List.of();
    Map<String, List<Long>> sweep = new LinkedHashMap<>();
    Map<String, String> conf = new LinkedHashMap<>();
    Path cluster = null;
    boolean mini = false;
    boolean encrypt = false;
    for (int i = 0; i < args.length; i++) {
      String[] av = org.hdfsrdma.tools.fs.FsOptions.splitOption(args[i]);
      String a = av[0];
      String v = av[1];
      if (!a.startsWith("--")) {
        throw new UsageException("unexpected argument '" + a + "'");
      }
      switch (a) {
        case "--quick", "--json", "--no-validate", "--mini", "--encrypt" -> {
          if (v != null) {
            throw new UsageException(a + " takes no value");
          }
          if (a.equals("--encrypt")) {
            encrypt = true;
            org.hdfsrdma.tools.fs.FsOptions.putEncrypt(conf);
            continue;
          }
          if (a.equals("--no-validate") && !job.equals("sort") && !command.equals("sweep")) {
            throw new UsageException("--no-validate is an option of 'bench sort'");
          }
          quick |= a.equals("--quick");
          json |= a.equals("--json");
          validate &= !a.equals("--no-validate");
          mini |= a.equals("--mini");
          continue;
        }
        case "--files", "--size", "--block-size", "--datanodes", "--clients", "--replication", "--transport",
            "--runs", "--net", "--yarn", "--dir", "--results", "--conf", "--job", "--sweep", "--cluster" -> {
          // takes a value
        }
        default -> throw new UsageException("unknown option " + a);
      }
      if ((a.equals("--job") || a.equals("--sweep")) && !command.equals("sweep")) {
        throw new UsageException(a + " is an option of 'bench sweep'");
      }
      if (v == null) {
        if (i + 1 >= args.length) {
          throw new UsageException(a + " needs a value");
        }
        v = args[++i];
      }
      switch (a) {
        case "--files" -> files = range(a, v, 1, 64);
        case "--size" -> size = size(a, v, 1L << 20, 1L << 40);
        case "--block-size" -> block = size(a, v, 1L << 20, 2L << 30);
        case "--datanodes" -> dataNodes = range(a, v, 1, MAX_DATANODES);
        case "--clients" -> clients = range(a, v, 1, 64);
        case "--replication" -> repl = range(a, v, 1, MAX_DATANODES);
        case "--transport" -> transport = transport(v);
        case "--runs" -> runs = range(a, v, 1, 100);
        case "--net" -> nets = nets(v);
        case "--yarn" -> yarn = hostPort(v);
        case "--dir" -> dir = Path.of(nonBlank(a, v)).toAbsolutePath();
        case "--results" -> results = Path.of(nonBlank(a, v)).toAbsolutePath();
        case "--cluster" -> {
          cluster = Path.of(nonBlank(a, v)).toAbsolutePath();
          if (!java.nio.file.Files.isReadable(cluster)) {
            throw new UsageException("--cluster: cannot read " + cluster);
          }
        }
        case "--job" -> {
          if (!JOBS.contains(v)) {
            throw new UsageException("--job must be one of " + String.join(", ", JOBS) + ", not '" + v + "'");
          }
          job = v;
        }
        case "--sweep" -> {
          int e = v.indexOf('=');
          String name = e < 0 ? v : v.substring(0, e);
          if (!SWEEP_PARAMS.contains(name)) {
            throw new UsageException("--sweep takes NAME=V1,V2,... with NAME one of " + String.join(", ",
                SWEEP_PARAMS) + ", not '" + v + "'");
          }
          if (sweep.containsKey(name)) {
            throw new UsageException("--sweep " + name + " given twice");
          }
          sweep.put(name, e < 0 ? defaultSweep(name, false) : sweepValues(name, v.substring(e + 1)));
        }
        case "--conf" -> org.hdfsrdma.tools.fs.FsOptions.putConf(conf, v);
        default -> throw new AssertionError(a);
      }
    }
    if (repl == null) {
      repl = Math.min(3, dataNodes);
    }
    if (repl > dataNodes) {
      throw new UsageException("--replication " + repl + " needs at least " + repl + " DataNodes (--datanodes "
          + dataNodes + ")");
    }
    if (cluster != null && (!nets.isEmpty() || dir != null)) {
      throw new UsageException("--cluster uses a running cluster: --net and --dir start one here");
    }
    if (cluster != null && encrypt) {
      throw new UsageException("--encrypt configures the cluster it starts: --cluster uses a running one");
    }
    if (cluster != null && command.equals("sweep") && sweep.containsKey("datanodes")) {
      throw new UsageException("--cluster: a running cluster's DataNodes cannot be swept");
    }
    if (mini && (cluster != null || !nets.isEmpty())) {
      throw new UsageException("--mini starts the cluster in this JVM: --cluster and --net exclude it");
    }
    if (yarn != null && !nets.isEmpty()) {
      throw new UsageException("--yarn and --net exclude each other (--net emulates the cluster on this machine)");
    }
    if (command.equals("sweep")) {
      if (sweep.isEmpty()) {
        for (String p : SWEEP_PARAMS) {
          if (cluster == null || !p.equals("datanodes")) {
            sweep.put(p, defaultSweep(p, quick));
          }
        }
      }
      if (sweep.containsKey("replication")) {
        int most = sweep.get("replication").stream().mapToInt(Long::intValue).max().orElse(1);
        if (most > dataNodes) {
          throw new UsageException("--sweep replication up to " + most + " needs --datanodes " + most
              + " or more (it is " + dataNodes + ")");
        }
      }
    }
    return new MrOptions(command, job, files != null ? files : quick ? 2 : 4,
        size != null ? size : quick ? 16L << 20 : 256L << 20, block != null ? block : quick ? 16L << 20 : 128L << 20,
        dataNodes, clients, repl, transport, runs != null ? runs : quick ? 2 : 3, quick, validate, json, dir, results,
        yarn, nets, sweep, conf, cluster, mini);
  }

  /** The sweeps' ranges; --quick: three points each, small. */
  static List<Long> defaultSweep(String name, boolean quick) {
    return switch (name) {
      case "block-size" -> quick ? List.of(4L << 20, 16L << 20, 64L << 20)
          : List.of(4L << 20, 16L << 20, 64L << 20, 256L << 20, 1L << 30);
      case "datanodes" -> quick ? List.of(3L, 4L) : List.of(3L, 4L, 6L, 8L);
      case "clients" -> quick ? List.of(1L, 2L, 4L) : List.of(1L, 2L, 4L, 8L);
      case "replication" -> List.of(1L, 2L, 3L);
      default -> throw new AssertionError(name);
    };
  }

  static List<Long> sweepValues(String name, String v) {
    List<Long> out = new ArrayList<>();
    for (String p : v.split(",", -1)) {
      long x = switch (name) {
        case "block-size" -> size("--sweep block-size", p, 1L << 20, 2L << 30);
        case "datanodes" -> range("--sweep datanodes", p, 1, MAX_DATANODES);
        case "clients" -> range("--sweep clients", p, 1, 64);
        default -> range("--sweep replication", p, 1, MAX_DATANODES);
      };
      if (out.contains(x)) {
        throw new UsageException("--sweep " + name + " lists " + p.trim() + " twice");
      }
      out.add(x);
    }
    if (out.size() < 2) {
      throw new UsageException("--sweep " + name + " needs at least two values, not '" + v + "'");
    }
    return out;
  }

  private static String nonBlank(String name, String v) {
    if (v.isBlank()) {
      throw new UsageException(name + " needs a value");
    }
    return v;
  }

  static int range(String name, String v, int lo, int hi) {
    int n;
    try {
      n = Integer.parseInt(v.trim());
    } catch (NumberFormatException e) {
      throw new UsageException(name + " takes a whole number, not '" + v + "'");
    }
    if (n < lo || n > hi) {
      throw new UsageException(name + " must be " + lo + ".." + hi + ", not " + v.trim());
    }
    return n;
  }

  static long size(String name, String v, long lo, long hi) {
    long n;
    try {
      n = Sizes.parse(v);
    } catch (UsageException e) {
      throw new UsageException(name + " takes a size like 16M or 1G, not '" + v + "'");
    }
    if (n < lo || n > hi) {
      throw new UsageException(name + " must be " + Sizes.format(lo) + ".." + Sizes.format(hi) + ", not '" + v
          + "'");
    }
    if (n % (1L << 20) != 0) {
      throw new UsageException(name + " must be a whole number of MiB, not '" + v + "'");
    }
    return n;
  }

  static String transport(String v) {
    List<String> known = List.of("ucx", "stream", "tcp");
    for (String t : v.split(",", -1)) {
      if (!known.contains(t.trim())) {
        throw new UsageException("--transport takes a list of " + String.join(", ", known) + ", not '" + v + "'");
      }
    }
    return v.replace(" ", "");
  }

  static List<Double> nets(String v) {
    List<Double> out = new ArrayList<>();
    for (String p : v.split(",", -1)) {
      String t = p.trim().toLowerCase(Locale.ROOT);
      if (t.endsWith("g")) {
        t = t.substring(0, t.length() - 1);
      }
      double g;
      try {
        g = Double.parseDouble(t);
      } catch (NumberFormatException e) {
        throw new UsageException("--net takes rates in Gbit/s such as 1,10,40,0 (0 = unshaped), not '" + v + "'");
      }
      if (g < 0 || g > 400 || (g > 0 && g < 0.01)) {
        throw new UsageException("--net rates must be 0.01..400 Gbit/s or 0 (unshaped), not '" + p.trim() + "'");
      }
      if (out.contains(g)) {
        throw new UsageException("--net lists " + p.trim() + " twice");
      }
      out.add(g);
    }
    return out;
  }

  static String hostPort(String v) {
    int c = v.lastIndexOf(':');
    if (c <= 0 || c == v.length() - 1) {
      throw new UsageException("--yarn takes the ResourceManager's HOST:PORT, not '" + v + "'");
    }
    range("--yarn port", v.substring(c + 1), 1, 65535);
    return v;
  }

  /** The settings of the cluster's daemons and clients. */
  public Map<String, String> clusterConf() {
    Map<String, String> m = new LinkedHashMap<>(conf);
    if (transport != null) {
      m.put(org.hdfsrdma.transport.HrdmaTransportKeys.TRANSPORT_ORDER_KEY, transport);
    }
    return m;
  }
}
