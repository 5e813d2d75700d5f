package org.hdfsrdma.bench;

import java.util.ArrayList;
import java.util.List;
import org.hdfsrdma.transport.TransportConf;

/**
 * {@code hrdma serve --port P}: serves perf and doctor peers on this host. An
 * HrdmaServer listens with tcp on P and offers every other available
 * transport of the order on a free port; each client negotiates one (see
 * org.hdfsrdma.transport.select). The loopback mode of {@code hrdma perf}
 * runs this in a child JVM.
 */
public final class Serve {
  private Serve() {}

  public static void main(String[] args) {
    List<String> a = new ArrayList<>(List.of(args));
    if (a.contains("-h") || a.contains("--help")) {
      System.out.println("usage: hrdma serve [--port P] [--transport T,...] [--ucx-tls VALUE]"
          + " [--conf KEY=VALUE ...]\n  serves 'hrdma perf --client HOST:P' and 'hrdma doctor"
          + " --connect HOST:P' on one port (default " + PerfOptions.DEFAULT_PORT + "):\n"
          + "  tcp on P, and the other transports of --transport (default "
          + TransportConf.ORDER_KEY + ", " + TransportConf.ORDER_DEFAULT + ") that run here\n"
          + "  on free ports, offered to each client in the hello reply");
      System.exit(0);
    }
    a.add("--server");
    System.exit(Perf.run(a.toArray(new String[0]), System.out, System.err));
  }
}
