package org.hdfsrdma.tools;

import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.UcxStartEnvironment;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.hdfsrdma.transport.TransportProvider;
import org.hdfsrdma.transport.Transports;
import org.hdfsrdma.transport.select.HrdmaConnector;

/**
 * {@code hrdma doctor}: what this host can do. The native library and UCX,
 * the registered transports, the RDMA devices, and with {@code --connect}
 * which transport a connection to a peer would use.
 */
public final class Doctor {
  private Doctor() {}

  static final String USAGE = String.join("\n",
      "usage: hrdma doctor [--connect HOST:PORT] [--ucx-tls VALUE] [--conf KEY=VALUE ...]",
      "  --connect HOST:PORT  negotiate with a peer running 'hrdma serve --port PORT', as a",
      "                       client with hrdma.transport.order would: the transport chosen",
      "                       and why each one before it was not");

  public static void main(String[] args) {
    System.exit(run(args, System.out));
  }

  static int run(String[] args, PrintStream out) {
    Map<String, String> conf = new LinkedHashMap<>();
    String connect = null;
    String tls = null;
    try {
      for (int i = 0; i < args.length; i++) {
        switch (args[i]) {
          case "-h", "--help" -> {
            out.println(USAGE);
            return 0;
          }
          case "--connect" -> connect = need(args, ++i, "--connect");
          case "--ucx-tls" -> tls = need(args, ++i, "--ucx-tls");
          case "--conf" -> {
            String v = need(args, ++i, "--conf");
            int eq = v.indexOf('=');
            if (eq <= 0) {
              throw new UsageException("--conf wants KEY=VALUE, not '" + v + "'");
            }
            conf.put(v.substring(0, eq), v.substring(eq + 1));
          }
          default -> throw new UsageException("unknown argument '" + args[i] + "'");
        }
      }
    } catch (UsageException e) {
      System.err.println("hrdma doctor: " + e.getMessage());
      System.err.println(USAGE);
      return 2;
    }
    if (tls != null) {
      conf.put(TransportConf.UCX_CONFIG_KEY,
          UcxTls.ucxConfig(conf.get(TransportConf.UCX_CONFIG_KEY), tls));
    }
    TransportConf tc = TransportConf.of(conf);
    nativeStatus(out, tc);
    transports(out);
    devices(out);
    if (connect != null) {
      return connect(out, tc, connect);
    }
    return 0;
  }

  private static String need(String[] args, int i, String opt) {
    if (i >= args.length) {
      throw new UsageException("option " + opt + " needs a value");
    }
    return args[i];
  }

  static void nativeStatus(PrintStream out, TransportConf tc) {
    out.println("== native library (libhrdma)");
    if (!HrdmaNative.isAvailable()) {
      Throwable c = HrdmaNative.unavailabilityCause();
      out.println("  unavailable: " + (c != null ? c.getMessage() : "unknown cause"));
      out.println("  (the ucx and stream transports need it; tcp does not)");
      return;
    }
    out.println("  available: ABI " + HrdmaNative.abiVersion() + ", UCX " + HrdmaNative.ucxVersion()
        + " (needs >= " + HrdmaNative.MIN_UCX + ")");
    out.println("  UCX memory hooks: " + (HrdmaNative.ucxMemoryHooks()
        ? "on (UCX_MEM_EVENTS set by the user; they patch libc while the JVM runs)"
        : "off (UCX_MEM_EVENTS=no)"));
    List<String> unset = UcxStartEnvironment.missing();
    out.println("  UCX settings in the start environment: " + (unset.isEmpty()
        ? "all (libhrdma-preload changed nothing)"
        : "not " + String.join(", ", unset) + " (libhrdma-preload set them while the JVM ran; export them"
            + " before it starts, as docs/install.md shows)"));
    String ucxConf = tc.get(TransportConf.UCX_CONFIG_KEY, TransportConf.UCX_CONFIG_DEFAULT);
    out.println("== UCX transports and devices" + (ucxConf.isEmpty() ? "" : " (" + ucxConf + ")"));
    try {
      indent(out, HrdmaNative.ucxInfo(ucxConf));
    } catch (Exception e) {
      out.println("  ucx info failed: " + e.getMessage());
    }
  }

