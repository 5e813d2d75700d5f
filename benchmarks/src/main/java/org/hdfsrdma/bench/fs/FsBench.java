package org.hdfsrdma.bench.fs;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.hdfsrdma.bench.Json;
import org.hdfsrdma.tools.Sizes;
import org.hdfsrdma.tools.UsageException;
import org.hdfsrdma.tools.fs.FsMain;
import org.hdfsrdma.tools.fs.FsOptions;
import org.hdfsrdma.tools.fs.LocalCluster;
import org.hdfsrdma.tools.fs.Measure;
import org.hdfsrdma.tools.fs.ColdReads;
import org.hdfsrdma.tools.fs.FsTable;
import org.hdfsrdma.tools.fs.Sample;

/**
 * {@code hrdma bench fs}: write and read through our client and the stock one on one
 * local cluster, alternating ours, stock, ours, stock... at each replication; medians,
 * CPU seconds per GiB, ratios; results also to results/DATE-COMMIT/. Reads in three cases:
 * each client's own file right after writing it (the page cache as the write left it: what
 * a user meets first), warm (read once before), and cold (the files' page cache dropped;
 * fio on the same block files beside it).
 */
public final class FsBench {
  private FsBench() {}

  static final Path DIR = new Path("/hrdma-bench");

  public static void main(String[] args) {
    FsMain.quietLogging();
    System.exit(run(args, System.out, System.err));
  }

