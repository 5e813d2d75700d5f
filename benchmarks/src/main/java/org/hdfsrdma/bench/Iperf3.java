package org.hdfsrdma.bench;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Runs iperf3 (one TCP stream over 127.0.0.1) and reads the receiver's
 * bits_per_second from its JSON report. iperf3 -J exits 0 even when it could
 * not connect, so the report's "error" field is checked.
 */
final class Iperf3 {
  private Iperf3() {}

  static final String BINARY = "iperf3";
  private static final Pattern ERROR = Pattern.compile("\"error\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");
  private static final Pattern BPS =
      Pattern.compile("\"bits_per_second\"\\s*:\\s*([0-9.eE+-]+)");

  /** Receiver throughput in MB/s (10^6 bytes). */
  static double parseMBps(String json) throws IOException {
    Matcher e = ERROR.matcher(json);
    if (e.find()) {
      throw new IOException("iperf3: " + e.group(1));
    }
    int at = json.indexOf("\"sum_received\"");
    if (at < 0) {
      throw new IOException("iperf3 report has no sum_received:\n" + Procs.tail(json, 10));
    }
    Matcher m = BPS.matcher(json);
    if (!m.find(at)) {
      throw new IOException("iperf3 sum_received has no bits_per_second");
    }
    try {
      return Double.parseDouble(m.group(1)) / 8 / 1e6;
    } catch (NumberFormatException ex) {
      throw new IOException("bad iperf3 bits_per_second: " + m.group(1));
    }
  }

  static double run(int seconds) throws IOException, InterruptedException {
    int port = Procs.freePort();
    try (Procs.Child server = Procs.start("iperf3-server",
        List.of(BINARY, "-s", "-1", "-B", "127.0.0.1", "-p", Integer.toString(port)), Map.of())) {
      Procs.awaitListening(server, port, 10);
      try (Procs.Child client = Procs.start("iperf3-client",
          List.of(BINARY, "-c", "127.0.0.1", "-p", Integer.toString(port), "-J",
              "-t", Integer.toString(seconds)), Map.of())) {
        client.waitFor(seconds + 60L);
        return parseMBps(client.output());
      }
    }
  }
}
