package org.hdfsrdma.bench;

import java.util.Arrays;

/**
 * Summary of latency samples (microseconds), the columns of perftest's latency
 * table. Percentiles use the nearest-rank method: the smallest sample with at
 * least p% of all samples at or below it. t_typical is the median (the lower
 * middle sample for an even count). Immutable.
 */
public record LatencyStats(int count, double min, double max, double typical, double avg,
    double stdev, double p99, double p999) {

  /** Summarises {@code samples} (not modified). */
  public static LatencyStats of(double[] samples) {
    if (samples.length == 0) {
      throw new IllegalArgumentException("no latency samples");
    }
    double[] s = samples.clone();
    Arrays.sort(s);
    int n = s.length;
    double sum = 0;
    for (double v : s) {
      sum += v;
    }
    double avg = sum / n;
    double sq = 0;
    for (double v : s) {
      sq += (v - avg) * (v - avg);
    }
    // Population standard deviation, as the samples are the whole measured run.
    double stdev = Math.sqrt(sq / n);
    return new LatencyStats(n, s[0], s[n - 1], s[(n - 1) / 2], avg, stdev,
        percentile(s, 99.0), percentile(s, 99.9));
  }

  /** Nearest-rank percentile of sorted samples. */
  static double percentile(double[] sorted, double p) {
    if (p <= 0) {
      return sorted[0];
    }
    // The epsilon keeps 99.9 * 1000 / 100 (not exact in binary) at rank 999.
    int rank = (int) Math.ceil(p * sorted.length / 100.0 - 1e-9);
    return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
  }
}