  public static int run(String[] args, PrintStream out, PrintStream err) {
    if (args.length > 0 && List.of("-h", "--help", "help").contains(args[0])) {
      out.print(FsOptions.BENCH_USAGE);
      return 0;
    }
    FsOptions o;
    try {
      o = FsOptions.parseBench(args);
    } catch (UsageException e) {
      err.println("hrdma bench fs: " + e.getMessage());
      err.print(FsOptions.BENCH_USAGE);
      return 2;
    }
    PrintStream log = o.json() ? err : out;
    List<Sample> samples = new ArrayList<>();
    java.util.Map<Integer, List<Double>> fioRuns = new java.util.TreeMap<>();
    List<String> failures = new ArrayList<>();
    LocalDateTime started = LocalDateTime.now();
    // a step: one write (or read) by each client
    try (org.hdfsrdma.bench.Progress progress = new org.hdfsrdma.bench.Progress(err,
        4 * o.runs() * o.replications().size(), err == System.err && System.console() != null);
        LocalCluster c = LocalCluster.start(o.dir(), o.conf(), log);
        FileSystem ours = c.newClient(true);
        FileSystem stock = c.newClient(false)) {
      progress.restartStepClock();
      Measure m = new Measure(c.dataNodePids());
      boolean fio = ColdReads.fioAvailable();
      if (!fio) {
        log.println("bench fs: fio is not installed (bin/hrdma setup installs it): cold reads without fio beside them");
      }
      for (int repl : o.replications()) {
        Path d = new Path(DIR, "r" + repl);
        Path byOurs = new Path(d, "by-ours");
        Path byStock = new Path(d, "by-stock");
        long crc = -1;
        // each client writes its file and reads it back at once: the page cache as its write left it
        for (int run = 1; run <= o.runs(); run++) {
          progress.phase(String.format("bench fs: replication %d, write run %d/%d", repl, run, o.runs()));
          Sample a = m.write("ours", ours, byOurs, o.size(), repl);
          Sample ar = m.read("ours", ours, byOurs, "ours", repl, FsTable.READ_AFTER_WRITE);
          progress.stepDone();
          Sample b = m.write("stock", stock, byStock, o.size(), repl);
          Sample br = m.read("stock", stock, byStock, "stock", repl, FsTable.READ_AFTER_WRITE);
          progress.stepDone();
          samples.addAll(List.of(a, b, ar, br));
          crc = b.crc();
          check(ar, a.crc(), o.size(), failures);
          check(br, b.crc(), o.size(), failures);
        }
        // warm: both clients read the same file (the stock-written one), read once before
        m.warm(stock, byStock);
        m.warm(ours, byStock);
        for (int run = 1; run <= o.runs(); run++) {
          progress.phase(String.format("bench fs: replication %d, warm read run %d/%d", repl, run, o.runs()));
          Sample a = m.read("ours", ours, byStock, "stock", repl, FsTable.READ_WARM);
          Sample b = m.read("stock", stock, byStock, "stock", repl, FsTable.READ_WARM);
          progress.stepDone();
          samples.addAll(List.of(a, b));
          check(a, crc, o.size(), failures);
          check(b, crc, o.size(), failures);
        }
        // cold: the same file with its page cache dropped before each read; fio on its block files
        List<java.nio.file.Path> blocks = ColdReads.fioFiles(ColdReads.blockFiles(c, stock, byStock));
        if (fio && blocks.isEmpty()) {
          log.println("bench fs: the file is smaller than fio's 1 MiB request: cold reads without fio beside them");
        }
        for (int run = 1; run <= o.runs(); run++) {
          progress.phase(String.format("bench fs: replication %d, cold read run %d/%d", repl, run, o.runs()));
          ColdReads.dropCache(c);
          Sample a = m.read("ours", ours, byStock, "stock", repl, FsTable.READ_COLD);
          ColdReads.dropCache(c);
          Sample b = m.read("stock", stock, byStock, "stock", repl, FsTable.READ_COLD);
          if (fio && !blocks.isEmpty()) {
            ColdReads.dropCache(c);
            fioRuns.computeIfAbsent(repl, k -> new ArrayList<>()).add(ColdReads.fio(blocks));
          }
          progress.stepDone();
          samples.addAll(List.of(a, b));
          check(a, crc, o.size(), failures);
          check(b, crc, o.size(), failures);
        }
        if (!java.util.Objects.equals(stock.getFileChecksum(byOurs), stock.getFileChecksum(byStock))) {
          failures.add("replication " + repl + ": getFileChecksum of the file written by ours differs from stock's");
        }
        stock.delete(d, true);
      }
    } catch (Exception e) {
      err.println("hrdma bench fs: " + e);
      for (Throwable t = e.getCause(); t != null; t = t.getCause()) {
        err.println("  caused by: " + t);
      }
      return 1;
    }
    List<FsTable.Summary> sum = FsTable.summarize(samples);
    String machine = Machine.describe();
    String title = String.format("# hrdma bench fs  size=%s  runs=%d  order: ours, stock, ours, stock...  "
        + "(MB = 10^6 bytes; medians)%s", Sizes.format(o.size()), o.runs(), settings(o));
    String table = FsTable.render(FsTable.BENCH_HEADER, FsTable.benchRows(sum), 3) + READS_LEGEND
        + FsTable.fioLines(sum, fioRuns);
    List<String> jsonLines = jsonLines(o, machine, samples, sum);
    if (o.json()) {
      jsonLines.forEach(out::println);
    } else {
      out.println();
      out.println(title);
      out.print(table);
      out.println("'ours transport %': share of our client's bytes that went over our transport or "
          + "our short-circuit reader (its counters; "
          + "'-' = no counter)");
    }
    for (String f : failures) {
      err.println("FAIL: " + f);
    }
    try {
      java.nio.file.Path dir = o.resultsDir() != null ? o.resultsDir() : Machine.defaultResultsDir(started);
      Files.createDirectories(dir);
      String stamp = started.format(DateTimeFormatter.ofPattern("HHmmss"));
      Files.writeString(dir.resolve("fs-bench-" + stamp + ".csv"), csv(samples, sum));
      Files.writeString(dir.resolve("fs-bench-" + stamp + ".json"), String.join("\n", jsonLines) + "\n");
      Files.writeString(dir.resolve("fs-bench-" + stamp + ".txt"), title + "\n" + table);
      Files.writeString(dir.resolve("machine.txt"), machine + "\n");
      log.println("bench fs: results in " + dir);
    } catch (IOException e) {
      err.println("hrdma bench fs: could not write results: " + e.getMessage());
      return 1;
    }
    return failures.isEmpty() ? 0 : 1;
  }

