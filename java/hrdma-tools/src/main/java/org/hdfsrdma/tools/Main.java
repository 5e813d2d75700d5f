package org.hdfsrdma.tools;

import java.util.Arrays;

/** Dispatches the tools of bin/hrdma: doctor, serve, demo, cluster (perf and bench: org.hdfsrdma.bench.Main). */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    if (args.length == 0) {
      System.err.println("usage: Main doctor|serve|demo|cluster ...");
      System.exit(2);
    }
    String[] rest = Arrays.copyOfRange(args, 1, args.length);
    switch (args[0]) {
      case "doctor" -> Doctor.main(rest);
      case "serve" -> Serve.main(rest);
      case "demo" -> org.hdfsrdma.tools.fs.Demo.main(rest);
      case "cluster" -> {
        // Hadoop's client logs through slf4j-simple here: errors only, as the cluster CLI always had
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
          System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "error");
        }
        System.exit(org.hdfsrdma.cluster.ClusterMain.run(rest, System.out, System.err));
      }
      default -> {
        System.err.println("unknown command '" + args[0] + "'");
        System.exit(2);
      }
    }
  }
}
