package org.hdfsrdma.tools.fs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ProcStatTest {
  /** Captured from a JVM on this machine (utime 1234, stime 567), comm with a space and ')'. */
  static final String JVM_LINE = "2668 (java) S 1 2667 2667 0 -1 1077936192 52213 0 12 0 1234 567 0 0 20 0 "
      + "45 0 581000 4046123008 70123 18446744073709551615 1 1 0 0 0 0 0 4096 16796879 0 0 0 17 1 0 0 0 0 0";
  /** A captured line of cat(1) itself: utime 0, stime 0. */
  static final String CAT_LINE = "3431 (cat) R 3427 3427 31394 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 581646 "
      + "3133440 395 18446744073709551615 93841730465792 93841730485673 140720645218528 0 0 0 0 0 0 0 0 0 17 0 0 0 "
      + "0 0 0 93841730501680 93841730503296 93841849831424 140720645224959 140720645224979 140720645224979 "
      + "140720645226475 0";

  @Test
  void parsesUtimePlusStime() {
    assertEquals(1234 + 567, ProcStat.cpuTicks(JVM_LINE));
    assertEquals(0, ProcStat.cpuTicks(CAT_LINE));
  }

  @Test
  void commWithSpacesAndParentheses() {
    String odd = JVM_LINE.replace("(java)", "(a b) c)");
    assertEquals(1801, ProcStat.cpuTicks(odd));
  }

  @Test
  void rejectsGarbage() {
    assertTrue(assertThrows(IllegalArgumentException.class, () -> ProcStat.cpuTicks("hello"))
        .getMessage().contains("no ')'"));
    assertThrows(IllegalArgumentException.class, () -> ProcStat.cpuTicks("1 (x) S 1 2 3"));
    assertThrows(IllegalArgumentException.class, () -> ProcStat.cpuTicks(JVM_LINE.replace(" 1234 ", " x ")));
  }

  @Test
  void readsThisProcess() throws Exception {
    double s = ProcStat.cpuSeconds(ProcessHandle.current().pid());
    assertTrue(s > 0, "this JVM has used CPU: " + s);
    assertEquals(-1, ProcStat.cpuSeconds(Integer.MAX_VALUE - 1));
  }
}
