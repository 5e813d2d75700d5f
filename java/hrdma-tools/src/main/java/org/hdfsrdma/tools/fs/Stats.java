package org.hdfsrdma.tools.fs;

import java.util.Arrays;

/**
 * Median, min and max of a few samples (the runs of one measurement). The median of
 * an even count is the mean of the two middle samples. NaN samples (not measured) are
 * left out; none left gives NaN everywhere.
 */
public record Stats(int count, double median, double min, double max) {

  public static Stats of(double... samples) {
    double[] s = Arrays.stream(samples).filter(x -> !Double.isNaN(x)).sorted().toArray();
    int n = s.length;
    if (n == 0) {
      return new Stats(0, Double.NaN, Double.NaN, Double.NaN);
    }
    double med = n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    return new Stats(n, med, s[0], s[n - 1]);
  }

  /** ours / stock; NaN when either is missing or stock is 0. */
  public static double ratio(double ours, double stock) {
    if (Double.isNaN(ours) || Double.isNaN(stock) || stock == 0) {
      return Double.NaN;
    }
    return ours / stock;
  }

  /** CPU seconds per GiB moved. */
  public static double perGiB(double cpuSeconds, long bytes) {
    return bytes <= 0 ? Double.NaN : cpuSeconds / (bytes / (double) (1L << 30));
  }

  /** MB/s, MB = 10^6 bytes (as perftest and the rest of hrdma). */
  public static double mbPerSecond(long bytes, long nanos) {
    return nanos <= 0 ? Double.NaN : bytes / 1e6 / (nanos / 1e9);
  }
}
