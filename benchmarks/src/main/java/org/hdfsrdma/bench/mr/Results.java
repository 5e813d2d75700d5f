package org.hdfsrdma.bench.mr;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.hdfsrdma.bench.Json;
import org.hdfsrdma.tools.Sizes;
import org.hdfsrdma.tools.fs.FsTable;
import org.hdfsrdma.bench.fs.Machine;

/**
 * What a {@link MrBench} run shows and keeps: the table, JSON lines, CSV (samples and
 * summary), a markdown summary, a PNG per swept parameter and machine.txt. Immutable
 * once built.
 */
public final class Results {
  static final List<String> HEADER = List.of("point", "job", "op", "metric", "ours median", "ours min..max",
      "stock median", "stock min..max", "ours/stock");
  static final List<String> SAMPLE_COLUMNS = List.of("param", "value", "datanodes", "net_gbit", "block_bytes",
      "clients", "replication", "job", "op", "path", "run", "bytes", "wall_s", "mb_per_s", "client_cpu_s",
      "datanode_cpu_s", "cpu_s_per_gb", "ours_transport_bytes", "detail");
  static final List<String> SUMMARY_COLUMNS = List.of("param", "value", "job", "op", "metric", "runs",
      "ours_median", "ours_min", "ours_max", "stock_median", "stock_min", "stock_max", "ratio");

  private final MrOptions o;
  private final LocalDateTime started;
  private final List<Point> points;
  private final List<Summary.Tagged> samples;
  private final List<Summary> sums;
  private final String failure;
  private final String machine;

  public Results(MrOptions o, LocalDateTime started, List<Point> points, List<Summary.Tagged> samples,
      List<Summary> sums, String failure) {
    this(o, started, points, samples, sums, failure, Machine.describe());
  }

  Results(MrOptions o, LocalDateTime started, List<Point> points, List<Summary.Tagged> samples, List<Summary> sums,
      String failure, String machine) {
    this.o = o;
    this.started = started;
    this.points = List.copyOf(points);
    this.samples = List.copyOf(samples);
    this.sums = List.copyOf(sums);
    this.failure = failure;
    this.machine = machine;
  }

  String title() {
    return String.format(Locale.ROOT, "# hrdma bench %s  job=%s files=%d size=%s block=%s datanodes=%d clients=%d "
        + "replication=%d runs=%d%s%s%s  (order: ours, stock / stock, ours alternating; MB = 10^6 bytes; medians)",
        o.command(), o.job(), o.files(), Sizes.format(o.fileBytes()), Sizes.format(o.blockBytes()), o.dataNodes(),
        o.clients(), o.replication(), o.runs(), o.transport() == null ? "" : " transport=" + o.transport(),
        o.yarnRm() == null ? " runner=local" : " runner=yarn:" + o.yarnRm(),
        o.cluster() != null ? " cluster=" + o.cluster() : o.mini() ? " cluster=MiniDFSCluster (one JVM)" : "")
        + settings();
  }

  /** The settings the run was given (--conf), on a line of their own: a run's figures depend on them. */
  private String settings() {
    if (o.conf().isEmpty()) {
      return "";
    }
    StringBuilder b = new StringBuilder("\n# settings:");
    o.conf().forEach((k, v) -> b.append(' ').append(k).append('=').append(v));
    return b.toString();
  }

  /** The table, the largest differences, and notes. */
  public String text() {
    StringBuilder b = new StringBuilder(title()).append('\n');
    List<List<String>> rows = new ArrayList<>();
    for (Summary s : sums) {
      String f = s.metric().equals(Summary.MBPS) ? "%.1f" : s.metric().endsWith("%") ? "%.0f" : "%.2f";
      rows.add(List.of(s.point().label(), s.job(), s.op(), s.metric(), num(f, s.ours().median()),
          num(f, s.ours().min()) + ".." + num(f, s.ours().max()), num(f, s.stock().median()),
          num(f, s.stock().min()) + ".." + num(f, s.stock().max()),
          s.metric().endsWith("%") ? "-" : num("%.2f", s.ratio())));
    }
    b.append(FsTable.render(HEADER, rows, 4));
    b.append("MB/s: dfsio = TestDFSIO's \"Throughput mb/sec\" (bytes over the sum of the tasks' I/O times, a "
        + "per-file rate) in 10^6-byte MB; randomwriter, sort = output bytes / job wall time.\n");
    b.append("CPU s/GB: client JVM (the tasks run in it) + DataNodes, per 10^9 bytes; ours transport %: "
        + "bytes our client's counters saw over our transport or our short-circuit reader.\n");
    List<String> diffs = largestDifferences(3);
    if (!diffs.isEmpty()) {
      b.append("largest differences (MB/s, ours/stock furthest from 1):\n");
      diffs.forEach(d -> b.append("  ").append(d).append('\n'));
    }
    if (failure != null) {
      b.append("FAILED: ").append(failure).append(" (the table holds the runs before the failure)\n");
    }
    return b.toString();
  }