  /** Why {@code p} cannot be used here, or null when it can. */
  private static String unavailability(TransportProvider p) {
    try {
      return p.unavailabilityCause();
    } catch (RuntimeException | LinkageError e) {
      return e.toString();
    }
  }

  /** One line for result files: each transport available or not, and the RDMA devices. */
  public static String transportSummary() {
    StringBuilder b = new StringBuilder();
    for (TransportProvider p : Transports.providers()) {
      String cause = unavailability(p);
      b.append(b.length() == 0 ? "" : ",").append(p.name()).append(cause == null ? "" : "(unavailable)");
    }
    String dev = "unknown";
    if (HrdmaNative.isAvailable()) {
      try {
        String d = HrdmaNative.probeDevices();
        dev = d == null || d.isBlank() ? "none" : d.lines().findFirst().orElse("").trim();
      } catch (Exception e) {
        dev = "probe failed";
      }
    }
    return "transports=" + (b.length() == 0 ? "none" : b) + " rdma-devices=" + dev;
  }

  static void transports(PrintStream out) {
    out.println("== transports");
    for (TransportProvider p : Transports.providers()) {
      String cause = unavailability(p);
      out.printf("  %-8s %s%n", p.name(), cause == null ? "available" : "unavailable: " + cause);
    }
    if (Transports.providers().isEmpty()) {
      out.println("  none registered (META-INF/services/org.hdfsrdma.transport.TransportProvider)");
    }
  }

  static void devices(PrintStream out) {
    out.println("== RDMA devices");
    if (!HrdmaNative.isAvailable()) {
      out.println("  unknown: the native library is unavailable");
      return;
    }
    try {
      String d = HrdmaNative.probeDevices();
      if (d == null || d.isBlank()) {
        out.println("  no RDMA devices found");
      } else {
        indent(out, d);
      }
    } catch (Exception e) {
      out.println("  probe failed: " + e.getMessage());
    }
  }

  /**
   * Negotiates with the {@code hrdma serve} at HOST:PORT as a client with this
   * order would, prints the transport chosen and why each one before it was
   * not, and closes the connection.
   */
  static int connect(PrintStream out, TransportConf tc, String hostPort) {
    out.println("== connect " + hostPort + " (order " + tc.order() + ")");
    int colon = hostPort.lastIndexOf(':');
    if (colon <= 0) {
      out.println("  --connect wants HOST:PORT");
      return 2;
    }
    String host = hostPort.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    int port;
    try {
      port = Integer.parseInt(hostPort.substring(colon + 1));
    } catch (NumberFormatException e) {
      out.println("  bad port in '" + hostPort + "'");
      return 2;
    }
    InetSocketAddress service = new InetSocketAddress(host, port);
    EndpointHandler discard = new EndpointHandler() {
      @Override
      public void onMessage(Endpoint ep, RegisteredBuffer m) {
        m.release();
      }
    };
    try (HrdmaConnector connector = new HrdmaConnector(tc)) {
      HrdmaConnector.Connection c = connector.connect(service, discard);
      Endpoint ep = c.endpoint();
      attempts(out, c.attempts());
      out.println("  chosen: " + c.transport() + " to " + ep.remoteAddress() + ", capabilities "
          + ep.capabilities());
      ep.close();
      try {
        ep.closeFuture().get(5, TimeUnit.SECONDS);
      } catch (ExecutionException | TimeoutException e) {
        out.println("  closing failed: " + (e.getCause() != null ? e.getCause() : e));
      }
      return 0;
    } catch (HrdmaConnector.NegotiationException e) {
      attempts(out, e.attempts());
      out.println("  no transport reached " + hostPort + ": " + e.getMessage());
      return 1;
    } catch (TransportException e) {
      out.println("  cannot negotiate with " + hostPort + " (is 'hrdma serve --port " + port
          + "' running there?): " + e.getMessage());
      return 1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 1;
    }
  }

  private static void attempts(PrintStream out, List<HrdmaConnector.Attempt> attempts) {
    for (HrdmaConnector.Attempt a : attempts) {
      out.printf("  %-8s %s%n", a.transport(), a.chosen() ? "chosen" : "failed: " + a.failure());
    }
  }

  private static void indent(PrintStream out, String text) {
    for (String line : text.split("\n")) {
      if (!line.isBlank()) {
        out.println("  " + line);
      }
    }
  }
}
