package org.hdfsrdma.bench;

import java.util.Arrays;

/**
 * Dispatches the measuring commands of bin/hrdma: perf, bench fs|pread|zcr|shell|spark|seal|disk|dfsio|randomwriter|sort|sweep|netns
 * (doctor, serve, demo and cluster: org.hdfsrdma.tools.Main, on the same class path).
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    if (args.length == 0) {
      System.err.println("usage: Main perf|bench fs ...");
      System.exit(2);
    }
    String[] rest = Arrays.copyOfRange(args, 1, args.length);
    switch (args[0]) {
      case "perf" -> Perf.main(rest);
      case "bench" -> {
        String what = rest.length == 0 ? "" : rest[0];
        String[] more = rest.length == 0 ? rest : Arrays.copyOfRange(rest, 1, rest.length);
        switch (what) {
          case "fs" -> org.hdfsrdma.bench.fs.FsBench.main(more);
          case "pread" -> org.hdfsrdma.bench.fs.PreadBench.main(more);
          case "disk" -> org.hdfsrdma.bench.fs.DiskBench.main(more);
          case "seal" -> org.hdfsrdma.bench.fs.SealBench.main(more);
          case "zcr" -> org.hdfsrdma.bench.fs.ZcrBench.main(more);
          case "shell" -> org.hdfsrdma.bench.fs.ShellBench.main(more);
          case "spark" -> org.hdfsrdma.bench.fs.SparkBench.main(more);
          case "netns" -> System.exit(org.hdfsrdma.bench.net.NetnsMain.run(more, System.out, System.err));
          case "job-child" -> System.exit(org.hdfsrdma.bench.mr.JobChild.main(more));
          case "dfsio", "randomwriter", "sort", "sweep" -> org.hdfsrdma.bench.mr.MrBench.main(what, more);
          default -> {
            System.err.println("usage: bench fs|pread|zcr|shell|spark|seal|disk|dfsio|randomwriter|sort|sweep|netns [options]   ('bench X --help' "
                + "lists them)");
            System.exit(2);
          }
        }
      }
      default -> {
        System.err.println("unknown command '" + args[0] + "'");
        System.exit(2);
      }
    }
  }
}
