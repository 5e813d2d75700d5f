package org.hdfsrdma.tools.fs;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.ToDoubleFunction;

/** The tables of {@code hrdma demo} and {@code hrdma bench fs}, and the summary math behind them. */
public final class FsTable {
  private FsTable() {}

  /** The read cases of demo and bench fs, as their tables name them. */
  public static final String READ_AFTER_WRITE = "read after write";
  public static final String READ_WARM = "read warm";
  public static final String READ_COLD = "read cold";


  static final List<String> DEMO_HEADER = List.of("run", "path", "op", "file by", "repl", "MB/s", "client CPU s",
      "DataNode CPU s", "bytes over ours", "bytes over stock", "fallbacks");

  /** One row of the demo table. */
  static List<String> demoRow(int run, Sample s) {
    return List.of(Integer.toString(run), s.client(), s.op(), s.writtenBy(), Integer.toString(s.replication()),
        fmt("%.1f", s.mbps()), fmt("%.2f", s.clientCpu()), fmt("%.2f", s.dataNodeCpu()),
        bytesShare(s.oursBytes(), s.bytes()), bytesShare(s.stockBytes(), s.bytes()), Long.toString(s.fallbacks()));
  }

  /** "256.0 MiB (100%)"; "n/a" when no counter told. */
  static String bytesShare(long part, long total) {
    if (part < 0) {
      return "n/a (no counter)";
    }
    String pct = total > 0 ? fmt(" (%.0f%%)", 100.0 * part / total) : "";
    return fmt("%.1f MiB", part / 1048576.0) + pct;
  }

  /** One metric of one (op, replication) over all runs: ours and stock side by side. */
  public record Summary(String op, int replication, String metric, Stats ours, Stats stock) {
    public double ratio() {
      return Stats.ratio(ours.median(), stock.median());
    }
  }

  static final List<String> METRICS = List.of("MB/s", "client CPU s/GiB", "DataNode CPU s/GiB", "ours transport %");

  /** Medians/min/max per (op, replication, metric), in the order the samples came. */
  public static List<Summary> summarize(List<Sample> samples) {
    List<Summary> out = new ArrayList<>();
    List<String> keys = new ArrayList<>();
    for (Sample s : samples) {
      String k = s.op() + "/" + s.replication();
      if (!keys.contains(k)) {
        keys.add(k);
      }
    }
    for (String k : keys) {
      String op = k.substring(0, k.indexOf('/'));
      int repl = Integer.parseInt(k.substring(k.indexOf('/') + 1));
      List<Sample> ours = samples.stream().filter(s -> s.op().equals(op) && s.replication() == repl
          && s.client().equals("ours")).toList();
      List<Sample> stock = samples.stream().filter(s -> s.op().equals(op) && s.replication() == repl
          && s.client().equals("stock")).toList();
      List<ToDoubleFunction<Sample>> fns = List.of(Sample::mbps, s -> Stats.perGiB(s.clientCpu(), s.bytes()),
          s -> Stats.perGiB(s.dataNodeCpu(), s.bytes()),
          s -> s.oursBytes() < 0 || s.bytes() == 0 ? Double.NaN : 100.0 * s.oursBytes() / s.bytes());
      for (int i = 0; i < METRICS.size(); i++) {
        ToDoubleFunction<Sample> f = fns.get(i);
        out.add(new Summary(op, repl, METRICS.get(i), Stats.of(ours.stream().mapToDouble(f).toArray()),
            Stats.of(stock.stream().mapToDouble(f).toArray())));
      }
    }
    return out;
  }

  public static final List<String> BENCH_HEADER = List.of("op", "repl", "metric", "ours median", "ours min..max",
      "stock median", "stock min..max", "ours/stock");

  static final List<String> DEMO_SUMMARY_HEADER = List.of("op", "repl", "ours MB/s", "stock MB/s", "ours/stock");

