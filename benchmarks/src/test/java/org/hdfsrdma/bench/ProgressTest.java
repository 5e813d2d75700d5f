package org.hdfsrdma.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class ProgressTest {
  @Test
  void barPhaseAndEta() throws Exception {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong(1_000_000_000L);
    try (Progress p = new Progress(new PrintStream(buf, true, StandardCharsets.UTF_8), 4, false, now::get)) {
      p.phase("dfsio ours run 1/2");
      assertEquals("[--------------------] 0/4 dfsio ours run 1/2 | 0:00 elapsed, ETA --:--", p.line());
      now.addAndGet(90_000_000_000L); // a step of 90 s
      p.stepDone();
      p.phase("dfsio stock run 1/2");
      // three steps of 90 s left
      assertEquals("[#####---------------] 1/4 dfsio stock run 1/2 | 1:30 elapsed, ETA 4:30", p.line());
      // 20 s into the next step (under the 30 s after which a log line is due): they count off the ETA
      now.addAndGet(20_000_000_000L);
      assertEquals("[#####---------------] 1/4 dfsio stock run 1/2 | 1:50 elapsed, ETA 4:10", p.line());
    }
    String out = buf.toString(StandardCharsets.UTF_8);
    // not a terminal: one line per change, no carriage returns
    assertEquals(3, out.lines().count(), out);
    assertTrue(!out.contains("\r"), out);
  }

  @Test
  void terminalRedrawsInPlace() {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    try (Progress p = new Progress(new PrintStream(buf, true, StandardCharsets.UTF_8), 2, true)) {
      p.phase("a long phase name");
      p.phase("short");
    }
    String out = buf.toString(StandardCharsets.UTF_8);
    assertTrue(out.startsWith("\r[--------------------] 0/2 a long phase name"), out);
    assertTrue(out.contains("\r[--------------------] 0/2 short"), out);
    assertTrue(out.endsWith("\n"), out);
  }

  @Test
  void clock() {
    assertEquals("0:05", Progress.clock(5));
    assertEquals("2:03", Progress.clock(123));
    assertEquals("1:01:01", Progress.clock(3661));
  }
}
