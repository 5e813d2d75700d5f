package org.hdfsrdma.bench.fs;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.hdfsrdma.tools.Sizes;
import org.hdfsrdma.tools.UsageException;
import org.hdfsrdma.tools.fs.FsMain;
import org.hdfsrdma.tools.fs.FsOptions;
import org.hdfsrdma.tools.fs.LocalCluster;

/**
 * {@code hrdma bench spark}: a PySpark job as a Spark user runs one, ours and stock alternating
 * on one local cluster (replication 3). Each run is a new Python process and Spark JVM
 * ({@code local[2]}) that writes a table to {@code hdfs://} as Parquet and scans it back
 * ({@code benchmarks/spark/spark_bench.py}); ours gets the plugin jar through {@code spark.jars}
 * and the client settings through {@code spark.hadoop.*}, stock the same settings without
 * {@code fs.hdfs.impl} and no jar. Medians of the write, the scan and the whole job (Python, the
 * JVM's start, Spark's set-up) with the ratio; every run's rows are checked, and ours' counters
 * must show that our path carried the table.
 */
public final class SparkBench {
  private SparkBench() {}

  static final String USAGE = """
      usage: hrdma bench spark [--size 1G] [--runs 3] [--python PATH] [--dir DIR] [--conf KEY=VALUE ...]
        on a local cluster (NameNode + 3 DataNodes with the plugin, replication 3), for each run
        (the first client alternating): a new PySpark job (local[2]) through our client and one
        through stock's, each writing a table of about --size as uncompressed Parquet (1 KiB rows)
        and scanning every column of it back; medians of the write, the scan and the whole job.
        --python   a Python with PySpark 4.x (bin/hrdma bench spark installs one in build/spark-venv)
      """;
  static final String SCRIPT = "benchmarks/spark/spark_bench.py";
  static final String MARK = "SPARK_BENCH ";
  /** A row's bytes as the job writes it (1 KiB of text; Parquet adds a few bytes a row). */
  static final int ROW_BYTES = 1024;

  /** The options: table size, runs, the Python, and bench fs's --dir and --conf. */
  record Options(long size, int runs, Path python, FsOptions fs) {
    long rows() {
      return Math.max(1, size / ROW_BYTES);
    }
  }

  /**
   * One job's figures: its write and scan seconds, its whole wall time, the table's bytes, the
   * Spark JVM's CPU seconds in the write and in the scan, the DataNodes' CPU seconds during the job.
   */
  record Run(double write, double scan, double job, long bytes, double writeCpu, double scanCpu, double dataNodeCpu) {}

  public static void main(String[] args) {
    FsMain.quietLogging();
    System.exit(run(args, System.out, System.err));
  }

