package org.hdfsrdma.bench.fs;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.hdfsrdma.bench.Json;
import org.hdfsrdma.bench.LatencyStats;
import org.hdfsrdma.tools.Sizes;
import org.hdfsrdma.tools.fs.FsTable;
import org.hdfsrdma.tools.fs.Stats;

/** The samples, summary and table of {@code hrdma bench pread}. */
public final class PreadTable {
  private PreadTable() {}

  /**
   * One timed run: {@code ops} positional reads of {@code ioSize} bytes by {@code threads}
   * threads in {@code nanos}; latencies in microseconds.
   */
  public record Run(String client, int ioSize, int threads, boolean cold, int run, long ops, long nanos,
      double p50Us, double p99Us) {
    public double iops() {
      return nanos <= 0 ? Double.NaN : ops * 1e9 / nanos;
    }

    /** A run from its per-read latencies (nanoseconds). */
    static Run of(String client, int ioSize, int threads, boolean cold, int run, long nanos, long[] latNanos,
        int count) {
      if (count == 0) {
        return new Run(client, ioSize, threads, cold, run, 0, nanos, Double.NaN, Double.NaN);
      }
      double[] us = new double[count];
      for (int i = 0; i < count; i++) {
        us[i] = latNanos[i] / 1e3;
      }
      LatencyStats s = LatencyStats.of(us);
      return new Run(client, ioSize, threads, cold, run, count, nanos, s.typical(), s.p99());
    }
  }

  /** One (io size, threads, warm/cold) cell: medians over its runs, ours and stock. */
  public record Cell(int ioSize, int threads, boolean cold, Stats oursIops, Stats stockIops, Stats oursP50,
      Stats oursP99, Stats stockP50, Stats stockP99) {
    public double ratio() {
      return Stats.ratio(oursIops.median(), stockIops.median());
    }
  }

  /** Cells in the order their first run came. */
  public static List<Cell> summarize(List<Run> runs) {
    Map<String, List<Run>> by = new LinkedHashMap<>();
    for (Run r : runs) {
      by.computeIfAbsent(r.ioSize() + "/" + r.threads() + "/" + r.cold(), k -> new ArrayList<>()).add(r);
    }
    List<Cell> out = new ArrayList<>();
    for (List<Run> l : by.values()) {
      List<Run> ours = l.stream().filter(r -> r.client().equals("ours")).toList();
      List<Run> stock = l.stream().filter(r -> r.client().equals("stock")).toList();
      Run f = l.get(0);
      out.add(new Cell(f.ioSize(), f.threads(), f.cold(),
          Stats.of(ours.stream().mapToDouble(Run::iops).toArray()),
          Stats.of(stock.stream().mapToDouble(Run::iops).toArray()),
          Stats.of(ours.stream().mapToDouble(Run::p50Us).toArray()),
          Stats.of(ours.stream().mapToDouble(Run::p99Us).toArray()),
          Stats.of(stock.stream().mapToDouble(Run::p50Us).toArray()),
          Stats.of(stock.stream().mapToDouble(Run::p99Us).toArray())));
    }
    return out;
  }

  static final List<String> HEADER = List.of("#bytes", "threads", "cache", "ours IOPS", "stock IOPS",
      "ours/stock", "ours p50[usec]", "ours p99[usec]", "stock p50[usec]", "stock p99[usec]");

  static List<List<String>> rows(List<Cell> cells) {
    List<List<String>> rows = new ArrayList<>();
    for (Cell c : cells) {
      rows.add(List.of(Sizes.format(c.ioSize()), Integer.toString(c.threads()), c.cold() ? "cold" : "warm",
          FsTable.num("%.0f", c.oursIops().median()), FsTable.num("%.0f", c.stockIops().median()),
          FsTable.num("%.2f", c.ratio()), FsTable.num("%.1f", c.oursP50().median()),
          FsTable.num("%.1f", c.oursP99().median()), FsTable.num("%.1f", c.stockP50().median()),
          FsTable.num("%.1f", c.stockP99().median())));
    }
    return rows;
  }

  /** The fixed-width table: size, threads and cache left, figures right-aligned. */
  public static String render(List<Cell> cells) {
    return FsTable.render(HEADER, rows(cells), 3);
  }

  /** The line above the table: what ran and against what. */
  static String title(PreadOptions o) {
    return String.format(Locale.ROOT, "# hrdma bench pread  file=%s  replication=1  %ds a run  runs=%d  "
        + "order: ours, stock, ours, stock...  one stream shared by the threads  uniformly random offsets  "
        + "(medians of the runs; latency per read)", Sizes.format(o.size()), o.seconds(), o.runs());
  }

  /** What the anchor is and what warm and cold mean. */
  static final String FOOTER = "stock = Hadoop's DistributedFileSystem over TCP to the DataNodes, without its own "
      + "short-circuit reads (as in 'bench fs'); ours = RdmaDistributedFileSystem with its defaults (short-circuit "
      + "reads on).\nwarm: the file read whole and preads run untimed through each client first; cold: block and "
      + ".meta files dropped from the page cache (posix_fadvise DONTNEED via dd iflag=nocache) and new clients "
      + "before each run.";

  static List<String> jsonLines(PreadOptions o, String machine, List<Run> runs, List<Cell> cells) {
    List<String> l = new ArrayList<>();
    l.add(new Json().put("type", "config").put("size", o.size()).put("seconds", o.seconds()).put("runs", o.runs())
        .put("sizes", o.ioSizes().toString()).put("threads", o.threads().toString()).put("cold", o.cold())
        .put("anchor", "stock DistributedFileSystem over TCP, no short-circuit")
        .put("cold_method", "posix_fadvise DONTNEED on block and .meta files (dd iflag=nocache), new clients")
        .put("machine", machine).toString());
    for (Run r : runs) {
      l.add(new Json().put("type", "run").put("client", r.client()).put("bytes", r.ioSize())
          .put("threads", r.threads()).put("cache", r.cold() ? "cold" : "warm").put("run", r.run())
          .put("ops", r.ops()).put("seconds", r.nanos() / 1e9).put("iops", r.iops()).put("p50_us", r.p50Us())
          .put("p99_us", r.p99Us()).toString());
    }
    for (Cell c : cells) {
      l.add(new Json().put("type", "summary").put("bytes", c.ioSize()).put("threads", c.threads())
          .put("cache", c.cold() ? "cold" : "warm").put("ours_iops", c.oursIops().median())
          .put("stock_iops", c.stockIops().median()).put("ratio_ours_stock", c.ratio())
          .put("ours_p50_us", c.oursP50().median()).put("ours_p99_us", c.oursP99().median())
          .put("stock_p50_us", c.stockP50().median()).put("stock_p99_us", c.stockP99().median()).toString());
    }
    return l;
  }
}
