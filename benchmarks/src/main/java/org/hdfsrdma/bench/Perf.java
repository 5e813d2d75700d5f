package org.hdfsrdma.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.hdfsrdma.tools.PerfServer;
import org.hdfsrdma.tools.Serve;
import org.hdfsrdma.tools.UcxTls;
import org.hdfsrdma.tools.UsageException;
import org.hdfsrdma.transport.Listener;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.hdfsrdma.transport.Transports;
import org.hdfsrdma.transport.select.HrdmaConnector;

/**
 * {@code hrdma perf}: perftest-style micro-benchmarks over our transports.
 * Loopback mode (the default) runs the server in a child JVM ({@code hrdma
 * serve}) and the client here, over 127.0.0.1, as ucx_perftest and iperf3
 * run; {@code --same-process} keeps both ends in this JVM. {@code --server} /
 * {@code --client} split them across hosts; {@code compare} runs the anchors
 * beside them ({@link Compare}).
 */
public final class Perf {
  private Perf() {}

  public static void main(String[] args) {
    System.exit(run(args, System.out, System.err));
  }

  /** Runs and returns the exit status: 0 ok, 1 a run or target failed, 2 bad usage. */
  public static int run(String[] args, PrintStream out, PrintStream err) {
    PerfOptions o;
    try {
      o = PerfOptions.parse(args);
    } catch (UsageException e) {
      err.println("hrdma perf: " + e.getMessage());
      err.println(PerfOptions.USAGE);
      return 2;
    }
    if (o.help) {
      out.println(PerfOptions.USAGE);
      return 0;
    }
    try {
      if (o.compare) {
        return new Compare(o, out, err).run();
      }
      return switch (o.mode) {
        case SERVER -> Serve.serve(serverConf(o), o.port, err);
        case CLIENT, LOOPBACK -> measure(o, out, err);
      };
    } catch (IllegalArgumentException e) {
      err.println("hrdma perf: " + e.getMessage());
      return 2;
    } catch (IOException e) {
      err.println("hrdma perf: " + e.getMessage());
      return 1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 1;
    }
  }

  /** The transport settings for one transport: --conf, plus UCX_TLS for ucx and stream. */
  static TransportConf conf(PerfOptions o, String transport, String ucxTls) {
    Map<String, String> m = new LinkedHashMap<>(o.conf);
    m.putIfAbsent(TransportConf.UCX_SPIN_KEY, Serve.BUSY_POLL_SPINS);
    if (ucxTls != null && !transport.equals("tcp")) {
      m.put(TransportConf.UCX_CONFIG_KEY,
          UcxTls.ucxConfig(m.get(TransportConf.UCX_CONFIG_KEY), ucxTls));
    }
    return TransportConf.of(m);
  }

  /** Label for the UCX_TLS column: null for tcp, which does not use UCX. */
  static String tlsLabel(String transport, String ucxTls) {
    return transport.equals("tcp") ? null : (ucxTls != null ? ucxTls : "default");
  }

  /** The server's settings: as 'hrdma serve' takes them ({@link Serve#conf}). */
  static TransportConf serverConf(PerfOptions o) {
    return Serve.conf(o.conf, o.ucxTls, o.transportsGiven ? o.transports : List.of());
  }

  /** Loopback or client mode: every transport x test x size, --runs times each. */
  static int measure(PerfOptions o, PrintStream out, PrintStream err) throws IOException,
      InterruptedException {
    int runs = o.runsOrDefault();
    for (String name : o.transports) {
      try (Bench b = o.mode == PerfOptions.Mode.CLIENT
          ? Bench.remote(name, conf(o, name, o.ucxTls), new InetSocketAddress(o.host, o.port))
          : Bench.loopback(o, name, o.ucxTls)) {
        err.println("# " + b.describe());
        for (String test : o.tests) {
          if (!o.json) {
            out.println(Report.title(test, name, tlsLabel(name, o.ucxTls),
                (test.endsWith("_lat") ? "" : "window=" + o.window + "  ")
                    + "runs=" + runs + (runs > 1 ? " (median)" : "")));
            out.println(Report.RULE);
            out.println(test.endsWith("_lat") ? Report.LAT_HEADER : Report.BW_HEADER);
          }
          for (int size : o.sizesFor(test)) {
            List<Object> rs = new ArrayList<>();
            for (int r = 0; r < runs; r++) {
              Object res = b.runOnce(test, size, o.warmupFor(test, size), o.itersFor(test, size),
                  o.window, tlsLabel(name, o.ucxTls));
              if (runs > 1) {
                err.println("# run " + (r + 1) + "/" + runs + ": " + summary(res));
              }
              rs.add(res);
            }
            Object m = median(rs);
            if (o.json) {
              out.println(m instanceof BwResult bw ? bw.toJson(runs) : ((LatResult) m).toJson(runs));
            } else {
              out.println(m instanceof BwResult bw ? Report.bwRow(bw) : Report.latRow((LatResult) m));
            }
            out.flush();
          }
          if (!o.json) {
            out.println(Report.RULE);
          }
        }
      }
    }
    return 0;
  }

  static String summary(Object r) {
    if (r instanceof BwResult bw) {
      return Report.fmt("%.2f MB/s", bw.avgMBps());
    }
    return Report.fmt("%.2f us typical", ((LatResult) r).stats().typical());
  }

