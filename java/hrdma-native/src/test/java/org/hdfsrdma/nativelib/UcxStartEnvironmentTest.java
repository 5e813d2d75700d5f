package org.hdfsrdma.nativelib;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which of the preload's UCX settings a start environment lacks. */
class UcxStartEnvironmentTest {
  private static byte[] environ(String... entries) {
    return (String.join("\0", entries) + "\0").getBytes(StandardCharsets.ISO_8859_1);
  }

  @Test
  void namesAreMatchedWholeAndAnEmptyValueCountsAsSet() {
    assertEquals(List.of("UCX_MEM_EVENTS", "UCX_ERROR_SIGNALS", "UCX_DEBUG_SIGNO"),
        UcxStartEnvironment.missingFrom(environ("PATH=/bin", "UCX_MEM_EVENTSX=no", "XUCX_DEBUG_SIGNO=0")));
    assertEquals(List.of("UCX_DEBUG_SIGNO"),
        UcxStartEnvironment.missingFrom(environ("UCX_ERROR_SIGNALS=", "UCX_MEM_EVENTS=yes", "UCX_DEBUG_SIGNO")));
    assertEquals(List.of(), UcxStartEnvironment.missingFrom(
        "UCX_DEBUG_SIGNO=0\0UCX_MEM_EVENTS=no\0UCX_ERROR_SIGNALS=".getBytes(StandardCharsets.ISO_8859_1)));
    assertEquals(List.of("UCX_MEM_EVENTS", "UCX_ERROR_SIGNALS", "UCX_DEBUG_SIGNO"),
        UcxStartEnvironment.missingFrom(new byte[0]));
  }

  /** The values are the preload's (native/src/preload/ucx_env.c; test_preload checks its side). */
  @Test
  void theVariablesAreThePreloads() {
    assertEquals("{UCX_MEM_EVENTS=no, UCX_ERROR_SIGNALS=, UCX_DEBUG_SIGNO=0}",
        UcxStartEnvironment.VARIABLES.toString());
  }
}
