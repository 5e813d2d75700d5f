package org.hdfsrdma.bench;

import java.util.Arrays;

/** Dispatches the Java side of bin/hrdma: perf, doctor, serve, demo, cluster, bench fs|pread|disk|dfsio|randomwriter|sort|sweep|netns. */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    if (args.length == 0) {
      System.err.println("usage: Main perf|doctor|serve|demo|cluster|bench fs ...");
      System.exit(2);
    }
    String[] rest = Arrays.copyOfRange(args, 1, args.length);
    switch (args[0]) {
      case "perf" -> Perf.main(rest);
      case "doctor" -> Doctor.main(rest);
      case "serve" -> Serve.main(rest);
      case "demo" -> org.hdfsrdma.bench.fs.Demo.main(rest);
      case "cluster" -> {
        // Hadoop's client logs through slf4j-simple here: errors only, as the cluster CLI always had
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
          System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "error");
        }
        System.exit(org.hdfsrdma.cluster.ClusterMain.run(rest, System.out, System.err));
      }
      case "bench" -> {
        String what = rest.length == 0 ? "" : rest[0];
        String[] more = rest.length == 0 ? rest : Arrays.copyOfRange(rest, 1, rest.length);
        switch (what) {
          case "fs" -> org.hdfsrdma.bench.fs.FsBench.main(more);
          case "pread" -> org.hdfsrdma.bench.fs.PreadBench.main(more);
          case "disk" -> org.hdfsrdma.bench.fs.DiskBench.main(more);
          case "seal" -> org.hdfsrdma.bench.fs.SealBench.main(more);
          case "zcr" -> org.hdfsrdma.bench.fs.ZcrBench.main(more);
          case "netns" -> System.exit(org.hdfsrdma.bench.net.NetnsMain.run(more, System.out, System.err));
          case "job-child" -> System.exit(org.hdfsrdma.bench.mr.JobChild.main(more));
          case "dfsio", "randomwriter", "sort", "sweep" -> org.hdfsrdma.bench.mr.MrBench.main(what, more);
          default -> {
            System.err.println("usage: bench fs|pread|zcr|seal|disk|dfsio|randomwriter|sort|sweep|netns [options]   ('bench X --help' "
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
