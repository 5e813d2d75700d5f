package org.hdfsrdma.bench.fs;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.tools.Sizes;
import org.hdfsrdma.tools.UsageException;
import org.hdfsrdma.tools.fs.FsMain;
import org.hdfsrdma.tools.fs.FsOptions;
import org.hdfsrdma.tools.fs.LocalCluster;

/**
 * {@code hrdma bench shell}: {@code hadoop fs -put} and {@code -cat} as a user types them, one
 * fresh JVM per command (Hadoop's FsShell), ours and stock alternating on one local cluster.
 * Ours runs on Hadoop's jars plus the plugin jar, stock on Hadoop's jars alone, as an operator
 * deploys them; the same JVM options for both. For short commands a JVM's start-up (class
 * loading, the JIT) is most of the time, and this is where it shows.
 */
public final class ShellBench {
  private ShellBench() {}

  static final String USAGE = """
      usage: hrdma bench shell [--sizes 64K,128M] [--runs 5] [--dir DIR] [--conf KEY=VALUE ...]
        on a local cluster (NameNode + 3 DataNodes with the plugin, replication 3), for each size
        and run, in this order: ours -put, stock -put, ours -cat, stock -cat (each client its own
        file; every -cat checked against the local file), each command a new JVM running
        FsShell; medians of the commands' wall time and CPU (user + system) seconds.
      """;
  static final String PLUGIN_JAR_PREFIX = "hrdma-hadoop-plugin-";
  static final long CLK_TCK = 100; // USER_HZ, which /proc/PID/stat counts in

  /** The options: sizes, runs, and bench fs's --dir and --conf. */
  record Options(List<Long> sizes, int runs, FsOptions fs) {}

  /** One command's wall and CPU seconds. */
  record Result(double wall, double cpu) {}

  public static void main(String[] args) {
    FsMain.quietLogging();
    System.exit(run(args, System.out, System.err));
  }

