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
import org.hdfsrdma.bench.Sizes;
import org.hdfsrdma.bench.UsageException;

/**
 * {@code hrdma bench fs}: write and read through our client and the stock one on one
 * local cluster, alternating ours, stock, ours, stock... at each replication; medians,
 * CPU seconds per GiB, ratios; results also to results/DATE-COMMIT/.
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
    List<String> failures = new ArrayList<>();
    LocalDateTime started = LocalDateTime.now();
    // a step: one write (or read) by each client
    try (org.hdfsrdma.bench.Progress progress = new org.hdfsrdma.bench.Progress(err,
        2 * o.runs() * o.replications().size(), err == System.err && System.console() != null);
        LocalCluster c = LocalCluster.start(o.dir(), o.conf(), log);
        FileSystem ours = c.newClient(true);
        FileSystem stock = c.newClient(false)) {
      progress.restartStepClock();
      Measure m = new Measure(c.dataNodePids());
      for (int repl : o.replications()) {
        Path d = new Path(DIR, "r" + repl);
        Path byOurs = new Path(d, "by-ours");
        Path byStock = new Path(d, "by-stock");
        long crc = -1;
        for (int run = 1; run <= o.runs(); run++) {
          progress.phase(String.format("bench fs: replication %d, write run %d/%d", repl, run, o.runs()));
          Sample a = m.write("ours", ours, byOurs, o.size(), repl);
          Sample b = m.write("stock", stock, byStock, o.size(), repl);
          progress.stepDone();
          samples.add(a);
          samples.add(b);
          crc = b.crc();
        }
        // reads: both clients read the same file (the stock-written one) with a warm page cache
        m.warm(stock, byStock);
        m.warm(ours, byOurs);
        for (int run = 1; run <= o.runs(); run++) {
          progress.phase(String.format("bench fs: replication %d, read run %d/%d", repl, run, o.runs()));
          Sample a = m.read("ours", ours, byStock, "stock", repl);
          Sample b = m.read("stock", stock, byStock, "stock", repl);
          progress.stepDone();
          for (Sample x : List.of(a, b)) {
            samples.add(x);
            if (x.crc() != crc || x.bytes() != o.size()) {
              failures.add(String.format("%s read of %s: %d bytes, CRC32C %08x, written CRC32C %08x", x.client(),
                  x.file(), x.bytes(), x.crc(), crc));
            }
          }
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
        + "reads: warm page cache (each file read once before timing), both clients read the file the stock "
        + "client wrote  (MB = 10^6 bytes; medians)", Sizes.format(o.size()), o.runs());
    String table = FsTable.render(FsTable.BENCH_HEADER, FsTable.benchRows(sum), 3);
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

  static List<String> jsonLines(FsOptions o, String machine, List<Sample> samples, List<FsTable.Summary> sum) {
    List<String> l = new ArrayList<>();
    l.add(new Json().put("type", "config").put("size", o.size()).put("runs", o.runs())
        .put("replication", o.replications().toString()).put("reads", "warm page cache, read once before timing")
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
