package org.hdfsrdma.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.hdfsrdma.transport.Listener;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.Transports;

/**
 * {@code hrdma perf}: perftest-style micro-benchmarks over our transports.
 * Loopback mode (the default) runs server and client in this process on
 * 127.0.0.1; {@code --server} / {@code --client} split them across hosts;
 * {@code compare} runs the anchors beside them ({@link Compare}).
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
        case SERVER -> serve(o, err);
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
    if (ucxTls != null && !transport.equals("tcp")) {
      m.put(TransportConf.UCX_CONFIG_KEY,
          PerfOptions.ucxConfig(m.get(TransportConf.UCX_CONFIG_KEY), ucxTls));
    }
    return TransportConf.of(m);
  }

  /** Label for the UCX_TLS column: null for tcp, which does not use UCX. */
  static String tlsLabel(String transport, String ucxTls) {
    return transport.equals("tcp") ? null : (ucxTls != null ? ucxTls : "default");
  }

  static int serve(PerfOptions o, PrintStream err) throws IOException,
      InterruptedException {
    List<Transport> open = new ArrayList<>();
    Thread hook = new Thread(() -> open.forEach(Transport::close));
    Runtime.getRuntime().addShutdownHook(hook);
    for (String name : o.transports) {
      try {
        Transport t = Transports.create(name, conf(o, name, o.ucxTls));
        open.add(t);
        int port = PerfOptions.portFor(o.port, name);
        Listener l = t.listen(new InetSocketAddress("0.0.0.0", port), new PerfServer(true));
        err.println("hrdma perf server: " + name + " listening on " + l.localAddress());
      } catch (IOException | RuntimeException e) {
        err.println("hrdma perf server: " + name + " not served: " + e.getMessage());
      }
    }
    if (open.isEmpty()) {
      return 1;
    }
    new CountDownLatch(1).await(); // until killed; the hook closes the transports
    return 0;
  }

  /** Loopback or client mode: every transport x test x size, --runs times each. */
  static int measure(PerfOptions o, PrintStream out, PrintStream err) throws IOException,
      InterruptedException {
    int runs = o.runsOrDefault();
    for (String name : o.transports) {
      try (Bench b = o.mode == PerfOptions.Mode.CLIENT
          ? Bench.remote(name, conf(o, name, o.ucxTls),
              new InetSocketAddress(o.host, PerfOptions.portFor(o.port, name)))
          : Bench.loopback(name, conf(o, name, o.ucxTls))) {
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
   * A transport ready to measure: in loopback mode a second transport instance
   * serves on 127.0.0.1 (two instances, as two processes would have).
   */
  static final class Bench implements AutoCloseable {
    final Transport client;
    final Transport server;
    final InetSocketAddress target;

    private Bench(Transport client, Transport server, InetSocketAddress target) {
      this.client = client;
      this.server = server;
      this.target = target;
    }

    static Bench loopback(String name, TransportConf conf) throws IOException {
      Transport server = Transports.create(name, conf);
      try {
        Listener l = server.listen(new InetSocketAddress("127.0.0.1", 0), new PerfServer(false));
        Transport client = Transports.create(name, conf);
        return new Bench(client, server, l.localAddress());
      } catch (IOException | RuntimeException e) {
        server.close();
        throw e;
      }
    }

    static Bench remote(String name, TransportConf conf, InetSocketAddress target)
        throws IOException {
      return new Bench(Transports.create(name, conf), null, target);
    }

    Object runOnce(String test, int size, long warmup, long iters, int window, String tls)
        throws IOException, InterruptedException {
      return PerfClient.run(client, target, test, size, warmup, iters, window, tls);
    }

    @Override
    public void close() {
      client.close();
      if (server != null) {
        server.close();
      }
    }
  }
}
