package org.hdfsrdma.tools;

import java.util.ArrayList;
import java.util.List;

/** The UCX configuration for a UCX_TLS value, as doctor, serve and perf take it from --ucx-tls. */
public final class UcxTls {
  private UcxTls() {}

  /**
   * The UCX configuration string for a given UCX_TLS (null: leave as
   * configured). Shared memory with peer-failure detection needs
   * MM_ERROR_HANDLING=y, else UCX silently skips it.
   */
  public static String ucxConfig(String existing, String tls) {
    if (tls == null) {
      return existing;
    }
    List<String> parts = new ArrayList<>();
    if (existing != null) {
      for (String p : existing.split(";")) {
        String k = p.contains("=") ? p.substring(0, p.indexOf('=')).trim() : p.trim();
        if (!p.isBlank() && !k.equals("TLS") && !k.equals("MM_ERROR_HANDLING")) {
          parts.add(p.trim());
        }
      }
    }
    parts.add("TLS=" + tls);
    if (usesSharedMemory(tls)) {
      parts.add("MM_ERROR_HANDLING=y");
    }
    return String.join(";", parts);
  }

  public static boolean usesSharedMemory(String tls) {
    for (String t : tls.split(",")) {
      String n = t.trim().replace("^", "");
      if (n.equals("sm") || n.equals("shm") || n.equals("posix") || n.equals("sysv")
          || n.equals("all")) {
        return true;
      }
    }
    return false;
  }

  /** A --ucx-tls value, checked. */
  public static String parse(String value) {
    String v = value.trim();
    if (v.isEmpty() || !v.matches("[A-Za-z0-9_,:^-]+")) {
      throw new UsageException("bad --ucx-tls value '" + v + "' (e.g. tcp or sm,tcp)");
    }
    return v;
  }
}
