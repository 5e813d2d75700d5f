package org.hdfsrdma.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import org.hdfsrdma.tools.Sizes;

/**
 * {@code hrdma perf compare}: each of our tests beside its anchor, measured in
 * the same invocation and interleaved (ours, anchor, ours, anchor ...) because
 * this machine's speed drifts several-fold within minutes. Anchors:
 * ucx_perftest with the same UCX_TLS for ucx and stream, iperf3 for tcp.
 */
final class Compare {
  /** A target: ratio at least {@code minRatio} (bandwidth) or at most {@code maxPlusUs} above. */
  record Target(double minRatio, double maxPlusUs) {
    static Target ratio(double r) {
      return new Target(r, Double.NaN);
    }

    static Target plus(double us) {
      return new Target(Double.NaN, us);
    }
  }

  /** One comparison: our test and the anchor tests it is measured against. */
  record Case(String test, String transport, String tls, int size, List<String> anchors,
      Target target) {
    boolean latency() {
      return test.endsWith("_lat");
    }

    String label() {
      return test + " " + transport + (tls != null && !transport.equals("tcp") ? "[" + tls + "]"
          : "") + " "
          + Sizes.format(size) + "B";
    }
  }

  /** A finished case: medians; anchor is the best anchor's median. NaN where it failed. */
  record Row(Case c, double ours, String anchor, double anchorValue, String error) {
    double ratio() {
      return ours / anchorValue;
    }

    boolean hasBoth() {
      return !Double.isNaN(ours) && !Double.isNaN(anchorValue);
    }
  }

  private final PerfOptions o;
  private final PrintStream out;
  private final PrintStream err;

  Compare(PerfOptions o, PrintStream out, PrintStream err) {
    this.o = o;
    this.out = out;
    this.err = err;
  }

  /** The cases to run: the full matrix, narrowed by --test, --transport, --size, --ucx-tls. */
  static List<Case> matrix(PerfOptions o) {
    List<String> tests = o.tests.isEmpty() ? PerfOptions.TESTS : o.tests;
    List<String> transports = o.transports.isEmpty() ? PerfOptions.TRANSPORTS : o.transports;
    List<Case> cases = new ArrayList<>();
    for (String tr : transports) {
      List<String> tlss = switch (tr) {
        case "tcp" -> java.util.Collections.singletonList((String) null);
        case "ucx" -> o.ucxTls != null ? List.of(o.ucxTls) : List.of("tcp", "sm,tcp");
        default -> o.ucxTls != null ? List.of(o.ucxTls) : List.of("tcp");
      };
      for (String tls : tlss) {
        for (String test : tests) {
          for (int size : o.sizesFor(test)) {
            Case c = caseFor(test, tr, tls, size);
            if (c != null) {
              cases.add(c);
            }
          }
        }
      }
    }
    return cases;
  }

  /** The anchor and target of one test on one transport; null when there is no anchor. */
  static Case caseFor(String test, String tr, String tls, int size) {
    boolean mib = size == 1 << 20;
    boolean eight = size == 8;
    return switch (tr + ":" + test) {
      case "tcp:send_bw" -> new Case(test, tr, null, size, List.of("iperf3"),
          mib ? Target.ratio(0.9) : null);
      // The Netty transport has no UCX anchor; UCX's own tcp latency is shown for reference.
      case "tcp:send_lat" -> new Case(test, tr, "tcp", size, List.of("ucp_am_lat"), null);
      case "ucx:send_bw" -> new Case(test, tr, tls, size, List.of("ucp_am_bw", "tag_bw"),
          mib ? Target.ratio(0.9) : null);
      case "ucx:write_bw" -> new Case(test, tr, tls, size, List.of("ucp_put_bw"), null);
      case "ucx:read_bw" -> new Case(test, tr, tls, size, List.of("ucp_get"), null);
      case "ucx:send_lat" -> new Case(test, tr, tls, size, List.of("ucp_am_lat"),
          eight ? Target.plus(2.0) : null);
      case "stream:send_bw" -> new Case(test, tr, tls, size, List.of("stream_bw"),
          mib ? Target.ratio(0.9) : null);
      case "stream:send_lat" -> new Case(test, tr, tls, size, List.of("stream_lat"), null);
      default -> null;
    };
  }