  /** The median run: by average bandwidth, or by typical latency (lower middle when even). */
  static Object median(List<?> results) {
    List<Object> s = new ArrayList<>(results);
    s.sort(Comparator.comparingDouble(Perf::key));
    return s.get((s.size() - 1) / 2);
  }

  static double key(Object r) {
    return r instanceof BwResult bw ? bw.avgMBps() : ((LatResult) r).stats().typical();
  }

  /**
   * A transport ready to measure: a perf server to run against and the way to
   * connect to it. Closing it closes the client side, then the server (in the
   * child-process loopback: kills the child).
   */
  static final class Bench implements AutoCloseable {
    private final String description;
    private final PerfClient.Dialer dialer;
    private final List<AutoCloseable> resources; // closed in order
    private final Procs.Child child;

    private Bench(String description, PerfClient.Dialer dialer, List<AutoCloseable> resources,
        Procs.Child child) {
      this.description = description;
      this.dialer = dialer;
      this.resources = resources;
      this.child = child;
    }

    /** Loopback as --same-process chooses: a child JVM serving, or both ends here. */
    static Bench loopback(PerfOptions o, String name, String ucxTls) throws IOException,
        InterruptedException {
      return o.sameProcess ? sameProcess(name, conf(o, name, ucxTls)) : twoProcess(o, name, ucxTls);
    }

    /**
     * Both ends in this JVM: a second transport instance listens on 127.0.0.1
     * and the client connects to it directly (no negotiation).
     */
    static Bench sameProcess(String name, TransportConf conf) throws IOException {
      Transport server = Transports.create(name, conf);
      try {
        Listener l = server.listen(new InetSocketAddress("127.0.0.1", 0), new PerfServer(false));
        Transport client = Transports.create(name, conf);
        InetSocketAddress target = l.localAddress();
        return new Bench("loopback, both ends in this JVM (--same-process): " + name + " to "
            + target, h -> PerfClient.connect(client, target, h), List.of(client, server), null);
      } catch (IOException | RuntimeException e) {
        server.close();
        throw e;
      }
    }

    /**
     * The server in a child JVM ({@code hrdma serve} on a free port, the same
     * classpath, --conf and --ucx-tls; the environment, UCX_* included, is
     * inherited), the client here through the negotiation.
     */
    static Bench twoProcess(PerfOptions o, String name, String ucxTls) throws IOException,
        InterruptedException {
      int port = Procs.freePort();
      Procs.Child child = Procs.start("hrdma-serve", serveCommand(o, name, ucxTls, port), Map.of());
      try {
        Procs.awaitListening(child, port, 60);
        Bench remote = remote(name, conf(o, name, ucxTls), new InetSocketAddress("127.0.0.1", port));
        List<AutoCloseable> all = new ArrayList<>(remote.resources);
        all.add(child);
        return new Bench("loopback, server in a child JVM (pid " + child.process.pid() + ", "
            + "hrdma serve --port " + port + "), client in this JVM: " + name,
            remote.dialer, all, child);
      } catch (IOException | RuntimeException e) {
        child.close();
        throw e;
      }
    }

    /** The child's command line: this JVM's java, classpath and -D/-X options. */
    static List<String> serveCommand(PerfOptions o, String name, String ucxTls, int port) {
      List<String> cmd = ChildJvm.command(org.hdfsrdma.tools.Main.class, List.of("serve", "--port", Integer.toString(port), "--transport", name));
      if (ucxTls != null) {
        cmd.addAll(List.of("--ucx-tls", ucxTls));
      }
      o.conf.forEach((k, v) -> cmd.addAll(List.of("--conf", k + "=" + v)));
      return cmd;
    }

    /**
     * Against an {@code hrdma serve} at {@code service}: every run negotiates
     * with hrdma.transport.order = {@code name}, so the server's offer for
     * that transport is used (and its absence reported).
     */
    static Bench remote(String name, TransportConf conf, InetSocketAddress service) {
      HrdmaConnector connector = new HrdmaConnector(conf.with(TransportConf.ORDER_KEY, name));
      PerfClient.Dialer dialer = h -> {
        try {
          return connector.connect(service, h).endpoint();
        } catch (TransportException e) {
          throw new IOException("connect to " + service + " over " + name + " failed: "
              + e.getMessage(), e);
        }
      };
      return new Bench("to hrdma serve at " + service + ": " + name, dialer,
          List.of(connector), null);
    }

    String describe() {
      return description;
    }

    Object runOnce(String test, int size, long warmup, long iters, int window, String tls)
        throws IOException, InterruptedException {
      try {
        return PerfClient.run(dialer, test, size, warmup, iters, window, tls);
      } catch (IOException e) {
        if (child != null && !child.process.isAlive()) {
          throw new IOException(e.getMessage() + "; the server (child JVM) exited with status "
              + child.process.exitValue() + ", its output:\n" + Procs.tail(child.output(), 20), e);
        }
        throw e;
      }
    }

    @Override
    public void close() {
      for (AutoCloseable r : resources) {
        try {
          r.close();
        } catch (Exception e) {
          // Best effort: the rest must still close (the child must die).
        }
      }
    }
  }
}
