package org.hdfsrdma.bench;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Runs ucx_perftest (UCX 1.13) as server and client processes on 127.0.0.1
 * and reads its "Final:" line:
 *
 * <pre>
 * Final:  iterations  p50  avg  overall  bw-avg  bw-overall  rate-avg  rate-overall
 * </pre>
 *
 * The three time columns are microseconds (one-way latency for *_lat tests,
 * per-message overhead for *_bw tests); bandwidth is MiB/s although the
 * header says "MB/s".
 */
final class UcxPerftest {
  private UcxPerftest() {}

  static final String BINARY = "ucx_perftest";

  /** The figures of a Final line; bandwidth already converted to MB/s (10^6). */
  record Final(long iterations, double p50Us, double avgUs, double overallUs, double bwAvgMBps,
      double bwOverallMBps, double msgRateAvg, double msgRateOverall) {}

  static double mibToMB(double mib) {
    return mib * 1048576.0 / 1e6;
  }

  static Final parse(String output) throws IOException {
    String last = null;
    for (String line : output.split("\n")) {
      if (line.startsWith("Final:")) {
        last = line;
      }
    }
    if (last == null) {
      List<String> errors = new ArrayList<>();
      for (String line : output.split("\n")) {
        if (line.contains("ERROR") || line.contains("rror")) {
          errors.add(line.trim());
        }
      }
      throw new IOException("no Final line in ucx_perftest output"
          + (errors.isEmpty() ? ":\n" + Procs.tail(output, 10) : ": " + String.join("; ", errors)));
    }
    String[] w = last.substring("Final:".length()).trim().split("\\s+");
    if (w.length < 8) {
      throw new IOException("short ucx_perftest Final line: " + last);
    }
    try {
      return new Final(Long.parseLong(w[0]), Double.parseDouble(w[1]), Double.parseDouble(w[2]),
          Double.parseDouble(w[3]), mibToMB(Double.parseDouble(w[4])),
          mibToMB(Double.parseDouble(w[5])), Double.parseDouble(w[6]), Double.parseDouble(w[7]));
    } catch (NumberFormatException e) {
      throw new IOException("bad ucx_perftest Final line: " + last);
    }
  }

  /** UCX_TLS as given; with shared memory the same MM_ERROR_HANDLING our transport sets. */
  static Map<String, String> env(String tls) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("UCX_TLS", tls);
    if (org.hdfsrdma.tools.UcxTls.usesSharedMemory(tls)) {
      env.put("UCX_MM_ERROR_HANDLING", "y");
    }
    env.put("UCX_WARN_UNUSED_ENV_VARS", "n");
    return env;
  }

  /**
   * Runs one ucx_perftest test (fresh port, both processes killed afterwards).
   * The free port is picked before ucx_perftest binds it, so another process
   * can take it in between: a bind failure is retried on a new port.
   */
  static Final run(String test, String tls, int size, long iters, long warmup)
      throws IOException, InterruptedException {
    for (int attempt = 1; ; attempt++) {
      try {
        return runOnce(test, tls, size, iters, warmup);
      } catch (IOException e) {
        if (attempt >= 3 || e.getMessage() == null
            || !e.getMessage().contains("Address already in use")) {
          throw e;
        }
      }
    }
  }

  private static Final runOnce(String test, String tls, int size, long iters, long warmup)
      throws IOException, InterruptedException {
    int port = Procs.freePort();
    Map<String, String> env = env(tls);
    try (Procs.Child server = Procs.start("ucx_perftest-server",
        List.of(BINARY, "-p", Integer.toString(port)), env)) {
      Procs.awaitListening(server, port, 10);
      try (Procs.Child client = Procs.start("ucx_perftest-client",
          // -e: endpoints with peer error handling, as ours always have (PEER mode)
          List.of(BINARY, "127.0.0.1", "-e", "-p", Integer.toString(port), "-t", test,
              "-s", Integer.toString(size), "-n", Long.toString(iters),
              "-w", Long.toString(warmup)), env)) {
        int rc = client.waitFor(600);
        String out = client.output();
        if (rc != 0) {
          throw new IOException("ucx_perftest -t " + test + " exited with " + rc + ":\n"
              + Procs.tail(out, 10));
        }
        server.waitFor(10);
        return parse(out);
      }
    }
  }
}
