package org.hdfsrdma.bench;

import java.util.Locale;

/**
 * Builds one flat JSON object, keys in insertion order. Enough for result
 * lines; no external library. Not thread-safe.
 */
public final class Json {
  private final StringBuilder sb = new StringBuilder("{");
  private boolean first = true;

  private Json key(String k) {
    if (!first) {
      sb.append(", ");
    }
    first = false;
    quote(sb, k);
    sb.append(": ");
    return this;
  }

  public Json put(String k, String v) {
    key(k);
    if (v == null) {
      sb.append("null");
    } else {
      quote(sb, v);
    }
    return this;
  }

  public Json put(String k, long v) {
    key(k).sb.append(v);
    return this;
  }

  public Json put(String k, boolean v) {
    key(k).sb.append(v);
    return this;
  }

  /** Non-finite values become null: JSON has no NaN or Infinity. */
  public Json put(String k, double v) {
    key(k);
    if (Double.isNaN(v) || Double.isInfinite(v)) {
      sb.append("null");
    } else {
      // Seven significant digits, plain notation (no exponent), "0" for zero.
      sb.append(new java.math.BigDecimal(v).round(new java.math.MathContext(7))
          .stripTrailingZeros().toPlainString());
    }
    return this;
  }

  @Override
  public String toString() {
    return sb + "}";
  }

  static void quote(StringBuilder out, String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) {
            out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }
}
