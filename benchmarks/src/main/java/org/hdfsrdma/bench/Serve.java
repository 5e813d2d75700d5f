package org.hdfsrdma.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * {@code hrdma serve --port P}: serves perf and doctor peers on this host.
 * Until org.hdfsrdma.transport.select.HrdmaServer exists (one negotiated
 * port), every available transport listens on its own port: tcp P, ucx P+1,
 * stream P+2 (see {@link PerfOptions#portFor}).
 */
public final class Serve {
  private Serve() {}

  public static void main(String[] args) {
    List<String> a = new ArrayList<>(List.of(args));
    if (a.contains("-h") || a.contains("--help")) {
      System.out.println("usage: hrdma serve [--port P] [--transport T,...] [--ucx-tls VALUE]"
          + " [--conf KEY=VALUE ...]\n  serves 'hrdma perf --client' and 'hrdma doctor"
          + " --connect': tcp on P (default " + PerfOptions.DEFAULT_PORT + "), ucx on P+1,"
          + " stream on P+2");
      System.exit(0);
    }
    if (!a.contains("--transport")) {
      a.add("--transport");
      a.add(String.join(",", PerfOptions.TRANSPORTS));
    }
    a.add("--server");
    System.exit(Perf.run(a.toArray(new String[0]), System.out, System.err));
  }
}