  int run() throws InterruptedException {
    List<Case> cases = matrix(o);
    if (cases.isEmpty()) {
      err.println("hrdma perf compare: no test here has an anchor (write_bw and read_bw have"
          + " one for ucx only)");
      return 2;
    }
    int runs = o.runsOrDefault();
    List<Row> rows = new ArrayList<>();
    for (Case c : cases) {
      Row r = runCase(c, runs);
      rows.add(r);
      if (o.json) {
        out.println(json(o, r, runs));
        out.flush();
      }
    }
    boolean failed = false;
    for (Row r : rows) {
      failed |= r.error() != null;
    }
    if (!o.json) {
      printTables(rows, runs);
    }
    for (String line : targetLines(rows)) {
      (o.json ? err : out).println(line);
    }
    return failed ? 1 : 0;
  }

  private Row runCase(Case c, int runs) throws InterruptedException {
    err.println("# " + c.label() + ": " + runs + " interleaved runs against "
        + String.join(", ", c.anchors()));
    long iters = o.itersFor(c.test(), c.size());
    long warmup = o.warmupFor(c.test(), c.size());
    List<Double> ours = new ArrayList<>();
    List<List<Double>> anchors = new ArrayList<>();
    c.anchors().forEach(a -> anchors.add(new ArrayList<>()));
    List<String> errors = new ArrayList<>();
    Perf.Bench bench = null;
    String benchError = null;
    try {
      bench = Perf.Bench.loopback(o, c.transport(),
          c.transport().equals("tcp") ? null : c.tls());
      err.println("#   ours: " + bench.describe());
    } catch (IOException | RuntimeException e) {
      benchError = "ours: " + e.getMessage();
      errors.add(benchError);
    }
    try {
      for (int r = 0; r < runs; r++) {
        if (bench != null) {
          try {
            Object res = bench.runOnce(c.test(), c.size(), warmup, iters, o.window,
                Perf.tlsLabel(c.transport(), c.tls()));
            ours.add(Perf.key(res));
            err.println("#   run " + (r + 1) + " ours: " + Perf.summary(res));
          } catch (IOException | RuntimeException e) {
            errors.add("ours: " + e.getMessage());
            err.println("#   run " + (r + 1) + " ours failed: " + e.getMessage());
          }
        }
        for (int a = 0; a < c.anchors().size(); a++) {
          String name = c.anchors().get(a);
          try {
            double v = anchor(c, name, iters, warmup);
            anchors.get(a).add(v);
            err.println("#   run " + (r + 1) + " " + name + ": "
                + Report.fmt(c.latency() ? "%.2f us" : "%.2f MB/s", v));
          } catch (IOException e) {
            errors.add(name + ": " + e.getMessage());
            err.println("#   run " + (r + 1) + " " + name + " failed: " + e.getMessage());
          }
        }
      }
    } finally {
      if (bench != null) {
        bench.close();
      }
    }
    // Best anchor: highest bandwidth, lowest latency.
    String best = null;
    double bestValue = Double.NaN;
    for (int a = 0; a < c.anchors().size(); a++) {
      double m = median(anchors.get(a));
      if (!Double.isNaN(m) && (Double.isNaN(bestValue)
          || (c.latency() ? m < bestValue : m > bestValue))) {
        best = c.anchors().get(a);
        bestValue = m;
      }
    }
    return new Row(c, median(ours), best != null ? best : String.join("|", c.anchors()),
        bestValue, errors.isEmpty() ? null : errors.get(0));
  }

  private double anchor(Case c, String name, long iters, long warmup)
      throws IOException, InterruptedException {
    if (name.equals("iperf3")) {
      return Iperf3.run(o.iperfSeconds);
    }
    UcxPerftest.Final f = UcxPerftest.run(name, c.tls(), c.size(), iters, warmup);
    return c.latency() ? f.p50Us() : f.bwOverallMBps();
  }

  static double median(List<Double> xs) {
    if (xs.isEmpty()) {
      return Double.NaN;
    }
    List<Double> s = new ArrayList<>(xs);
    s.sort(null);
    int n = s.size();
    return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
  }

  /** How ours ran, for the header: two processes by default, one with --same-process. */
  static String modeLine(PerfOptions o) {
    return o.sameProcess ? "ours with both ends in one JVM (--same-process) over 127.0.0.1"
        : "ours as two processes (server in a child JVM) on 127.0.0.1";
  }

