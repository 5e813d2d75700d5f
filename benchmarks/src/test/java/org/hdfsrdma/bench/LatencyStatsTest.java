package org.hdfsrdma.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class LatencyStatsTest {
  @Test
  void oneToThousand() {
    double[] xs = new double[1000];
    for (int i = 0; i < xs.length; i++) {
      xs[xs.length - 1 - i] = i + 1; // reversed: of() must sort
    }
    LatencyStats s = LatencyStats.of(xs);
    assertEquals(1000, s.count());
    assertEquals(1, s.min());
    assertEquals(1000, s.max());
    assertEquals(500, s.typical());
    assertEquals(500.5, s.avg(), 1e-9);
    assertEquals(Math.sqrt((1000.0 * 1000 - 1) / 12), s.stdev(), 1e-9);
    assertEquals(990, s.p99());
    assertEquals(999, s.p999());
    assertEquals(1000, xs[0]); // input untouched
  }

  @Test
  void smallAndSingle() {
    LatencyStats one = LatencyStats.of(new double[] {4.5});
    assertEquals(4.5, one.min());
    assertEquals(4.5, one.p999());
    assertEquals(0, one.stdev());
    LatencyStats s = LatencyStats.of(new double[] {3, 1, 2});
    assertEquals(2, s.typical());
    assertEquals(3, s.p99());
    assertEquals(1, LatencyStats.percentile(new double[] {1, 2}, 0));
    assertEquals(1, LatencyStats.percentile(new double[] {1, 2}, 50));
    assertThrows(IllegalArgumentException.class, () -> LatencyStats.of(new double[0]));
  }

  @Test
  void peakBandwidth() {
    // 1 MB completions 1 ms apart from t0 = 0, except one burst of two in 0.1 ms.
    long[] c = {1_000_000, 2_000_000, 3_000_000, 3_100_000, 4_100_000};
    assertEquals(2 * 1e6 / 1.1e6 * 1e3, PerfClient.peakMBps(0, c, 2, 1_000_000), 1e-6);
    assertEquals(1000.0, PerfClient.peakMBps(0, new long[] {1_000_000}, 32, 1_000_000), 1e-9);
    assertEquals(Double.NaN, PerfClient.peakMBps(0, new long[0], 4, 8));
    // 100 completions: the first 4 (the window) instantly, then 1 per ms; runs of 10.
    long[] d = new long[100];
    for (int i = 0; i < d.length; i++) {
      d[i] = i < 4 ? 1000 : (i - 3) * 1_000_000L;
    }
    assertEquals(1000.0, PerfClient.peakMBps(0, d, 4, 1_000_000), 0.5); // not 2.5e5 (the burst)
  }
}
