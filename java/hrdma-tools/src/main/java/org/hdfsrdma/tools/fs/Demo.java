package org.hdfsrdma.tools.fs;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.hadoop.fs.FileChecksum;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.hdfsrdma.tools.UsageException;

/**
 * {@code hrdma demo}: a local cluster (NameNode + 3 DataNodes with the plugin), one file
 * written through our client and one through the stock client, each read back through
 * both, content (CRC32C of the streams) and getFileChecksum verified, one table. The reads:
 * each client's own file right after writing it (the figure a user meets first), each
 * client the other's file (warm: each was just read), and each its own file with the page
 * cache dropped (cold, fio on the same block files beside it); then ours beside stock.
 */
public final class Demo {
  private Demo() {}

  static final Path DIR = new Path("/hrdma-demo");

  public static void main(String[] args) {
    FsMain.quietLogging();
    System.exit(run(args, System.out, System.err));
  }

  /** Exit code: 0 all checks passed, 1 a check or the run failed, 2 bad arguments. */
  public static int run(String[] args, PrintStream out, PrintStream err) {
    if (args.length > 0 && List.of("-h", "--help", "help").contains(args[0])) {
      out.print(FsOptions.DEMO_USAGE);
      return 0;
    }
    FsOptions o;
    try {
      o = FsOptions.parseDemo(args);
    } catch (UsageException e) {
      err.println("hrdma demo: " + e.getMessage());
      err.print(FsOptions.DEMO_USAGE);
      return 2;
    }
    int repl = o.replications().get(0);
    out.printf("hrdma demo: starting a NameNode and %d DataNodes with the plugin in %s%n", LocalCluster.DATANODES,
        o.dir() == null ? "a temporary directory" : o.dir());
    try (LocalCluster c = LocalCluster.start(o.dir(), o.conf(), out);
        FileSystem ours = c.newClient(true);
        FileSystem stock = c.newClient(false)) {
      Measure m = new Measure(c.dataNodePids());
      boolean fio = ColdReads.fioAvailable();
      java.util.Map<Integer, List<Double>> fioRuns = new java.util.TreeMap<>();
      List<Sample> all = new ArrayList<>();
      List<List<String>> rows = new ArrayList<>();
      List<String> failures = new ArrayList<>();
      FileChecksum oursSum = null;
      FileChecksum stockSum = null;
      for (int run = 1; run <= o.runs(); run++) {
        Path byOurs = new Path(DIR, "by-ours");
        Path byStock = new Path(DIR, "by-stock");
        List<Sample> s = new ArrayList<>();
        Sample wo = m.write("ours", ours, byOurs, o.size(), repl);
        Sample ro = m.read("ours", ours, byOurs, "ours", repl, FsTable.READ_AFTER_WRITE);
        Sample ws = m.write("stock", stock, byStock, o.size(), repl);
        Sample rs = m.read("stock", stock, byStock, "stock", repl, FsTable.READ_AFTER_WRITE);
        s.addAll(List.of(wo, ws, ro, rs));
        s.add(m.read("ours", ours, byStock, "stock", repl, FsTable.READ_WARM));
        s.add(m.read("stock", stock, byOurs, "ours", repl, FsTable.READ_WARM));
        ColdReads.dropCache(c);
        s.add(m.read("ours", ours, byOurs, "ours", repl, FsTable.READ_COLD));
        ColdReads.dropCache(c);
        s.add(m.read("stock", stock, byStock, "stock", repl, FsTable.READ_COLD));
        List<java.nio.file.Path> fioBlocks = ColdReads.fioFiles(ColdReads.blockFiles(c, stock, byOurs));
        if (fio && !fioBlocks.isEmpty()) { // none: the file is smaller than one fio request
          ColdReads.dropCache(c);
          fioRuns.computeIfAbsent(repl, k -> new ArrayList<>()).add(ColdReads.fio(fioBlocks));
        }
        all.addAll(s);
        for (Sample x : s) {
          rows.add(FsTable.demoRow(run, x));
          if (x.op().startsWith("read")) {
            long want = x.writtenBy().equals("ours") ? wo.crc() : ws.crc();
            if (x.crc() != want || x.bytes() != o.size()) {
              failures.add(String.format("run %d: %s client read %s: %d bytes, CRC32C %08x; written %d bytes, "
                  + "CRC32C %08x", run, x.client(), x.file(), x.bytes(), x.crc(), o.size(), want));
            }
          }
        }
        if (wo.crc() != ws.crc()) {
          failures.add("run " + run + ": the two writes' streams differ (generator bug)");
        }
        oursSum = stock.getFileChecksum(byOurs);
        stockSum = stock.getFileChecksum(byStock);
        FileChecksum oursSumViaOurs = ours.getFileChecksum(byOurs);
        if (oursSum == null || !Objects.equals(oursSum, stockSum) || !Objects.equals(oursSum, oursSumViaOurs)) {
          failures.add("run " + run + ": getFileChecksum differs: written by ours " + oursSum + ", by stock "
              + stockSum + " (asked through our client: " + oursSumViaOurs + ")");
        }
      }
      out.println();
      out.printf("# hrdma demo  size=%s  replication=%d  runs=%d  (MB = 10^6 bytes; CPU: client = this JVM's "
          + "process CPU, DataNodes = utime+stime of the %d DataNode JVMs; bytes from the clients' counters)%n",
          org.hdfsrdma.tools.Sizes.format(o.size()), repl, o.runs(), LocalCluster.DATANODES);
      out.print(FsTable.render(FsTable.DEMO_HEADER, rows, 4));
      out.println("'file by' = the client that wrote the file; 'read after write': its writer reads it at once "
          + "(the page cache as the write left it); 'read warm': the other client's file, just read; 'read cold': "
          + "own file, page cache dropped");
      out.println();
      List<FsTable.Summary> sum = FsTable.summarize(all);
      out.print(FsTable.render(FsTable.DEMO_SUMMARY_HEADER, FsTable.demoSummaryRows(sum), 2));
      out.print(FsTable.fioLines(sum, fioRuns));
      out.println("content: CRC32C of every read stream " + (failures.stream().anyMatch(f -> f.contains("CRC32C"))
          ? "DIFFERS from the written one" : "equals the written stream's"));
      out.println("getFileChecksum: by ours " + oursSum);
      out.println("                 by stock " + stockSum + (Objects.equals(oursSum, stockSum) ? "  (equal)"
          : "  (DIFFERENT)"));
      for (String f : failures) {
        out.println("FAIL: " + f);
      }
      out.println(failures.isEmpty() ? "demo: PASS" : "demo: FAIL (" + failures.size() + ")");
      return failures.isEmpty() ? 0 : 1;
    } catch (Exception e) {
      err.println("hrdma demo: " + e);
      for (Throwable t = e.getCause(); t != null; t = t.getCause()) {
        err.println("  caused by: " + t);
      }
      return 1;
    } finally {
      out.println("hrdma demo: cluster stopped");
    }
  }
}
