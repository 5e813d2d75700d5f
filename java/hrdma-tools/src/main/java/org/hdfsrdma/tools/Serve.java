package org.hdfsrdma.tools;

import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.hdfsrdma.proto.HrdmaProtos.TransportAddress;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.select.HrdmaServer;

/**
 * {@code hrdma serve --port P}: serves perf and doctor peers on this host. An
 * HrdmaServer listens with tcp on P and offers every other available
 * transport of the order on a free port; each client negotiates one (see
 * org.hdfsrdma.transport.select). The loopback mode of {@code hrdma perf}
 * runs this in a child JVM; {@code hrdma perf --server} is the same server.
 */
public final class Serve {
  private Serve() {}

  public static final int DEFAULT_PORT = 18515;
  /** The transports serve and perf know by name. */
  public static final List<String> TRANSPORTS = List.of("tcp", "ucx", "stream");
  /**
   * I/O threads busy-poll in the micro-benchmarks, as ucx_perftest does (the
   * library's default is not to spin: a DataNode shares its cores).
   * {@code --conf hrdma.ucx.spin-count=N} overrides it.
   */
  public static final String BUSY_POLL_SPINS = "20000";

  static final String USAGE = "usage: hrdma serve [--port P] [--transport T,...] [--ucx-tls VALUE]"
      + " [--conf KEY=VALUE ...]\n  serves 'hrdma perf --client HOST:P' and 'hrdma doctor"
      + " --connect HOST:P' on one port (default " + DEFAULT_PORT + "):\n"
      + "  tcp on P, and the other transports of --transport (default "
      + TransportConf.ORDER_KEY + ", " + TransportConf.ORDER_DEFAULT + ") that run here\n"
      + "  on free ports, offered to each client in the hello reply";

  /**
   * What serve was asked for.
   *
   * @param transports the --transport list, or empty for the configured order
   */
  record Options(int port, List<String> transports, String ucxTls, Map<String, String> conf,
      boolean help) {}

  public static void main(String[] args) {
    System.exit(run(args, System.err));
  }

  /** Runs until killed; returns 1 when the server cannot start, 2 on bad usage. */
  static int run(String[] args, PrintStream err) {
    Options o;
    try {
      o = parse(args);
    } catch (UsageException e) {
      err.println("hrdma serve: " + e.getMessage());
      err.println(USAGE);
      return 2;
    }
    if (o.help()) {
      System.out.println(USAGE);
      return 0;
    }
    try {
      return serve(conf(o.conf(), o.ucxTls(), o.transports()), o.port(), err);
    } catch (IllegalArgumentException e) {
      err.println("hrdma serve: " + e.getMessage());
      return 2;
    } catch (IOException e) {
      err.println("hrdma serve: " + e.getMessage());
      return 1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 1;
    }
  }

  static Options parse(String... args) {
    int port = DEFAULT_PORT;
    List<String> transports = new ArrayList<>();
    String tls = null;
    Map<String, String> conf = new LinkedHashMap<>();
    boolean help = false;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      String inline = null;
      if (a.startsWith("--") && a.contains("=")) {
        inline = a.substring(a.indexOf('=') + 1);
        a = a.substring(0, a.indexOf('='));
      }
      switch (a) {
        case "-h", "--help", "help" -> help = true;
        case "--port", "-p" -> port = port(inline != null ? inline : value(args, ++i, a));
        case "--transport" -> {
          for (String t : (inline != null ? inline : value(args, ++i, a)).split(",")) {
            String n = transport(t);
            if (!transports.contains(n)) {
              transports.add(n);
            }
          }
        }
        case "--ucx-tls" -> tls = UcxTls.parse(inline != null ? inline : value(args, ++i, a));
        case "--conf", "-D" -> putConf(conf, inline != null ? inline : value(args, ++i, a));
        default -> throw new UsageException("unknown argument '" + args[i] + "'");
      }
    }
    return new Options(port, List.copyOf(transports), tls, conf, help);
  }

  /** A --transport name, checked and lower-cased. */
  public static String transport(String t) {
    String n = t.trim().toLowerCase(Locale.ROOT);
    if (!TRANSPORTS.contains(n)) {
      throw new UsageException("unknown transport '" + t + "' (known: "
          + String.join(", ", TRANSPORTS) + ")");
    }
    return n;
  }

  /** A port number, 0 to 65535. */
  public static int port(String v) {
    try {
      int p = Integer.parseInt(v.trim());
      if (p < 0 || p > 65535) {
        throw new NumberFormatException();
      }
      return p;
    } catch (NumberFormatException e) {
      throw new UsageException("bad port '" + v + "' (0-65535)");
    }
  }

  /** A --conf KEY=VALUE into {@code conf}. */
  public static void putConf(Map<String, String> conf, String v) {
    int eq = v.indexOf('=');
    if (eq <= 0) {
      throw new UsageException("--conf wants KEY=VALUE, not '" + v + "'");
    }
    conf.put(v.substring(0, eq).trim(), v.substring(eq + 1).trim());
  }

  private static String value(String[] args, int i, String opt) {
    if (i >= args.length || (args[i].startsWith("--") && args[i].length() > 2)) {
      throw new UsageException("option " + opt + " needs a value");
    }
    return args[i];
  }

  /**
   * The server's settings: {@code conf}, UCX_TLS (ignored by tcp), and as the
   * order {@code transports} when not empty, else hrdma.transport.order
   * (default {@value TransportConf#ORDER_DEFAULT}).
   */
  public static TransportConf conf(Map<String, String> conf, String ucxTls, List<String> transports) {
    Map<String, String> m = new LinkedHashMap<>(conf);
    m.putIfAbsent(TransportConf.UCX_SPIN_KEY, BUSY_POLL_SPINS);
    if (ucxTls != null) {
      m.put(TransportConf.UCX_CONFIG_KEY,
          UcxTls.ucxConfig(m.get(TransportConf.UCX_CONFIG_KEY), ucxTls));
    }
    if (!transports.isEmpty()) {
      m.put(TransportConf.ORDER_KEY, String.join(",", transports));
    }
    return TransportConf.of(m);
  }

  /**
   * An HrdmaServer on the service port whose every transport hands its
   * endpoints to a {@link PerfServer}. Runs until killed.
   */
  public static int serve(TransportConf conf, int port, PrintStream err) throws IOException,
      InterruptedException {
    HrdmaServer server = HrdmaServer.start(conf, new PerfServer(true), "0.0.0.0", port);
    Runtime.getRuntime().addShutdownHook(new Thread(server::close, "hrdma-serve-close"));
    server.skipped().forEach((name, why) -> err.println("hrdma serve: not offering " + name
        + ": " + why));
    err.println("hrdma serve: listening on " + server.serviceAddress() + ", offering "
        + offers(server.offers()));
    err.flush();
    new CountDownLatch(1).await(); // until killed; the hook closes the server
    return 0;
  }

  static String offers(List<TransportAddress> offers) {
    List<String> out = new ArrayList<>();
    for (TransportAddress a : offers) {
      out.add(a.getTransport() + " on port " + a.getPort());
    }
    return String.join(", ", out);
  }
}
