package org.hdfsrdma.bench;

import java.util.Arrays;

/** Dispatches the Java side of bin/hrdma: perf, doctor, serve. */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    if (args.length == 0) {
      System.err.println("usage: Main perf|doctor|serve ...");
      System.exit(2);
    }
    String[] rest = Arrays.copyOfRange(args, 1, args.length);
    switch (args[0]) {
      case "perf" -> Perf.main(rest);
      case "doctor" -> Doctor.main(rest);
      case "serve" -> Serve.main(rest);
      default -> {
        System.err.println("unknown command '" + args[0] + "'");
        System.exit(2);
      }
    }
  }
}
