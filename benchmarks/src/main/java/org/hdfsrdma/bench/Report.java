package org.hdfsrdma.bench;

import java.util.Locale;

/**
 * perftest's tables. Each value starts under its column's header label, as in
 * perftest, so tools and eyes that read perftest output read ours.
 */
public final class Report {
  private Report() {}

  public static final String BW_HEADER =
      " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
  public static final String LAT_HEADER =
      " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
          + "    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]";
  public static final String RULE =
      "---------------------------------------------------------------------------------------";

  private static final int[] BW_COLS = columns(BW_HEADER,
      "#bytes", "#iterations", "BW peak", "BW average", "MsgRate");
  private static final int[] LAT_COLS = columns(LAT_HEADER, "#bytes", "#iterations", "t_min",
      "t_max", "t_typical", "t_avg", "t_stdev", "99% percentile", "99.9% percentile");

  /** The line above a table: what ran, and the unit. */
  public static String title(String test, String transport, String ucxTls, String extra) {
    StringBuilder sb = new StringBuilder("# ").append(test).append("  transport=").append(transport);
    if (ucxTls != null) {
      sb.append("  UCX_TLS=").append(ucxTls);
    }
    if (extra != null && !extra.isEmpty()) {
      sb.append("  ").append(extra);
    }
    return test.endsWith("_lat") ? sb.toString() : sb.append("  (MB = 10^6 bytes)").toString();
  }

  public static String bwRow(BwResult r) {
    return place(BW_COLS, Long.toString(r.bytes()), Long.toString(r.iterations()),
        fmt("%.2f", r.peakMBps()), fmt("%.2f", r.avgMBps()), fmt("%.6f", r.msgRateMpps()));
  }

  public static String latRow(LatResult r) {
    LatencyStats s = r.stats();
    return place(LAT_COLS, Long.toString(r.bytes()), Long.toString(s.count()),
        fmt("%.2f", s.min()), fmt("%.2f", s.max()), fmt("%.2f", s.typical()),
        fmt("%.2f", s.avg()), fmt("%.2f", s.stdev()), fmt("%.2f", s.p99()),
        fmt("%.2f", s.p999()));
  }

  static String fmt(String f, Object... v) {
    return String.format(Locale.ROOT, f, v);
  }

  /** Start offsets of the labels in a header. */
  static int[] columns(String header, String... labels) {
    int[] cols = new int[labels.length];
    int from = 0;
    for (int i = 0; i < labels.length; i++) {
      int at = header.indexOf(labels[i], from);
      if (at < 0) {
        throw new IllegalStateException("label " + labels[i] + " not in header");
      }
      cols[i] = at;
      from = at + labels[i].length();
    }
    return cols;
  }

  /** Puts each value at its column; a value too wide pushes the rest right by one space. */
  static String place(int[] cols, String... values) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < values.length; i++) {
      if (sb.length() < cols[i]) {
        sb.append(" ".repeat(cols[i] - sb.length()));
      } else {
        sb.append(' ');
      }
      sb.append(values[i]);
    }
    return sb.toString();
  }
}