  /** The MB/s summaries whose ratio is furthest from 1 (|log ratio|), as lines. */
  List<String> largestDifferences(int n) {
    return sums.stream().filter(s -> s.metric().equals(Summary.MBPS) && !Double.isNaN(s.ratio()) && s.ratio() > 0)
        .sorted(Comparator.comparingDouble((Summary s) -> -Math.abs(Math.log(s.ratio())))).limit(n)
        .map(s -> String.format(Locale.ROOT, "%s %s %s: ours %.1f, stock %.1f MB/s, ours/stock %.2f",
            s.point().label(), s.job(), s.op(), s.ours().median(), s.stock().median(), s.ratio()))
        .toList();
  }

  public List<String> jsonLines() {
    List<String> l = new ArrayList<>();
    l.add(new Json().put("type", "config").put("command", o.command()).put("job", o.job()).put("files", o.files())
        .put("file_bytes", o.fileBytes()).put("block_bytes", o.blockBytes()).put("datanodes", o.dataNodes())
        .put("clients", o.clients()).put("replication", o.replication()).put("runs", o.runs())
        .put("transport", o.transport()).put("runner", o.yarnRm() == null ? "local" : "yarn:" + o.yarnRm())
        .put("nets", o.nets().toString()).put("mini", o.mini()).put("settings", o.conf().toString()).put("started", started.toString()).put("machine", machine).toString());
    for (Summary.Tagged t : samples) {
      MrSample s = t.sample();
      Point p = t.point();
      l.add(new Json().put("type", "sample").put("param", p.param()).put("value", p.value())
          .put("datanodes", p.dataNodes()).put("net_gbit", p.gbit()).put("block_bytes", p.blockBytes())
          .put("clients", p.clients()).put("replication", p.replication()).put("job", s.job()).put("op", s.op())
          .put("path", s.path()).put("run", s.run()).put("bytes", s.bytes()).put("wall_s", s.wallSeconds())
          .put("mb_per_s", s.mbPerSec()).put("client_cpu_s", s.clientCpu()).put("datanode_cpu_s", s.dataNodeCpu())
          .put("cpu_s_per_gb", s.cpuPerGB()).put("ours_transport_bytes", s.oursBytes()).put("detail", s.detail())
          .toString());
    }
    for (Summary s : sums) {
      l.add(new Json().put("type", "summary").put("param", s.point().param()).put("value", s.point().value())
          .put("job", s.job()).put("op", s.op()).put("metric", s.metric()).put("runs", s.ours().count())
          .put("ours_median", s.ours().median()).put("ours_min", s.ours().min()).put("ours_max", s.ours().max())
          .put("stock_median", s.stock().median()).put("stock_min", s.stock().min())
          .put("stock_max", s.stock().max()).put("ratio", s.ratio()).toString());
    }
    if (failure != null) {
      l.add(new Json().put("type", "failure").put("error", failure).toString());
    }
    return l;
  }

  String samplesCsv() {
    StringBuilder b = new StringBuilder(String.join(",", SAMPLE_COLUMNS)).append('\n');
    for (Summary.Tagged t : samples) {
      MrSample s = t.sample();
      Point p = t.point();
      b.append(csv(p.param(), p.value(), p.dataNodes(), p.gbit(), p.blockBytes(), p.clients(), p.replication(),
          s.job(), s.op(), s.path(), s.run(), s.bytes(), s.wallSeconds(), s.mbPerSec(), s.clientCpu(),
          s.dataNodeCpu(), s.cpuPerGB(), s.oursBytes(), s.detail())).append('\n');
    }
    return b.toString();
  }

  String summaryCsv() {
    StringBuilder b = new StringBuilder(String.join(",", SUMMARY_COLUMNS)).append('\n');
    for (Summary s : sums) {
      b.append(csv(s.point().param(), s.point().value(), s.job(), s.op(), s.metric(), s.ours().count(),
          s.ours().median(), s.ours().min(), s.ours().max(), s.stock().median(), s.stock().min(), s.stock().max(),
          s.ratio())).append('\n');
    }
    return b.toString();
  }

  /** One CSV line; doubles in plain notation (NaN: empty), text quoted when it needs it. */
  static String csv(Object... cells) {
    List<String> out = new ArrayList<>();
    for (Object c : cells) {
      if (c instanceof Double d) {
        out.add(Double.isNaN(d) || Double.isInfinite(d) ? "" : new java.math.BigDecimal(d)
            .round(new java.math.MathContext(7)).stripTrailingZeros().toPlainString());
      } else {
        String s = String.valueOf(c);
        out.add(s.matches(".*[,\"\\n].*") ? "\"" + s.replace("\"", "\"\"") + "\"" : s);
      }
    }
    return String.join(",", out);
  }

