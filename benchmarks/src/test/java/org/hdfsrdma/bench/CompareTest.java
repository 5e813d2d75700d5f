package org.hdfsrdma.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class CompareTest {
  @Test
  void defaultMatrixHasTheTargets() {
    List<Compare.Case> cases = Compare.matrix(PerfOptions.parse("compare"));
    long targets = cases.stream().filter(c -> c.target() != null).count();
    // send_bw: tcp, ucx[tcp], ucx[sm,tcp], stream[tcp]; send_lat: ucx[tcp], ucx[sm,tcp]
    assertEquals(6, targets);
    Compare.Case ucxBw = cases.stream().filter(c -> c.transport().equals("ucx")
        && c.test().equals("send_bw") && c.tls().equals("sm,tcp")).findFirst().orElseThrow();
    assertEquals(List.of("ucp_am_bw", "tag_bw"), ucxBw.anchors());
    assertEquals(1 << 20, ucxBw.size());
    assertTrue(cases.stream().noneMatch(c -> c.transport().equals("tcp")
        && c.test().equals("write_bw")));
  }

  @Test
  void narrowedByOptions() {
    List<Compare.Case> cases = Compare.matrix(PerfOptions.parse("compare", "--transport", "ucx",
        "--ucx-tls", "tcp", "read_bw"));
    assertEquals(1, cases.size());
    assertEquals("ucp_get", cases.get(0).anchors().get(0));
    assertNull(Compare.caseFor("write_bw", "tcp", null, 8));
  }

  @Test
  void targetLines() {
    Compare.Case bw = Compare.caseFor("send_bw", "ucx", "tcp", 1 << 20);
    Compare.Case lat = Compare.caseFor("send_lat", "ucx", "tcp", 8);
    List<String> lines = Compare.targetLines(List.of(
        new Compare.Row(bw, 950, "ucp_am_bw", 1000, null),
        new Compare.Row(bw, 850, "tag_bw", 1000, null),
        new Compare.Row(lat, 6.0, "ucp_am_lat", 4.5, null),
        new Compare.Row(lat, 7.0, "ucp_am_lat", 4.5, null),
        new Compare.Row(lat, Double.NaN, "ucp_am_lat", 4.5, "ours: boom")));
    assertTrue(lines.get(0).startsWith("PASS send_bw ucx[tcp] 1MB: 950.00 MB/s = 95.0% of"),
        lines.get(0));
    assertTrue(lines.get(1).startsWith("MISS "), lines.get(1));
    assertTrue(lines.get(2).startsWith("PASS ") && lines.get(2).contains("+1.50 us"),
        lines.get(2));
    assertTrue(lines.get(3).startsWith("MISS "), lines.get(3));
    assertTrue(lines.get(4).contains("not measured: ours: boom"), lines.get(4));
  }

  @Test
  void rowsAndMedian() {
    Compare.Case bw = Compare.caseFor("send_bw", "tcp", null, 1 << 20);
    String row = Compare.row(Compare.BW_HEADER, new Compare.Row(bw, 1500, "iperf3", 2000, null));
    assertEquals(Compare.BW_HEADER.indexOf("ratio"), row.indexOf("0.750"));
    assertEquals(2.0, Compare.median(List.of(3.0, 1.0, 2.0)));
    assertEquals(2.5, Compare.median(List.of(3.0, 1.0, 2.0, 4.0)));
    assertTrue(Double.isNaN(Compare.median(List.of())));
  }
}