  static final String BW_HEADER =
      " test       transport  UCX_TLS   size   ours[MB/sec]   anchor        anchor[MB/sec]   ratio";
  static final String LAT_HEADER =
      " test       transport  UCX_TLS   size   ours[usec]     anchor        anchor[usec]     diff[usec]";

  private void printTables(List<Row> rows, int runs) {
    out.println("# hrdma perf compare: medians of " + runs + " interleaved runs; " + modeLine(o)
        + ", anchors as two processes on 127.0.0.1");
    out.println("# MB = 10^6 bytes (ucx_perftest prints MiB/s as \"MB/s\": converted);"
        + " latency is one-way (round trip / 2), t_typical vs ucx_perftest's 50th percentile");
    boolean anyBw = rows.stream().anyMatch(r -> !r.c().latency());
    boolean anyLat = rows.stream().anyMatch(r -> r.c().latency());
    if (anyBw) {
      out.println(Report.RULE);
      out.println(BW_HEADER);
      rows.stream().filter(r -> !r.c().latency()).forEach(r -> out.println(row(BW_HEADER, r)));
    }
    if (anyLat) {
      out.println(Report.RULE);
      out.println(LAT_HEADER);
      rows.stream().filter(r -> r.c().latency()).forEach(r -> out.println(row(LAT_HEADER, r)));
    }
    out.println(Report.RULE);
    for (Row r : rows) {
      if (r.error() != null) {
        out.println("# error " + r.c().label() + ": " + r.error());
      }
    }
  }

  static String row(String header, Row r) {
    int[] cols = Report.columns(header, "test", "transport", "UCX_TLS", "size", "ours",
        "anchor", "anchor[", header.contains("ratio") ? "ratio" : "diff");
    String last = !r.hasBoth() ? "-" : r.c().latency()
        ? Report.fmt("%+.2f", r.ours() - r.anchorValue()) : Report.fmt("%.3f", r.ratio());
    return Report.place(cols, r.c().test(), r.c().transport(),
        r.c().tls() != null ? r.c().tls() : "-", Sizes.format(r.c().size()), num(r.ours()),
        r.anchor(), num(r.anchorValue()), last);
  }

  private static String num(double v) {
    return Double.isNaN(v) ? "-" : Report.fmt("%.2f", v);
  }

  /** PASS / MISS for every case that has a target. */
  static List<String> targetLines(List<Row> rows) {
    List<String> lines = new ArrayList<>();
    for (Row r : rows) {
      Target t = r.c().target();
      if (t == null) {
        continue;
      }
      String what;
      boolean pass;
      if (!r.hasBoth()) {
        pass = false;
        what = "not measured" + (r.error() != null ? ": " + r.error() : "");
      } else if (!Double.isNaN(t.minRatio())) {
        pass = r.ratio() >= t.minRatio();
        what = Report.fmt("%.2f MB/s = %.1f%% of ", r.ours(), 100 * r.ratio()) + r.anchor()
            + Report.fmt(" %.2f MB/s (target >= %.0f%%)", r.anchorValue(), 100 * t.minRatio());
      } else {
        double diff = r.ours() - r.anchorValue();
        pass = diff <= t.maxPlusUs();
        what = Report.fmt("%.2f us = %s %+.2f us (target <= +%.1f us)", r.ours(),
            r.anchor() + Report.fmt(" %.2f us", r.anchorValue()), diff, t.maxPlusUs());
      }
      lines.add((pass ? "PASS " : "MISS ") + r.c().label() + ": " + what);
    }
    return lines;
  }

  static String json(PerfOptions o, Row r, int runs) {
    Json j = new Json().put("kind", "compare").put("test", r.c().test())
        .put("transport", r.c().transport()).put("ucx_tls", r.c().tls())
        .put("bytes", r.c().size()).put("runs", runs).put("unit", r.c().latency() ? "usec"
            : "MB/s (10^6)").put("ours", r.ours()).put("anchor", r.anchor())
        .put("anchor_value", r.anchorValue())
        .put("ours_mode", o.sameProcess ? "same-process" : "two-process");
    if (r.c().latency()) {
      j.put("diff", r.ours() - r.anchorValue());
    } else {
      j.put("ratio", r.ratio());
    }
    if (r.c().target() != null) {
      j.put("target_met", targetLines(List.of(r)).get(0).startsWith("PASS"));
    }
    return j.put("error", r.error()).toString();
  }
}
