package org.hdfsrdma.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.hdfsrdma.tools.PerfProtocol;
import org.hdfsrdma.tools.Serve;
import org.hdfsrdma.tools.Sizes;
import org.hdfsrdma.tools.UcxTls;
import org.hdfsrdma.tools.UsageException;

/**
 * The options of {@code hrdma perf}, parsed and checked. Every mistake is a
 * {@link UsageException} that names the option and the bad value.
 */
public final class PerfOptions {
  public static final List<String> TESTS = PerfProtocol.TESTS;
  public static final List<String> TRANSPORTS = Serve.TRANSPORTS;
  public static final int DEFAULT_PORT = Serve.DEFAULT_PORT;

  public enum Mode { LOOPBACK, SERVER, CLIENT }

  public Mode mode = Mode.LOOPBACK;
  public boolean compare;
  public List<String> tests = new ArrayList<>();
  public List<String> transports = new ArrayList<>();
  /** True when --transport was given (serve offers just those; else the configured order). */
  public boolean transportsGiven;
  public List<Integer> sizes = new ArrayList<>();
  /** Null: chosen per test and size by {@link #itersFor}. */
  public Long iters;
  public Long warmup;
  public int window = 32;
  /** Null: 1, or 3 in compare mode. */
  public Integer runs;
  public String host = "127.0.0.1";
  public int port = DEFAULT_PORT;
  public boolean json;
  /** Null: the transport's own UCX configuration. */
  public String ucxTls;
  public final Map<String, String> conf = new LinkedHashMap<>();
  public int iperfSeconds = 3;
  /** Loopback with both ends in this JVM instead of the server in a child JVM. */
  public boolean sameProcess;
  public boolean help;

  public static final String USAGE = String.join("\n",
      "usage: hrdma perf [compare] [TEST...] [options]",
      "  TEST               send_bw | write_bw | read_bw | send_lat (default send_bw; --test works too)",
      "  --transport T[,T]  tcp | ucx | stream (default tcp)",
      "  --size S[,S]       message size: 8, 64K, 1M ... (default 1M for bw, 8 for lat)",
      "  --iters N          measured iterations (default by size)",
      "  --warmup N         unmeasured iterations first (default iters/4)",
      "  --window N         outstanding operations in bw tests (default 32)",
      "  --runs N           repeat and report the median (default 1; 3 with compare)",
      "  --server [--port P]       serve peers (two-host mode), same as 'hrdma serve': one port,",
      "                            the transport negotiated per connection",
      "  --client HOST[:PORT]      run against 'hrdma serve' (or 'perf --server') on HOST:PORT",
      "  (neither: loopback over 127.0.0.1, the server in a child JVM, as ucx_perftest and iperf3 run)",
      "  --same-process     loopback with both ends in this JVM (the old mode)",
      "  --ucx-tls VALUE    UCX_TLS for ucx/stream: tcp, sm,tcp ... (adds MM_ERROR_HANDLING=y with sm)",
      "  --conf KEY=VALUE   transport setting, repeatable (hrdma.transport.credits=128 ...)",
      "  --json             one JSON object per result instead of tables",
      "  --compare          also run ucx_perftest / iperf3 on the same settings, interleaved",
      "  --iperf-seconds N  iperf3 duration in compare mode (default 3)");

