package org.hdfsrdma.nativelib;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The UCX settings libhrdma-preload sets as it loads, each unless already set
 * (native/src/preload/ucx_env.c says why): UCX's memory hooks off, none of the
 * error signals taken, no debug signal. Set in the environment a JVM starts
 * with ({@code bin/hrdma cluster} and the docker images do; hadoop-env.sh can,
 * as docs/install.md shows), the preload finds them and changes nothing.
 * Otherwise its {@code setenv} runs while the JVM's other threads run, and
 * glibc's {@code setenv} is not safe against a {@code getenv} in another
 * thread (the resolver's, {@code tzset}'s). Using this class loads no native
 * library.
 */
public final class UcxStartEnvironment {
  /** Names and values, in the preload's order. */
  public static final Map<String, String> VARIABLES;

  static {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("UCX_MEM_EVENTS", "no");
    m.put("UCX_ERROR_SIGNALS", "");
    m.put("UCX_DEBUG_SIGNO", "0");
    VARIABLES = Collections.unmodifiableMap(m);
  }

  private UcxStartEnvironment() {}

  /**
   * The names of {@link #VARIABLES} that were not in the environment this
   * process started with ({@code /proc/self/environ}, which a later
   * {@code setenv} does not change); all of them where that cannot be read.
   */
  public static List<String> missing() {
    try {
      return missingFrom(Files.readAllBytes(Path.of("/proc/self/environ")));
    } catch (IOException | SecurityException e) {
      return List.copyOf(VARIABLES.keySet());
    }
  }

  /** The names of {@link #VARIABLES} not set in {@code environ} (NUL-separated NAME=VALUE entries). */
  static List<String> missingFrom(byte[] environ) {
    List<String> missing = new ArrayList<>(VARIABLES.keySet());
    int from = 0;
    for (int i = 0; i <= environ.length; i++) {
      if (i == environ.length || environ[i] == 0) {
        String entry = new String(environ, from, i - from, StandardCharsets.ISO_8859_1);
        int eq = entry.indexOf('=');
        if (eq > 0) {
          missing.remove(entry.substring(0, eq));
        }
        from = i + 1;
      }
    }
    return missing;
  }
}
