package org.hdfsrdma.bench.mr;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One section of TestDFSIO's results log (its {@code -resFile}, which it appends to):
 *
 * <pre>
 * ----- TestDFSIO ----- : write
 *             Date &amp; time: ...
 *         Number of files: 4
 *  Total MBytes processed: 64
 *       Throughput mb/sec: 35.87
 *  Average IO rate mb/sec: 36.02
 *   IO rate std deviation: 2.31
 *      Test exec time sec: 9.43
 * </pre>
 *
 * TestDFSIO's "MB" is 2^20 bytes; "Throughput" is total bytes over the sum of the map
 * tasks' I/O times (a per-file rate), not over the job's wall time. Immutable.
 *
 * @param op             write, read, ...
 * @param files          number of files
 * @param totalMiB       total MiB processed
 * @param throughputMiBs "Throughput mb/sec"
 * @param avgIoRateMiBs  "Average IO rate mb/sec"
 * @param ioRateStdDev   "IO rate std deviation"
 * @param execSeconds    "Test exec time sec" (the job's wall time as TestDFSIO measured it)
 */
public record DfsioResult(String op, int files, double totalMiB, double throughputMiBs, double avgIoRateMiBs,
    double ioRateStdDev, double execSeconds) {

  static final String HEADER = "----- TestDFSIO ----- :";

  /** The last section of {@code log} (TestDFSIO appends one per run). */
  public static DfsioResult parseLast(String log) {
    int at = log.lastIndexOf(HEADER);
    if (at < 0) {
      throw new IllegalArgumentException("not a TestDFSIO results log (no '" + HEADER + "' line)");
    }
    Map<String, String> f = new LinkedHashMap<>();
    String[] lines = log.substring(at).split("\\R");
    String op = lines[0].substring(HEADER.length()).trim();
    for (int i = 1; i < lines.length; i++) {
      String l = lines[i];
      int colon = l.indexOf(':');
      if (l.isBlank() || l.startsWith(HEADER)) {
        break;
      }
      if (colon > 0) {
        f.put(l.substring(0, colon).trim(), l.substring(colon + 1).trim());
      }
    }
    return new DfsioResult(op, (int) number(f, "Number of files"), number(f, "Total MBytes processed"),
        number(f, "Throughput mb/sec"), number(f, "Average IO rate mb/sec"), number(f, "IO rate std deviation"),
        number(f, "Test exec time sec"));
  }

  private static double number(Map<String, String> f, String key) {
    String v = f.get(key);
    if (v == null) {
      throw new IllegalArgumentException("TestDFSIO results log without '" + key + "'");
    }
    try {
      // TestDFSIO formats with the default locale's DecimalFormat ("#.##"), grouping off
      return Double.parseDouble(v.replace(',', '.'));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("TestDFSIO results log: '" + key + "' is not a number: '" + v + "'");
    }
  }

  /** Bytes processed (TestDFSIO's MB is 2^20 bytes). */
  public long bytes() {
    return Math.round(totalMiB * (1 << 20));
  }

  /** "Throughput mb/sec" in MB/s of 10^6 bytes, as the rest of hrdma reports. */
  public double throughputMBs() {
    return throughputMiBs * (1 << 20) / 1e6;
  }
}