  static Options parse(String[] args) {
    List<Long> sizes = List.of(64L << 10, 128L << 20);
    int runs = 5;
    List<String> rest = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      String[] av = FsOptions.splitOption(args[i]);
      if (!av[0].equals("--sizes") && !av[0].equals("--runs")) {
        rest.add(args[i]);
        continue;
      }
      String v = av[1];
      if (v == null) {
        if (i + 1 >= args.length) {
          throw new UsageException(av[0] + " needs a value");
        }
        v = args[++i];
      }
      if (av[0].equals("--runs")) {
        try {
          runs = Integer.parseInt(v);
        } catch (NumberFormatException e) {
          runs = 0;
        }
        if (runs < 1) {
          throw new UsageException("--runs takes a positive number, not '" + v + "'");
        }
      } else {
        List<Long> s = new ArrayList<>();
        for (String x : v.split(",")) {
          try {
            s.add(Sizes.parse(x.trim()));
          } catch (IllegalArgumentException e) {
            throw new UsageException("--sizes takes sizes like 64K,128M, not '" + x + "'");
          }
          if (s.get(s.size() - 1) < 1) {
            throw new UsageException("--sizes: a size must be at least one byte, not '" + x + "'");
          }
        }
        sizes = List.copyOf(s);
      }
    }
    for (String r : rest) {
      if (r.startsWith("--size") || r.startsWith("--replication") || r.equals("--json") || r.startsWith("--results")) {
        throw new UsageException("unknown option " + FsOptions.splitOption(r)[0] + " (bench shell takes --sizes)");
      }
    }
    return new Options(sizes, runs, FsOptions.parseBench(rest.toArray(new String[0])));
  }

  static int run(String[] args, PrintStream out, PrintStream err) {
    if (args.length > 0 && List.of("-h", "--help", "help").contains(args[0])) {
      out.print(USAGE);
      return 0;
    }
    Options o;
    try {
      o = parse(args);
    } catch (UsageException e) {
      err.println("hrdma bench shell: " + e.getMessage());
      err.print(USAGE);
      return 2;
    }
    Path pluginJar;
    try {
      pluginJar = pluginJar();
    } catch (IOException e) {
      err.println("hrdma bench shell: " + e.getMessage());
      return 1;
    }
    String hadoopCp = hadoopClassPath();
    List<String> failures = new ArrayList<>();
    Map<String, List<Result>> rows = new LinkedHashMap<>();
    Path work = null;
    try (LocalCluster c = LocalCluster.start(o.fs().dir(), o.fs().conf(), err)) {
      work = Files.createTempDirectory("hrdma-bench-shell");
      Path oursConf = confDir(work.resolve("conf-ours"), siteConf(c, o.fs().conf(), true));
      Path stockConf = confDir(work.resolve("conf-stock"), siteConf(c, o.fs().conf(), false));
      String oursCp = oursConf + File.pathSeparator + pluginJar + File.pathSeparator + hadoopCp;
      String stockCp = stockConf + File.pathSeparator + hadoopCp;
      // one untimed command each: the jars in the page cache for both
      shell(stockCp, work, List.of("-mkdir", "-p", "/hrdma-bench-shell"), null);
      shell(oursCp, work, List.of("-ls", "/hrdma-bench-shell"), null);
      for (int run = 1; run <= o.runs(); run++) {
        for (long size : o.sizes()) {
          Path local = work.resolve("local-" + size);
          if (run == 1) {
            writeRandom(local, size);
          }
          String fmt = Sizes.format(size);
          String ours = "/hrdma-bench-shell/ours-" + size;
          String stock = "/hrdma-bench-shell/stock-" + size;
          add(rows, "-put " + fmt + " ours", shell(oursCp, work, List.of("-put", "-f", local.toString(), ours), null));
          add(rows, "-put " + fmt + " stock", shell(stockCp, work, List.of("-put", "-f", local.toString(), stock), null));
          Path got = work.resolve("got");
          add(rows, "-cat " + fmt + " ours", shell(oursCp, work, List.of("-cat", ours), got));
          check(got, local, "ours -cat " + fmt + " run " + run, failures);
          add(rows, "-cat " + fmt + " stock", shell(stockCp, work, List.of("-cat", stock), got));
          check(got, local, "stock -cat " + fmt + " run " + run, failures);
        }
      }
    } catch (Exception e) {
      err.println("hrdma bench shell: " + e);
      return 1;
    } finally {
      if (work != null) {
        LocalCluster.deleteTree(work);
      }
    }
    out.print(render(o, rows));
    for (String f : failures) {
      err.println("FAIL: " + f);
    }
    return failures.isEmpty() ? 0 : 1;
  }

  static String render(Options o, Map<String, List<Result>> rows) {
    StringBuilder t = new StringBuilder();
    t.append(String.format("%n# hrdma bench shell  runs=%d  a fresh JVM per command (FsShell); ours: Hadoop's jars + "
        + "the plugin jar, stock: Hadoop's jars; replication 3; medians%n", o.runs()));
    t.append(String.format("%-8s %8s %10s %10s %14s %11s %11s %10s%n", "command", "size", "ours s", "stock s",
        "time vs stock", "ours cpu s", "stock cpu s", "cpu diff"));
    for (long size : o.sizes()) {
      String fmt = Sizes.format(size);
      for (String cmd : List.of("-put", "-cat")) {
        List<Result> ours = rows.get(cmd + " " + fmt + " ours");
        List<Result> stock = rows.get(cmd + " " + fmt + " stock");
        if (ours == null || stock == null) {
          continue;
        }
        double ow = median(ours.stream().mapToDouble(Result::wall).toArray());
        double sw = median(stock.stream().mapToDouble(Result::wall).toArray());
        double oc = median(ours.stream().mapToDouble(Result::cpu).toArray());
        double sc = median(stock.stream().mapToDouble(Result::cpu).toArray());
        t.append(String.format("%-8s %8s %10.2f %10.2f %13.2fx %11.2f %11.2f %+10.2f%n", cmd, fmt, ow, sw, ow / sw,
            oc, sc, oc - sc));
      }
    }
    t.append("time vs stock: ours' median wall time over stock's (below 1: ours is quicker); cpu diff: ours minus "
        + "stock, seconds\n");
    return t.toString();
  }

  private static void add(Map<String, List<Result>> rows, String key, Result r) {
    rows.computeIfAbsent(key, k -> new ArrayList<>()).add(r);
  }

  /** Runs FsShell with {@code args} in a new JVM; its stdout to {@code stdout} (or discarded). */
  static Result shell(String classPath, Path work, List<String> args, Path stdout) throws IOException,
      InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
    cmd.addAll(List.of("-cp", classPath, "org.apache.hadoop.fs.FsShell"));
    cmd.addAll(args);
    Path errFile = work.resolve("stderr.txt");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(errFile.toFile())
        .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
    pb.redirectOutput(stdout == null ? ProcessBuilder.Redirect.DISCARD : ProcessBuilder.Redirect.to(stdout.toFile()));
    long cpu0 = childrenCpuTicks();
    long t0 = System.nanoTime();
    Process p = pb.start();
    if (!p.waitFor(10, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      throw new IOException("hadoop fs " + String.join(" ", args) + " did not finish in 10 minutes");
    }
    double wall = (System.nanoTime() - t0) / 1e9;
    double cpu = (childrenCpuTicks() - cpu0) / (double) CLK_TCK;
    if (p.exitValue() != 0) {
      String tail;
      try (Stream<String> lines = Files.lines(errFile)) {
        List<String> all = lines.collect(Collectors.toList());
        tail = String.join("\n  ", all.subList(Math.max(0, all.size() - 5), all.size()));
      }
      throw new IOException("hadoop fs " + String.join(" ", args) + " exited " + p.exitValue() + ":\n  " + tail);
    }
    return new Result(wall, cpu);
  }

  /**
   * User and system CPU of this process's children that have been waited for, in clock ticks
   * ({@code /proc/self/stat} fields 16 and 17): around one command, that command's own.
   */
  static long childrenCpuTicks() throws IOException {
    String[] f = statFields("self");
    return Long.parseLong(f[13]) + Long.parseLong(f[14]); // fields 16 and 17: cutime, cstime
  }

  /** {@code /proc/PID/stat}'s fields from field 3 (the state) on: field n is element n - 3. */
  static String[] statFields(String pid) throws IOException {
    String stat = Files.readString(Path.of("/proc", pid, "stat"));
    return stat.substring(stat.lastIndexOf(')') + 2).split(" ");
  }

  /** Hadoop's jars and the rest of the benchmarks' class path, without the project's own. */
  static String hadoopClassPath() {
    return Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
        .filter(e -> !Path.of(e).getFileName().toString().startsWith("hrdma-") && !e.contains("/hrdma-")
            && !e.contains("/benchmarks/target/"))
        .collect(Collectors.joining(File.pathSeparator));
  }

  static Path pluginJar() throws IOException {
    String root = System.getProperty(LocalCluster.ROOT_PROPERTY, ".");
    Path dir = Path.of(root, "java", "hrdma-dist", "target");
    if (Files.isDirectory(dir)) {
      try (Stream<Path> s = Files.list(dir)) {
        List<Path> jars = s.filter(p -> {
          String n = p.getFileName().toString();
          return n.startsWith(PLUGIN_JAR_PREFIX) && n.endsWith(".jar") && !n.contains("sources");
        }).sorted().collect(Collectors.toList());
        if (!jars.isEmpty()) {
          return jars.get(jars.size() - 1);
        }
      }
    }
    throw new IOException("no " + PLUGIN_JAR_PREFIX + "*.jar in " + dir + " (build it: bin/hrdma build)");
  }

  /** A configuration directory with a core-site.xml of {@code conf}'s file system settings and quiet logging. */
  private static Path confDir(Path dir, Configuration conf) throws IOException {
    Files.createDirectories(dir);
    writeClientSite(dir.resolve("core-site.xml"), conf);
    Files.writeString(dir.resolve("log4j.properties"), "log4j.rootLogger=WARN,console\n"
        + "log4j.appender.console=org.apache.log4j.ConsoleAppender\n"
        + "log4j.appender.console.target=System.err\n"
        + "log4j.appender.console.layout=org.apache.log4j.PatternLayout\n"
        + "log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %-5p %c{2}: %m%n\n"
        + "log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR\n");
    return dir;
  }

  /**
   * The client settings a user of {@code c} has: its client-site.xml and the --conf extras, with
   * {@code fs.hdfs.impl} ours or stock's; no default resource, so that what is written from it
   * sets no key that a user's site file would leave to its default (our client follows an
   * explicitly set {@code dfs.client-write-packet-size}, for one, and a default written out is
   * explicit).
   */
  static Configuration siteConf(LocalCluster c, Map<String, String> extra, boolean ours) {
    return siteConf(c.dir().resolve("client-site.xml"), extra, ours);
  }

  /** As {@link #siteConf(LocalCluster, Map, boolean)}, from the cluster's {@code clientSite} file. */
  static Configuration siteConf(Path clientSite, Map<String, String> extra, boolean ours) {
    Configuration site = new Configuration(false);
    site.addResource(new org.apache.hadoop.fs.Path(clientSite.toUri()));
    extra.forEach(site::set);
    site.set("fs.hdfs.impl", ours ? "org.hdfsrdma.client.RdmaDistributedFileSystem"
        : "org.apache.hadoop.hdfs.DistributedFileSystem");
    return site;
  }

  /** A Hadoop site file of {@code conf}'s client settings (fs., dfs., hrdma. and hadoop. keys). */
  static void writeClientSite(Path file, Configuration conf) throws IOException {
    Configuration site = new Configuration(false);
    for (Map.Entry<String, String> e : conf.getPropsWithPrefix("").entrySet()) {
      String k = e.getKey();
      if (k.startsWith("fs.") || k.startsWith("dfs.") || k.startsWith("hrdma.") || k.startsWith("hadoop.")) {
        site.set(k, conf.get(k));
      }
    }
    try (OutputStream os = Files.newOutputStream(file)) {
      site.writeXml(os);
    }
  }

  private static void writeRandom(Path p, long size) throws IOException {
    Random r = new Random(size);
    byte[] b = new byte[1 << 20];
    try (OutputStream os = Files.newOutputStream(p)) {
      for (long left = size; left > 0; ) {
        r.nextBytes(b);
        int n = (int) Math.min(b.length, left);
        os.write(b, 0, n);
        left -= n;
      }
    }
  }

  private static void check(Path got, Path want, String what, List<String> failures) throws IOException {
    if (Files.mismatch(got, want) != -1) {
      failures.add(what + ": the bytes read differ from the file put");
    }
  }

  static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }
}
