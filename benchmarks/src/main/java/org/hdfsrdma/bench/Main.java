package org.hdfsrdma.bench;

import java.util.Arrays;

/** Dispatches the Java side of bin/hrdma: perf, doctor, serve, demo, bench fs, bench disk. */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    if (args.length == 0) {
      System.err.println("usage: Main perf|doctor|serve|demo|bench fs ...");
      System.exit(2);
    }
    String[] rest = Arrays.copyOfRange(args, 1, args.length);
    switch (args[0]) {
      case "perf" -> Perf.main(rest);
      case "doctor" -> Doctor.main(rest);
      case "serve" -> Serve.main(rest);
      case "demo" -> org.hdfsrdma.bench.fs.Demo.main(rest);
      case "bench" -> {
        if (rest.length > 0 && rest[0].equals("disk")) {
          org.hdfsrdma.bench.fs.DiskBench.main(Arrays.copyOfRange(rest, 1, rest.length));
        }
        if (rest.length == 0 || !rest[0].equals("fs")) {
          System.err.println("usage: bench fs|disk [options]   ('bench fs --help', 'bench disk --help' list them)");
          System.exit(2);
        }
        org.hdfsrdma.bench.fs.FsBench.main(Arrays.copyOfRange(rest, 1, rest.length));
      }
      default -> {
        System.err.println("unknown command '" + args[0] + "'");
        System.exit(2);
      }
    }
  }
}