  static final String READS_LEGEND = """
      'read after write': each client reads its own file right after writing it (the page cache as the write
        left it: the first read a user meets); 'read warm': both clients read the stock-written file, read once
        before; 'read cold': the same file with its page cache dropped before each read
      """;

  /** A read's content is the written stream's, or a failure is noted. */
  private static void check(Sample x, long crc, long size, List<String> failures) {
    if (x.crc() != crc || x.bytes() != size) {
      failures.add(String.format("%s %s of %s: %d bytes, CRC32C %08x, written CRC32C %08x", x.client(), x.op(),
          x.file(), x.bytes(), x.crc(), crc));
    }
  }

  /** The settings the run was given (--conf, --encrypt), for the table's title: a run's figures depend on them. */
  private static String settings(FsOptions o) {
    if (o.conf().isEmpty()) {
      return "";
    }
    StringBuilder b = new StringBuilder(System.lineSeparator()).append("# settings:");
    o.conf().forEach((k, v) -> b.append(' ').append(k).append('=').append(v));
    return b.toString();
  }

  static List<String> jsonLines(FsOptions o, String machine, List<Sample> samples, List<FsTable.Summary> sum) {
    List<String> l = new ArrayList<>();
    l.add(new Json().put("type", "config").put("size", o.size()).put("runs", o.runs())
        .put("replication", o.replications().toString()).put("settings", o.conf().toString()).put("reads", "after write (own file), warm (read once before), cold (page cache dropped)")
        .put("machine", machine).toString());
    for (Sample s : samples) {
      l.add(new Json().put("type", "sample").put("client", s.client()).put("op", s.op()).put("file_by", s.writtenBy())
          .put("replication", s.replication()).put("bytes", s.bytes()).put("seconds", s.seconds())
          .put("mb_per_s", s.mbps()).put("client_cpu_s", s.clientCpu()).put("datanode_cpu_s", s.dataNodeCpu())
          .put("bytes_ours_transport", s.oursBytes()).put("bytes_stock_path", s.stockBytes())
          .put("fallbacks", s.fallbacks()).toString());
    }
    for (FsTable.Summary s : sum) {
      l.add(new Json().put("type", "summary").put("op", s.op()).put("replication", s.replication())
          .put("metric", s.metric()).put("ours_median", s.ours().median()).put("ours_min", s.ours().min())
          .put("ours_max", s.ours().max()).put("stock_median", s.stock().median()).put("stock_min", s.stock().min())
          .put("stock_max", s.stock().max()).put("ratio_ours_stock", s.ratio()).toString());
    }
    return l;
  }

  static String csv(List<Sample> samples, List<FsTable.Summary> sum) {
    StringBuilder b = new StringBuilder("kind,client,op,replication,metric,value,ours_median,ours_min,ours_max,"
        + "stock_median,stock_min,stock_max,ratio,bytes,seconds,client_cpu_s,datanode_cpu_s,bytes_ours_transport,"
        + "bytes_stock_path\n");
    for (Sample s : samples) {
      b.append(String.join(",", "sample", s.client(), s.op(), Integer.toString(s.replication()), "MB/s",
          FsTable.num("%.3f", s.mbps()), "", "", "", "", "", "", "", Long.toString(s.bytes()),
          FsTable.num("%.4f", s.seconds()), FsTable.num("%.3f", s.clientCpu()), FsTable.num("%.3f", s.dataNodeCpu()),
          Long.toString(s.oursBytes()), Long.toString(s.stockBytes()))).append('\n');
    }
    for (FsTable.Summary s : sum) {
      b.append(String.join(",", "summary", "", s.op(), Integer.toString(s.replication()), s.metric(), "",
          FsTable.num("%.4f", s.ours().median()), FsTable.num("%.4f", s.ours().min()),
          FsTable.num("%.4f", s.ours().max()), FsTable.num("%.4f", s.stock().median()),
          FsTable.num("%.4f", s.stock().min()), FsTable.num("%.4f", s.stock().max()),
          FsTable.num("%.4f", s.ratio()), "", "", "", "", "", "")).append('\n');
    }
    return b.toString();
  }
}