  /** The demo's summary: MB/s of each case, ours beside stock (medians over the runs). */
  static List<List<String>> demoSummaryRows(List<Summary> summaries) {
    List<List<String>> rows = new ArrayList<>();
    for (Summary s : summaries) {
      if (s.metric().equals("MB/s")) {
        rows.add(List.of(s.op(), Integer.toString(s.replication()), num("%.1f", s.ours().median()),
            num("%.1f", s.stock().median()), num("%.2f", s.ratio())));
      }
    }
    return rows;
  }

  public static List<List<String>> benchRows(List<Summary> summaries) {
    List<List<String>> rows = new ArrayList<>();
    for (Summary s : summaries) {
      String f = s.metric().equals("MB/s") ? "%.1f" : s.metric().endsWith("%") ? "%.0f" : "%.2f";
      rows.add(List.of(s.op(), Integer.toString(s.replication()), s.metric(), num(f, s.ours().median()),
          num(f, s.ours().min()) + ".." + num(f, s.ours().max()), num(f, s.stock().median()),
          num(f, s.stock().min()) + ".." + num(f, s.stock().max()),
          s.metric().endsWith("%") ? "-" : num("%.2f", s.ratio())));
    }
    return rows;
  }

  public static String num(String f, double v) {
    return Double.isNaN(v) ? "-" : fmt(f, v);
  }

  /**
   * A fixed-width table: columns as wide as their widest cell, two spaces apart, text
   * columns ({@code leftColumns} first ones) left-aligned, the rest right-aligned.
   */
  public static String render(List<String> header, List<List<String>> rows, int leftColumns) {
    int[] w = new int[header.size()];
    for (int i = 0; i < w.length; i++) {
      w[i] = header.get(i).length();
    }
    for (List<String> r : rows) {
      if (r.size() != w.length) {
        throw new IllegalArgumentException("row has " + r.size() + " cells, header " + w.length);
      }
      for (int i = 0; i < w.length; i++) {
        w[i] = Math.max(w[i], r.get(i).length());
      }
    }
    StringBuilder sb = new StringBuilder();
    line(sb, header, w, leftColumns);
    int total = 0;
    for (int x : w) {
      total += x;
    }
    sb.append("-".repeat(total + 2 * (w.length - 1))).append('\n');
    for (List<String> r : rows) {
      line(sb, r, w, leftColumns);
    }
    return sb.toString();
  }

  private static void line(StringBuilder sb, List<String> cells, int[] w, int left) {
    StringBuilder l = new StringBuilder();
    for (int i = 0; i < w.length; i++) {
      if (i > 0) {
        l.append("  ");
      }
      String c = cells.get(i);
      String pad = " ".repeat(w[i] - c.length());
      l.append(i < left ? c + pad : pad + c);
    }
    sb.append(l.toString().stripTrailing()).append('\n');
  }

  static String fmt(String f, Object... v) {
    return String.format(Locale.ROOT, f, v);
  }

  /** Per replication: the cold reads' medians beside fio's on the same block files. */
  public static String fioLines(List<Summary> sum, java.util.Map<Integer, List<Double>> fioRuns) {
    StringBuilder b = new StringBuilder();
    for (var e : fioRuns.entrySet()) {
      Stats f = Stats.of(e.getValue().stream().mapToDouble(Double::doubleValue).toArray());
      for (Summary s : sum) {
        if (s.op().equals(READ_COLD) && s.replication() == e.getKey() && s.metric().equals("MB/s")) {
          b.append(fmt("cold reads, replication %d: ours %.1f MB/s, stock %.1f, fio %.1f [%.1f..%.1f]"
              + " (%s): ours/fio %.2f, stock/fio %.2f%n", e.getKey(), s.ours().median(), s.stock().median(),
              f.median(), f.min(), f.max(), ColdReads.FIO_DESCRIPTION, s.ours().median() / f.median(),
              s.stock().median() / f.median()));
        }
      }
    }
    return b.toString();
  }
}
