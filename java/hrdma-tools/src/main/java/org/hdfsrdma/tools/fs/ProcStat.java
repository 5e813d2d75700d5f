package org.hdfsrdma.tools.fs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * CPU time of other processes from {@code /proc/<pid>/stat} (utime + stime, in clock
 * ticks; USER_HZ is 100 on every Linux ABI the JDK runs on).
 */
public final class ProcStat {
  private ProcStat() {}

  /** Linux's USER_HZ ({@code getconf CLK_TCK}): fixed at 100 for user space. */
  public static final int TICKS_PER_SECOND = 100;

  /**
   * utime + stime, in ticks, of one {@code /proc/<pid>/stat} line. The second field
   * (comm) is in parentheses and may hold spaces and parentheses itself, so fields
   * are counted from the last ')'.
   */
  public static long cpuTicks(String statLine) {
    int close = statLine.lastIndexOf(')');
    if (close < 0) {
      throw new IllegalArgumentException("not a /proc/<pid>/stat line (no ')'): " + abbreviate(statLine));
    }
    // after ") ": field 3 (state) is index 0, so utime (14) is index 11 and stime (15) index 12
    String[] f = statLine.substring(close + 1).trim().split("\\s+");
    if (f.length < 13) {
      throw new IllegalArgumentException("not a /proc/<pid>/stat line (" + f.length + " fields after comm): "
          + abbreviate(statLine));
    }
    try {
      return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("not a /proc/<pid>/stat line (utime/stime '" + f[11] + "' '" + f[12]
          + "'): " + abbreviate(statLine));
    }
  }

  /** CPU seconds (user + system) {@code pid} has used; -1 if it no longer exists. */
  public static double cpuSeconds(long pid) throws IOException {
    try {
      return cpuTicks(Files.readString(Path.of("/proc", Long.toString(pid), "stat"))) / (double) TICKS_PER_SECOND;
    } catch (NoSuchFileException e) {
      return -1;
    }
  }

  /** Summed CPU seconds of {@code pids} (the DataNodes); an IOException when one is gone. */
  public static double cpuSeconds(java.util.List<Long> pids) throws IOException {
    double sum = 0;
    for (long pid : pids) {
      double c = cpuSeconds(pid);
      if (c < 0) {
        throw new IOException("DataNode pid " + pid + " is gone");
      }
      sum += c;
    }
    return sum;
  }

  private static String abbreviate(String s) {
    return s.length() > 80 ? s.substring(0, 80) + "..." : s;
  }
}