  public static PerfOptions parse(String... args) {
    PerfOptions o = new PerfOptions();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      String inline = null;
      if (a.startsWith("--") && a.contains("=")) {
        inline = a.substring(a.indexOf('=') + 1);
        a = a.substring(0, a.indexOf('='));
      }
      switch (a) {
        case "-h", "--help", "help" -> o.help = true;
        case "compare", "--compare" -> o.compare = true;
        case "--json" -> o.json = true;
        case "--server" -> o.mode = o.setMode(Mode.SERVER);
        case "--same-process" -> o.sameProcess = true;
        case "--client" -> {
          o.mode = o.setMode(Mode.CLIENT);
          String v = inline != null ? inline : value(args, ++i, a);
          o.parseHostPort(v);
        }
        case "--port", "-p" -> o.port = Serve.port(inline != null ? inline : value(args, ++i, a));
        case "--test", "-t" -> {
          for (String t : (inline != null ? inline : value(args, ++i, a)).split(",")) {
            o.addTest(t);
          }
        }
        case "--transport" -> {
          for (String t : (inline != null ? inline : value(args, ++i, a)).split(",")) {
            String n = Serve.transport(t);
            if (!o.transports.contains(n)) {
              o.transports.add(n);
            }
            o.transportsGiven = true;
          }
        }
        case "--size", "-s" -> o.sizes.addAll(Sizes.parseList(inline != null ? inline
            : value(args, ++i, a)));
        case "--iters", "-n" -> o.iters = positive(a, inline != null ? inline : value(args, ++i, a));
        case "--warmup", "-w" -> o.warmup = nonNegative(a, inline != null ? inline
            : value(args, ++i, a));
        case "--window" -> o.window = (int) Math.min(Integer.MAX_VALUE,
            positive(a, inline != null ? inline : value(args, ++i, a)));
        case "--runs" -> o.runs = (int) Math.min(1000,
            positive(a, inline != null ? inline : value(args, ++i, a)));
        case "--iperf-seconds" -> o.iperfSeconds = (int) Math.min(3600,
            positive(a, inline != null ? inline : value(args, ++i, a)));
        case "--ucx-tls" -> {
          o.ucxTls = UcxTls.parse(inline != null ? inline : value(args, ++i, a));
        }
        case "--conf", "-D" -> {
          Serve.putConf(o.conf, inline != null ? inline : value(args, ++i, a));
        }
        default -> {
          if (a.startsWith("-")) {
            throw new UsageException("unknown option '" + a + "'");
          }
          o.addTest(a);
        }
      }
    }
    if (o.compare && o.mode != Mode.LOOPBACK) {
      throw new UsageException("compare runs on this host only: drop --server/--client");
    }
    if (o.sameProcess && o.mode != Mode.LOOPBACK) {
      throw new UsageException("--same-process is for loopback runs: drop --server/--client");
    }
    if (o.tests.isEmpty() && !o.compare) {
      o.tests.add("send_bw");
    }
    if (o.transports.isEmpty() && !o.compare) {
      o.transports.add("tcp");
    }
    return o;
  }

  private Mode setMode(Mode m) {
    if (mode != Mode.LOOPBACK && mode != m) {
      throw new UsageException("--server and --client exclude each other");
    }
    return m;
  }

  private void addTest(String t) {
    String n = t.trim().toLowerCase(Locale.ROOT);
    if (!TESTS.contains(n)) {
      throw new UsageException("unknown test '" + t + "' (known: " + String.join(", ", TESTS) + ")");
    }
    if (!tests.contains(n)) {
      tests.add(n);
    }
  }

  private void parseHostPort(String v) {
    String h = v.trim();
    int colon = h.lastIndexOf(':');
    // One colon: HOST:PORT. Several (IPv6): only [addr]:port carries a port.
    if (colon > 0 && (h.indexOf(':') == colon || h.startsWith("["))) {
      port = Serve.port(h.substring(colon + 1));
      h = h.substring(0, colon);
    }
    if (h.startsWith("[") && h.endsWith("]")) {
      h = h.substring(1, h.length() - 1);
    }
    if (h.isEmpty()) {
      throw new UsageException("--client wants HOST[:PORT], not '" + v + "'");
    }
    host = h;
  }

  private static String value(String[] args, int i, String opt) {
    if (i >= args.length || (args[i].startsWith("--") && args[i].length() > 2)) {
      throw new UsageException("option " + opt + " needs a value");
    }
    return args[i];
  }

  private static long positive(String opt, String v) {
    long n = number(opt, v);
    if (n <= 0) {
      throw new UsageException(opt + " must be positive, not '" + v + "'");
    }
    return n;
  }

  private static long nonNegative(String opt, String v) {
    long n = number(opt, v);
    if (n < 0) {
      throw new UsageException(opt + " must not be negative, not '" + v + "'");
    }
    return n;
  }

  private static long number(String opt, String v) {
    try {
      return Sizes.parse(v);
    } catch (UsageException e) {
      if (v.trim().equals("0")) {
        return 0;
      }
      throw new UsageException(opt + " wants a number (K/M suffixes allowed), not '" + v + "'");
    }
  }

  public int runsOrDefault() {
    return runs != null ? runs : (compare ? 3 : 1);
  }

  /** Sizes for a test: the given ones, else 1M for bandwidth and 8 for latency. */
  public List<Integer> sizesFor(String test) {
    if (!sizes.isEmpty()) {
      return sizes;
    }
    return List.of(test.endsWith("_lat") ? 8 : 1 << 20);
  }

  /**
   * Measured iterations: as given, else about 8 GiB per bandwidth run (between
   * 200 and 100000 messages; a few seconds here, comparable with the anchors'
   * runs, so JVM warm-up and TCP slow start do not dominate) and 10000 round
   * trips per latency run.
   */
  public long itersFor(String test, int size) {
    if (iters != null) {
      return iters;
    }
    if (test.endsWith("_lat")) {
      return size <= 65536 ? 10_000 : 1_000;
    }
    return Math.max(200, Math.min(100_000, (8L << 30) / size));
  }

  public long warmupFor(String test, int size) {
    if (warmup != null) {
      return warmup;
    }
    return Math.max(10, itersFor(test, size) / 4);
  }
}
