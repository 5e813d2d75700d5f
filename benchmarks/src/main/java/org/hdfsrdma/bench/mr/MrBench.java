package org.hdfsrdma.bench.mr;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.bench.Progress;
import org.hdfsrdma.tools.Sizes;
import org.hdfsrdma.tools.UsageException;
import org.hdfsrdma.tools.fs.LocalCluster;
import org.hdfsrdma.bench.net.NetLab;

/**
 * {@code hrdma bench dfsio|randomwriter|sort|sweep}: Hadoop's own programs on a local
 * cluster, every point run through our client and the stock client, in alternating
 * order (ours, stock in odd runs; stock, ours in even ones), several runs; medians,
 * min..max and ours/stock per metric; CSV, JSON, PNG and a markdown summary under
 * results/DATE-COMMIT/. With {@code --net} every DataNode, the NameNode and the client
 * run in their own network namespace on tc-shaped links ({@link NetLab}), the client
 * then in a child JVM in its namespace ({@link JobChild}).
 */
public final class MrBench {
  private MrBench() {}

  public static void main(String command, String[] args) {
    quietLogging();
    System.exit(run(command, args, System.out, System.err));
  }

  /**
   * Warnings only, and not the local job runner's "metrics system already initialized"
   * (it starts one per job in this JVM).
   */
  static void quietLogging() {
    if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
      System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    }
    System.setProperty("org.slf4j.simpleLogger.log.org.apache.hadoop.metrics2", "error");
  }

  /** Exit code: 0 every run passed, 1 a run failed, 2 bad arguments. */
  public static int run(String command, String[] args, PrintStream out, PrintStream err) {
    if (!MrOptions.COMMANDS.contains(command)) {
      err.println("hrdma bench: unknown benchmark '" + command + "' (one of fs, "
          + String.join(", ", MrOptions.COMMANDS) + ", netns)");
      return 2;
    }
    if (args.length > 0 && List.of("-h", "--help", "help").contains(args[0])) {
      out.print(MrOptions.usage(command));
      return 0;
    }
    MrOptions o;
    List<Point> points;
    try {
      o = MrOptions.parse(command, args);
      points = points(o);
    } catch (UsageException e) {
      err.println("hrdma bench " + command + ": " + e.getMessage());
      err.print(MrOptions.usage(command));
      return 2;
    }
    PrintStream log = o.json() ? err : out;
    LocalDateTime started = LocalDateTime.now();
    List<Summary.Tagged> samples = new ArrayList<>();
    String failure = null;
    int steps = points.size() * o.runs() * 2;
    try (Progress progress = new Progress(err, steps, err == System.err && System.console() != null)) {
      new Engine(o, log, progress, samples).run(points);
    } catch (Exception e) {
      failure = e.toString();
      err.println("hrdma bench " + command + ": " + e);
      for (Throwable t = e.getCause(); t != null; t = t.getCause()) {
        err.println("  caused by: " + t);
      }
    }
    List<Summary> sums = Summary.of(samples);
    Results r = new Results(o, started, points, samples, sums, failure);
    if (o.json()) {
      r.jsonLines().forEach(out::println);
    } else {
      out.println();
      out.print(r.text());
    }
    try {
      Path dir = o.resultsDir() != null ? o.resultsDir() : org.hdfsrdma.bench.fs.Machine.defaultResultsDir(started);
      List<Path> files = r.write(dir);
      log.println("results: " + dir + " (" + files.stream().map(p -> p.getFileName().toString())
          .reduce((a, b) -> a + ", " + b).orElse("") + ")");
    } catch (IOException e) {
      err.println("hrdma bench " + command + ": could not write results: " + e.getMessage());
      return 1;
    }
    return failure == null ? 0 : 1;
  }

  /** The points of a run: one, one per --net rate, or a sweep's. */
  static List<Point> points(MrOptions o) {
    List<Point> pts = new ArrayList<>();
    if (o.command().equals("sweep")) {
      if (o.nets().size() > 1) {
        throw new UsageException("a sweep runs over one interconnect: give --net one rate, not " + o.nets());
      }
      double gbit = o.nets().isEmpty() ? -1 : o.nets().get(0);
      for (Map.Entry<String, List<Long>> e : o.sweep().entrySet()) {
        for (long v : e.getValue()) {
          int dn = e.getKey().equals("datanodes") ? (int) v : o.dataNodes();
          long block = e.getKey().equals("block-size") ? v : o.blockBytes();
          int clients = e.getKey().equals("clients") ? (int) v : o.clients();
          int repl = e.getKey().equals("replication") ? (int) v : Math.min(o.replication(), dn);
          String shown = e.getKey().equals("block-size") ? Sizes.format(v) : Long.toString(v);
          pts.add(new Point(e.getKey(), shown, dn, gbit, block, clients, repl));
        }
      }
      // one cluster start per DataNode count: the datanodes points last, the rest share the first cluster
      pts.sort(Comparator.comparing(p -> p.param().equals("datanodes") ? 1 : 0));
      return pts;
    }
    if (o.nets().isEmpty()) {
      pts.add(new Point("", "", o.dataNodes(), -1, o.blockBytes(), o.clients(), o.replication()));
    }
    for (double g : o.nets()) {
      pts.add(new Point("net", NetLab.rateText(g), o.dataNodes(), g, o.blockBytes(), o.clients(),
          o.replication()));
    }
    return pts;
  }

  /** Runs the points, keeping one cluster (and network) while consecutive points share it. */
  static final class Engine {
    private final MrOptions o;
    private final PrintStream log;
    private final Progress progress;
    private final List<Summary.Tagged> samples;

    Engine(MrOptions o, PrintStream log, Progress progress, List<Summary.Tagged> samples) {
      this.o = o;
      this.log = log;
      this.progress = progress;
      this.samples = samples;
    }

    void run(List<Point> points) throws Exception {
      Point current = null;
      Env env = null;
      try {
        for (Point p : points) {
          if (!p.sameCluster(current)) {
            if (env != null) {
              env.close();
              env = null;
            }
            progress.phase(o.cluster() != null ? "connecting" : "starting a NameNode and " + p.dataNodes()
                + (o.mini() ? " in-process" : "")
                + " DataNodes" + (p.gbit() >= 0 ? " in network namespaces, links " + NetLab.rateText(p.gbit()) : ""));
            env = Env.start(o, p, log);
            warmUp(env, p);
            progress.restartStepClock();
          }
          current = p;
          runPoint(env, p);
        }
      } finally {
        if (env != null) {
          env.close();
        }
      }
    }

    /**
     * One small untimed TestDFSIO per path on a new cluster: the first timed run of a
     * path would otherwise also pay for the JIT and the first connections.
     */
    private void warmUp(Env env, Point p) throws Exception {
      progress.phase("warm-up: an untimed TestDFSIO of 1 MiB per path");
      for (boolean ours : List.of(true, false)) {
        env.run(new JobSpec("dfsio", ours, 0, 1, 1L << 20, p.blockBytes(), 1, p.replication(), false,
            env.workDir.toString(), o.yarnRm()));
      }
    }

    private void runPoint(Env env, Point p) throws Exception {
      for (int run = 1; run <= o.runs(); run++) {
        List<Boolean> order = run % 2 == 1 ? List.of(true, false) : List.of(false, true);
        for (boolean ours : order) {
          JobSpec s = new JobSpec(o.job(), ours, run, o.files(), o.fileBytes(), p.blockBytes(), p.clients(),
              p.replication(), o.validate() && run == 1, env.workDir.toString(), o.yarnRm());
          progress.phase(String.format(Locale.ROOT, "%s%s %s run %d/%d", o.job(),
              p.param().isEmpty() ? "" : " " + p.label(), s.path(), run, o.runs()));
          for (MrSample m : env.run(s)) {
            samples.add(new Summary.Tagged(p, m));
          }
          progress.stepDone();
        }
      }
    }
  }

  /** A running cluster (and emulated network) and how jobs reach it. */
  static final class Env implements AutoCloseable {
    /** The cluster started here; null with --cluster. */
    final LocalCluster cluster;
    /** The MiniDFSCluster of --mini; null otherwise. */
    final MiniCluster mini;
    final NetLab lab;
    final Path workDir;
    private final boolean tempWork;
    private final MrOptions o;

    private Env(MrOptions o, LocalCluster cluster, MiniCluster mini, NetLab lab, Path workDir, boolean tempWork) {
      this.o = o;
      this.cluster = cluster;
      this.mini = mini;
      this.lab = lab;
      this.workDir = workDir;
      this.tempWork = tempWork;
    }

    static Env start(MrOptions o, Point p, PrintStream log) throws Exception {
      if (o.cluster() != null) {
        log.println("bench: using the running cluster of " + o.cluster() + " (DataNode CPU is not measured)");
        return new Env(o, null, null, null, Files.createTempDirectory("hrdma-mr-"), true);
      }
      if (o.mini()) {
        log.println("bench: a MiniDFSCluster in this JVM (NameNode and " + p.dataNodes() + " DataNodes with the"
            + " plugin); CPU s/GB is the whole JVM's: client, NameNode and DataNodes");
        MiniCluster m = MiniCluster.start(o.dir() != null ? o.dir().resolve("mini-" + p.dataNodes()) : null,
            p.dataNodes(), p.blockBytes(), o.clusterConf());
        return new Env(o, null, m, null, m.workDir(), false);
      }
      Map<String, String> conf = new LinkedHashMap<>(o.clusterConf());
      NetLab lab = null;
      Map<String, String> hosts = Map.of();
      Map<String, List<String>> prefixes = Map.of();
      if (p.gbit() >= 0) {
        List<String> roles = new ArrayList<>(List.of("nn", "cl"));
        for (int i = 1; i <= p.dataNodes(); i++) {
          roles.add("dn" + i);
        }
        lab = NetLab.create(NetLab.newTag(), roles, p.gbit(), log);
        hosts = lab.hosts();
        prefixes = lab.prefixes();
        NetLab.ucxConf().forEach(conf::putIfAbsent);
      }
      Path clusterDir = o.dir() != null ? o.dir().resolve(p.gbit() >= 0 ? "net-" + lab.tag() : "cluster-"
          + p.dataNodes()) : null;
      try {
        LocalCluster c = LocalCluster.start(clusterDir, p.dataNodes(), conf, hosts, prefixes, log);
        // with --dir the programs' output and logs stay (DIR/.../jobs); else a temporary directory
        Path work = clusterDir != null ? Files.createDirectories(clusterDir.resolve("jobs"))
            : Files.createTempDirectory("hrdma-mr-");
        return new Env(o, c, null, lab, work, clusterDir == null);
      } catch (Exception e) {
        if (lab != null) {
          lab.close();
        }
        throw e;
      }
    }

    private Configuration clientConf(boolean ours) {
      if (mini != null) {
        return mini.clientConf(ours);
      }
      return cluster != null ? cluster.clientConf(ours) : LocalCluster.clientConf(o.cluster(), o.clusterConf(), ours);
    }

    List<MrSample> run(JobSpec s) throws Exception {
      List<Long> pids = cluster != null ? cluster.dataNodePids() : List.of();
      if (lab == null) {
        return new MrRunner(clientConf(s.ours()), pids, mini != null).run(s);
      }
      Path conf = workDir.resolve("client-" + s.path() + ".xml");
      Configuration c = clientConf(s.ours());
      try (OutputStream os = Files.newOutputStream(conf)) {
        c.writeXml(os);
      }
      return JobChild.runIn(lab.prefix("cl"), conf, s, cluster.dataNodePids(), workDir);
    }

    @Override
    public void close() {
      try {
        if (cluster != null) {
          cluster.close();
        }
        if (mini != null) {
          mini.close();
        }
      } finally {
        if (lab != null) {
          lab.close();
        }
        if (tempWork) {
          LocalCluster.deleteTree(workDir);
        }
      }
    }
  }
}
