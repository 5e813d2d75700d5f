package org.hdfsrdma.bench.net;

import java.io.IOException;
import java.io.PrintStream;
import java.util.List;

/**
 * {@code hrdma bench netns list|cleanup [--tag T]}: what bench --net runs left behind
 * (a run killed with SIGKILL cannot clean up after itself), by the project's name
 * prefixes.
 */
public final class NetnsMain {
  private NetnsMain() {}

  static final String USAGE = """
      usage: hrdma bench netns list|cleanup [--tag XXXX]
        list     the network namespaces (hrdma-*) and links (hrdXXXX*) of bench --net runs present now
        cleanup  kill what runs in them and remove them (all runs, or the run with --tag XXXX); needs root
      """;

  public static int run(String[] args, PrintStream out, PrintStream err) {
    if (args.length == 0 || List.of("-h", "--help", "help").contains(args[0])) {
      (args.length == 0 ? err : out).print(USAGE);
      return args.length == 0 ? 2 : 0;
    }
    String tag = null;
    if (args.length == 3 && args[1].equals("--tag")) {
      tag = args[2];
      if (!NetLab.TAG.matcher(tag).matches()) {
        err.println("hrdma bench netns: --tag takes 4 hex digits (as in hrdma-XXXX-dn1), not '" + tag + "'");
        return 2;
      }
    } else if (args.length != 1) {
      err.println("hrdma bench netns: unexpected arguments");
      err.print(USAGE);
      return 2;
    }
    switch (args[0]) {
      case "list" -> {
        List<String> ns = NetLab.ourNamespaces();
        List<String> links = NetLab.ourLinks();
        out.println("namespaces: " + (ns.isEmpty() ? "none" : String.join(" ", ns)));
        out.println("links: " + (links.isEmpty() ? "none" : String.join(" ", links)));
        return 0;
      }
      case "cleanup" -> {
        try {
          NetLab.checkRoot();
        } catch (IOException e) {
          err.println("hrdma bench netns: " + e.getMessage());
          return 1;
        }
        List<String> removed = NetLab.cleanupAll(tag);
        out.println(removed.isEmpty() ? "hrdma bench netns: nothing to remove"
            : "hrdma bench netns: removed " + String.join(", ", removed));
        List<String> left = tag == null ? NetLab.ourNamespaces() : List.of();
        if (!left.isEmpty()) {
          err.println("hrdma bench netns: still present: " + left);
          return 1;
        }
        return 0;
      }
      default -> {
        err.println("hrdma bench netns: unknown subcommand '" + args[0] + "'");
        err.print(USAGE);
        return 2;
      }
    }
  }
}
