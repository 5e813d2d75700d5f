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
    try (Progress p = new Progress(new PrintStream(buf, true, StandardCharsets.UTF_8), 4, false)) {
      p.phase("dfsio ours run 1/2");
      assertTrue(p.line().startsWith("[--------------------] 0/4 dfsio ours run 1/2 | 0:00 elapsed, ETA --:--"),
          p.line());
      Thread.sleep(200);
      p.stepDone();
      p.phase("dfsio stock run 1/2");
      // one step of ~0.2 s done, three left
      assertTrue(p.line().matches("\\[#####-{15}\\] 1/4 dfsio stock run 1/2 \\| 0:00 elapsed, ETA 0:0[01]"),
          p.line());
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
