package org.hdfsrdma.bench.fs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** {@code hrdma bench fs} rejects bad options before it starts a cluster. */
class FsBenchTest {
  @Test
  void benchRunReportsUsageErrorsWithExit2() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    assertEquals(2, FsBench.run(new String[] {"--runs", "-1"}, new PrintStream(out),
        new PrintStream(err, true, StandardCharsets.UTF_8)));
    assertTrue(err.toString(StandardCharsets.UTF_8).startsWith("hrdma bench fs: "), err.toString(StandardCharsets.UTF_8));
  }
}
