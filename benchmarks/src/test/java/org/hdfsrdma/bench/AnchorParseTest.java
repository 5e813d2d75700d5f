package org.hdfsrdma.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Against output captured from ucx_perftest 1.13.1 and iperf3 3.12 on this machine. */
class AnchorParseTest {
  static String resource(String name) throws IOException {
    try (InputStream in = AnchorParseTest.class.getResourceAsStream("/anchors/" + name)) {
      if (in == null) {
        throw new IOException("missing test resource " + name);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void ucxAmBw() throws IOException {
    UcxPerftest.Final f = UcxPerftest.parse(resource("ucx_tcp_am_bw_1m.txt"));
    assertEquals(2000, f.iterations());
    assertEquals(160.732, f.avgUs(), 1e-9);
    // 6221.54 MiB/s printed as "MB/s"
    assertEquals(6221.54 * 1.048576, f.bwOverallMBps(), 1e-6);
  }

  @Test
  void ucxProgressLinesAndWarningsAreSkipped() throws IOException {
    UcxPerftest.Final f = UcxPerftest.parse(resource("ucx_tcp_put_bw_1m.txt"));
    assertEquals(2000, f.iterations());
    assertEquals(639.65 * 1.048576, f.bwOverallMBps(), 1e-6);
    assertEquals(490.85 * 1.048576, f.bwAvgMBps(), 1e-6);
  }

  @Test
  void ucxLatency() throws IOException {
    UcxPerftest.Final tcp = UcxPerftest.parse(resource("ucx_tcp_am_lat_8.txt"));
    assertEquals(100000, tcp.iterations());
    assertEquals(4.461, tcp.p50Us(), 1e-9);
    assertEquals(4.726, tcp.overallUs(), 1e-9);
    UcxPerftest.Final sm = UcxPerftest.parse(resource("ucx_sm_am_lat_8.txt"));
    assertEquals(0.120, sm.p50Us(), 1e-9);
    assertEquals(8032649, sm.msgRateOverall(), 1e-9);
  }

  @Test
  void ucxOtherTests() throws IOException {
    assertEquals(9092.65 * 1.048576,
        UcxPerftest.parse(resource("ucx_tcp_tag_bw_1m.txt")).bwOverallMBps(), 1e-6);
    assertEquals(547.33 * 1.048576,
        UcxPerftest.parse(resource("ucx_tcp_get_1m.txt")).bwOverallMBps(), 1e-6);
    assertEquals(5107.43 * 1.048576,
        UcxPerftest.parse(resource("ucx_tcp_stream_bw_1m.txt")).bwOverallMBps(), 1e-6);
    assertEquals(12733.15 * 1.048576,
        UcxPerftest.parse(resource("ucx_sm_am_bw_1m.txt")).bwOverallMBps(), 1e-6);
    assertEquals(11957.60 * 1.048576,
        UcxPerftest.parse(resource("ucx_sm_tag_bw_1m.txt")).bwOverallMBps(), 1e-6);
  }

  @Test
  void ucxFailureSaysWhy() throws IOException {
    IOException e = assertThrows(IOException.class,
        () -> UcxPerftest.parse(resource("ucx_refused.txt")));
    assertTrue(e.getMessage().contains("Connection refused"), e.getMessage());
    assertThrows(IOException.class, () -> UcxPerftest.parse("Final: 12 abc"));
  }

  @Test
  void iperf3() throws IOException {
    // sum_received.bits_per_second 28345797632.43743, not sum_sent's
    assertEquals(28345797632.43743 / 8 / 1e6, Iperf3.parseMBps(resource("iperf3_client.json")),
        1e-6);
  }

  @Test
  void iperf3ErrorDespiteExitZero() throws IOException {
    IOException e = assertThrows(IOException.class,
        () -> Iperf3.parseMBps(resource("iperf3_refused.json")));
    assertEquals("iperf3: unable to connect to server: Connection refused", e.getMessage());
    assertThrows(IOException.class, () -> Iperf3.parseMBps("{}"));
  }
}
