package org.hdfsrdma.tools;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Byte sizes as people type them: "8", "64K", "1M", "2G" (binary multiples,
 * as perftest and ucx_perftest use), optionally with a trailing "B" or "iB".
 */
public final class Sizes {
  private Sizes() {}

  public static long parse(String text) {
    if (text == null || text.isBlank()) {
      throw new UsageException("size is empty");
    }
    String s = text.trim().toUpperCase(Locale.ROOT);
    if (s.endsWith("IB")) {
      s = s.substring(0, s.length() - 2);
    } else if (s.endsWith("B")) {
      s = s.substring(0, s.length() - 1);
    }
    long mult = 1;
    if (!s.isEmpty()) {
      switch (s.charAt(s.length() - 1)) {
        case 'K' -> mult = 1L << 10;
        case 'M' -> mult = 1L << 20;
        case 'G' -> mult = 1L << 30;
        default -> mult = 1;
      }
      if (mult != 1) {
        s = s.substring(0, s.length() - 1);
      }
    }
    long n;
    try {
      n = Long.parseLong(s);
    } catch (NumberFormatException e) {
      throw new UsageException("bad size '" + text + "' (use a number with an optional K, M or G,"
          + " e.g. 8, 64K, 1M)");
    }
    if (n <= 0) {
      throw new UsageException("size must be positive, not '" + text + "'");
    }
    if (n > Long.MAX_VALUE / mult) {
      throw new UsageException("size '" + text + "' is too large");
    }
    return n * mult;
  }

  /** A size that must fit a message or buffer (an int). */
  public static int parseInt(String text) {
    long n = parse(text);
    if (n > Integer.MAX_VALUE) {
      throw new UsageException("size '" + text + "' is larger than 2G - 1");
    }
    return (int) n;
  }

  /** "8,64K,1M" into its sizes, in the given order. */
  public static List<Integer> parseList(String text) {
    List<Integer> out = new ArrayList<>();
    for (String part : text.split(",")) {
      out.add(parseInt(part));
    }
    return out;
  }

  /** The shortest exact form: 1048576 -> "1M", 65536 -> "64K", 1000 -> "1000". */
  public static String format(long n) {
    if (n >= 1L << 30 && n % (1L << 30) == 0) {
      return (n >> 30) + "G";
    }
    if (n >= 1L << 20 && n % (1L << 20) == 0) {
      return (n >> 20) + "M";
    }
    if (n >= 1L << 10 && n % (1L << 10) == 0) {
      return (n >> 10) + "K";
    }
    return Long.toString(n);
  }
}