  /** Swept parameters, in order, with their summaries. */
  Map<String, List<Summary>> byParam() {
    Map<String, List<Summary>> m = new LinkedHashMap<>();
    for (Summary s : sums) {
      if (!s.point().param().isEmpty()) {
        m.computeIfAbsent(s.point().param(), k -> new ArrayList<>()).add(s);
      }
    }
    return m;
  }

  /** summary.md: what ran, on what, the MB/s table, the largest differences, the plots. */
  String markdown(List<String> plots) {
    StringBuilder b = new StringBuilder();
    b.append("### hrdma bench ").append(o.command()).append(" (").append(o.job()).append(") ")
        .append(started.format(DateTimeFormatter.ISO_LOCAL_DATE_TIME).substring(0, 16)).append("\n\n");
    b.append("`").append(title().substring(2)).append("`\n\n");
    b.append("Machine: ").append(machine).append("\n\n");
    b.append("| point | job | op | ours MB/s | stock MB/s | ours/stock | ours CPU s/GB | stock CPU s/GB | "
        + "ours job s | stock job s |\n|---|---|---|---|---|---|---|---|---|---|\n");
    Map<String, Map<String, Summary>> rows = new LinkedHashMap<>();
    for (Summary s : sums) {
      rows.computeIfAbsent(s.point().label() + "|" + s.job() + "|" + s.op(), k -> new LinkedHashMap<>())
          .put(s.metric(), s);
    }
    for (Map.Entry<String, Map<String, Summary>> e : rows.entrySet()) {
      Summary mb = e.getValue().get(Summary.MBPS);
      Summary cpu = e.getValue().get(Summary.CPU_GB);
      Summary js = e.getValue().get(Summary.JOB_S);
      b.append("| ").append(e.getKey().replace("|", " | ")).append(" | ").append(num("%.1f", mb.ours().median()))
          .append(" | ").append(num("%.1f", mb.stock().median())).append(" | ").append(num("%.2f", mb.ratio()))
          .append(" | ").append(num("%.2f", cpu.ours().median())).append(" | ")
          .append(num("%.2f", cpu.stock().median())).append(" | ").append(num("%.1f", js.ours().median()))
          .append(" | ").append(num("%.1f", js.stock().median())).append(" |\n");
    }
    List<String> diffs = largestDifferences(3);
    if (!diffs.isEmpty()) {
      b.append("\nLargest differences: ").append(String.join("; ", diffs)).append(".\n");
    }
    for (String p : plots) {
      b.append("\n![").append(p).append("](").append(p).append(")\n");
    }
    b.append("\nMedians of ").append(o.runs()).append(" runs per path, ours and stock alternating on the same "
        + "cluster. No RDMA hardware unless the machine line says so.\n");
    if (failure != null) {
      b.append("\n**FAILED:** ").append(failure).append("\n");
    }
    return b.toString();
  }

  /** Writes everything under {@code dir}; the files written. */
  public List<Path> write(Path dir) throws IOException {
    Files.createDirectories(dir);
    String base = o.command() + (o.command().equals("sweep") ? "-" + o.job() : "") + "-"
        + started.format(DateTimeFormatter.ofPattern("HHmmss"));
    List<Path> files = new ArrayList<>();
    files.add(Files.writeString(dir.resolve(base + "-samples.csv"), samplesCsv()));
    files.add(Files.writeString(dir.resolve(base + "-summary.csv"), summaryCsv()));
    files.add(Files.writeString(dir.resolve(base + ".json"), String.join("\n", jsonLines()) + "\n"));
    files.add(Files.writeString(dir.resolve(base + ".txt"), text()));
    List<String> plots = new ArrayList<>();
    System.setProperty("java.awt.headless", "true");
    for (Map.Entry<String, List<Summary>> e : byParam().entrySet()) {
      Path png = dir.resolve(base + "-" + e.getKey() + ".png");
      Plot.sweep(png, e.getKey(), e.getValue());
      files.add(png);
      plots.add(png.getFileName().toString());
    }
    files.add(Files.writeString(dir.resolve(base + "-summary.md"), markdown(plots)));
    files.add(Files.writeString(dir.resolve("machine.txt"), machine + "\n"));
    return files;
  }

  static String num(String f, double v) {
    return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, f, v);
  }

  /** For tests: the summary of {@code metric} at {@code label} (point), or null. */
  Summary find(String label, String op, String metric) {
    return sums.stream().filter(s -> s.point().label().equals(label) && s.op().equals(op)
        && s.metric().equals(metric)).findFirst().orElse(null);
  }
}