  static Options parse(String[] args) {
    long size = 1L << 30;
    int runs = 3;
    Path python = Path.of(System.getProperty(LocalCluster.ROOT_PROPERTY, "."), "build", "spark-venv", "bin", "python");
    List<String> rest = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      String[] av = FsOptions.splitOption(args[i]);
      if (!List.of("--size", "--runs", "--python").contains(av[0])) {
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
      switch (av[0]) {
        case "--runs" -> {
          try {
            runs = Integer.parseInt(v);
          } catch (NumberFormatException e) {
            runs = 0;
          }
          if (runs < 1) {
            throw new UsageException("--runs takes a positive number, not '" + v + "'");
          }
        }
        case "--size" -> {
          try {
            size = Sizes.parse(v);
          } catch (IllegalArgumentException e) {
            throw new UsageException("--size takes a size like 256M or 1G, not '" + v + "'");
          }
          if (size < ROW_BYTES) {
            throw new UsageException("--size: at least one row (" + ROW_BYTES + " bytes), not '" + v + "'");
          }
        }
        default -> python = Path.of(v);
      }
    }
    for (String r : rest) {
      if (r.startsWith("--replication") || r.equals("--json") || r.startsWith("--results") || r.startsWith("--sizes")) {
        throw new UsageException("unknown option " + FsOptions.splitOption(r)[0] + " (bench spark takes --size)");
      }
    }
    return new Options(size, runs, python, FsOptions.parseBench(rest.toArray(new String[0])));
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
      err.println("hrdma bench spark: " + e.getMessage());
      err.print(USAGE);
      return 2;
    }
    Path root = Path.of(System.getProperty(LocalCluster.ROOT_PROPERTY, "."));
    Path script = root.resolve(SCRIPT);
    Path pluginJar;
    try {
      pluginJar = ShellBench.pluginJar();
    } catch (IOException e) {
      err.println("hrdma bench spark: " + e.getMessage());
      return 1;
    }
    if (!Files.isExecutable(o.python()) || !Files.isRegularFile(script)) {
      err.println("hrdma bench spark: no Python at " + o.python() + " or no " + script
          + " (bin/hrdma bench spark installs PySpark in build/spark-venv; or pass --python)");
      return 1;
    }
    Map<String, List<Run>> runs = new LinkedHashMap<>();
    List<String> failures = new ArrayList<>();
    Path work = null;
    try (LocalCluster c = LocalCluster.start(o.fs().dir(), o.fs().conf(), err)) {
      work = Files.createTempDirectory("hrdma-bench-spark");
      // the client settings, which the job hands to Spark as spark.hadoop.*
      Path site = work.resolve("client-site.xml");
      ShellBench.writeClientSite(site, ShellBench.siteConf(c, o.fs().conf(), true));
      for (int run = 1; run <= o.runs(); run++) {
        // the first of the pair alternates: neither always meets the page cache the other left
        List<String> order = run % 2 == 1 ? List.of("ours", "stock") : List.of("stock", "ours");
        for (String mode : order) {
          List<String> cmd = new ArrayList<>(List.of(o.python().toString(), script.toString(), mode, site.toString(),
              c.fsDefaultFs() + "/hrdma-bench-spark/" + mode, Long.toString(o.rows())));
          if (mode.equals("ours")) {
            cmd.add(pluginJar.toString());
          }
          err.printf("hrdma bench spark: run %d/%d, %s%n", run, o.runs(), mode);
          Run r = job(cmd, work, mode, o.rows(), c.dataNodePids(), failures);
          if (r != null) {
            runs.computeIfAbsent(mode, k -> new ArrayList<>()).add(r);
          }
        }
      }
    } catch (Exception e) {
      err.println("hrdma bench spark: " + e);
      return 1;
    } finally {
      if (work != null) {
        LocalCluster.deleteTree(work);
      }
    }
    out.print(render(o, runs));
    for (String f : failures) {
      err.println("FAIL: " + f);
    }
    return failures.isEmpty() ? 0 : 1;
  }

  /** Runs one job; its figures, or null (and a failure noted) when it failed or did not use the path asked for. */
  private static Run job(List<String> cmd, Path work, String mode, long rows, List<Long> dataNodes,
      List<String> failures) throws IOException, InterruptedException {
    Path log = work.resolve("job-" + mode + ".log");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile())
        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
    pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
    long dn0 = cpuTicks(dataNodes);
    long t0 = System.nanoTime();
    Process p = pb.start();
    if (!p.waitFor(30, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      failures.add(mode + ": the job did not finish in 30 minutes");
      return null;
    }
    double wall = (System.nanoTime() - t0) / 1e9;
    double dnCpu = (cpuTicks(dataNodes) - dn0) / (double) ShellBench.CLK_TCK;
    List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
    JsonNode j = null;
    for (String l : lines) {
      if (l.startsWith(MARK)) {
        j = new ObjectMapper().readTree(l.substring(MARK.length()));
      }
    }
    String why = check(j, mode, rows, p.exitValue());
    if (why != null) {
      failures.add(mode + ": " + why + "; the job's last lines:\n  "
          + String.join("\n  ", lines.subList(Math.max(0, lines.size() - 8), lines.size())));
      return null;
    }
    return new Run(j.get("write_s").asDouble(), j.get("scan_s").asDouble(), wall, j.get("bytes").asLong(),
        j.path("write_cpu_s").asDouble(), j.path("scan_cpu_s").asDouble(), dnCpu);
  }


  /** User and system CPU of the processes {@code pids} so far (all their threads), in clock ticks. */
  static long cpuTicks(List<Long> pids) throws IOException {
    long sum = 0;
    for (long pid : pids) {
      String[] f = ShellBench.statFields(Long.toString(pid));
      sum += Long.parseLong(f[11]) + Long.parseLong(f[12]); // fields 14 and 15: utime, stime
    }
    return sum;
  }

  /** Why a job's result does not count, or null when it does. */
  static String check(JsonNode j, String mode, long rows, int exit) {
    if (j == null) {
      return "no result line (exit " + exit + ")";
    }
    if (exit != 0 || !j.path("content_ok").asBoolean(false) || j.path("rows").asLong(-1) != rows) {
      return "the rows read back are not the rows written (exit " + exit + ", " + j.path("rows").asLong(-1)
          + " of " + rows + " counted)";
    }
    long bytes = j.path("bytes").asLong(0);
    if (mode.equals("stock")) {
      return j.path("fs").asText().equals("org.apache.hadoop.hdfs.DistributedFileSystem") ? null
          : "stock's job ran on " + j.path("fs").asText();
    }
    if (j.path("hrdma_written").asLong(0) < bytes || j.path("stock_write_fallbacks").asLong(-1) != 0) {
      return "the table (" + bytes + " bytes) was not written over hrdma (" + j.path("hrdma_written").asLong(0)
          + " bytes, " + j.path("stock_write_fallbacks").asLong(-1) + " fallbacks)";
    }
    if (j.path("hrdma_read").asLong(0) < bytes / 2 || j.path("stock_read").asLong(-1) != 0) {
      return "the scan did not read over hrdma (" + j.path("hrdma_read").asLong(0) + " bytes, through the stock path "
          + j.path("stock_read").asLong(-1) + ")";
    }
    return null;
  }

  static String render(Options o, Map<String, List<Run>> runs) {
    List<Run> ours = runs.getOrDefault("ours", List.of());
    List<Run> stock = runs.getOrDefault("stock", List.of());
    StringBuilder t = new StringBuilder();
    t.append(String.format("%n# hrdma bench spark  runs=%d  rows=%d  a new PySpark job (local[2]) per run; ours: "
        + "spark.jars = the plugin jar; replication 3; medians of %d ours, %d stock%n", o.runs(), o.rows(),
        ours.size(), stock.size()));
    if (ours.isEmpty() || stock.isEmpty()) {
      t.append("(no complete pair of runs)\n");
      return t.toString();
    }
    double mb = ShellBench.median(ours.stream().mapToDouble(r -> r.bytes() / 1e6).toArray());
    t.append(String.format("%-6s %10s %10s %12s %12s %14s %11s %11s%n", "phase", "ours s", "stock s", "ours MB/s",
        "stock MB/s", "ours vs stock", "ours cpu s", "stock cpu s"));
    for (String phase : List.of("write", "scan", "job")) {
      double os = median(ours, r -> seconds(r, phase));
      double ss = median(stock, r -> seconds(r, phase));
      double oc = median(ours, r -> cpu(r, phase));
      double sc = median(stock, r -> cpu(r, phase));
      t.append(String.format("%-6s %10.2f %10.2f %12.1f %12.1f %13.2fx %11.2f %11.2f%n", phase, os, ss, mb / os, mb / ss,
          ss / os, oc, sc));
    }
    t.append(String.format("table %.1f MB; ours vs stock: stock's median time over ours' (above 1: ours is quicker); "
        + "job: the whole process (Python, the JVM's start, Spark's set-up, write, scan); cpu: the Spark JVM's in "
        + "the write and the scan, the three DataNodes' during the whole job%n", mb));
    return t.toString();
  }

  private static double median(List<Run> runs, java.util.function.ToDoubleFunction<Run> f) {
    return ShellBench.median(runs.stream().mapToDouble(f).toArray());
  }

  private static double cpu(Run r, String phase) {
    return switch (phase) {
      case "write" -> r.writeCpu();
      case "scan" -> r.scanCpu();
      default -> r.dataNodeCpu();
    };
  }

  private static double seconds(Run r, String phase) {
    return switch (phase) {
      case "write" -> r.write();
      case "scan" -> r.scan();
      default -> r.job();
    };
  }
}
