package org.hdfsrdma.bench;

/** One latency measurement: one-way latency = round trip / 2, in microseconds. */
public record LatResult(String test, String transport, String ucxTls, int bytes,
    LatencyStats stats) {

  public Json toJson(int runs) {
    LatencyStats s = stats;
    return new Json().put("test", test).put("transport", transport).put("ucx_tls", ucxTls)
        .put("bytes", bytes).put("iterations", s.count()).put("runs", runs)
        .put("t_min_us", s.min()).put("t_max_us", s.max()).put("t_typical_us", s.typical())
        .put("t_avg_us", s.avg()).put("t_stdev_us", s.stdev()).put("p99_us", s.p99())
        .put("p99_9_us", s.p999());
  }
}
