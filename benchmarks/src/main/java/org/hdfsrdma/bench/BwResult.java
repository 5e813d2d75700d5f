package org.hdfsrdma.bench;

/**
 * One bandwidth measurement. MB = 10^6 bytes. {@code peakMBps} is the best
 * rate over any {@code window} consecutive completions; {@code avgMBps} is
 * all measured bytes over the whole measured time.
 */
public record BwResult(String test, String transport, String ucxTls, int bytes, long iterations,
    double peakMBps, double avgMBps, double msgRateMpps) {

  public Json toJson(int runs) {
    return new Json().put("test", test).put("transport", transport).put("ucx_tls", ucxTls)
        .put("bytes", bytes).put("iterations", iterations).put("runs", runs)
        .put("bw_peak_MBps", peakMBps).put("bw_avg_MBps", avgMBps)
        .put("msg_rate_Mpps", msgRateMpps).put("unit_MB", 1_000_000L);
  }
}
