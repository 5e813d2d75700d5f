package org.hdfsrdma.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ReportTest {
  @Test
  void headersArePerftests() {
    assertEquals(" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]",
        Report.BW_HEADER);
    assertEquals(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
        + "    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]", Report.LAT_HEADER);
  }

  @Test
  void bwRowValuesSitUnderTheirLabels() {
    BwResult r = new BwResult("send_bw", "ucx", "tcp", 1048576, 2048, 6543.21, 6000.5, 0.005722);
    String row = Report.bwRow(r);
    assertEquals(" 1048576    2048           6543.21            6000.50              0.005722", row);
    assertEquals(Report.BW_HEADER.indexOf("BW average"), row.indexOf("6000.50"));
    assertEquals(Report.BW_HEADER.indexOf("MsgRate"), row.indexOf("0.005722"));
  }

  @Test
  void latRowValuesSitUnderTheirLabels() {
    LatencyStats s = new LatencyStats(10000, 4.1, 55.25, 4.5, 4.75, 0.5, 6.0, 20.125);
    String row = Report.latRow(new LatResult("send_lat", "ucx", "tcp", 8, s));
    assertEquals(Report.LAT_HEADER.indexOf("t_typical"), row.indexOf("4.50"));
    assertEquals(Report.LAT_HEADER.indexOf("99.9% percentile"), row.indexOf("20.13"));
    assertTrue(row.startsWith(" 8      10000"), row);
  }

  @Test
  void wideValuesStillSeparated() {
    assertEquals(" 12345678901 2", Report.place(new int[] {1, 5}, "12345678901", "2"));
  }

  @Test
  void titleSaysTheUnit() {
    assertTrue(Report.title("send_bw", "tcp", null, "runs=3").endsWith("(MB = 10^6 bytes)"));
    assertTrue(Report.title("send_bw", "ucx", "sm,tcp", "").contains("UCX_TLS=sm,tcp"));
    assertTrue(Report.title("send_lat", "tcp", null, "").endsWith("transport=tcp"));
  }

  @Test
  void json() {
    BwResult r = new BwResult("send_bw", "tcp", null, 8, 100, 1.5, 1.25, 0.15625);
    assertEquals("{\"test\": \"send_bw\", \"transport\": \"tcp\", \"ucx_tls\": null, \"bytes\": 8,"
        + " \"iterations\": 100, \"runs\": 3, \"bw_peak_MBps\": 1.5, \"bw_avg_MBps\": 1.25,"
        + " \"msg_rate_Mpps\": 0.15625, \"unit_MB\": 1000000}", r.toJson(3).toString());
    assertEquals("{\"a\": \"x\\\"y\\\\\\n\", \"n\": null, \"big\": 1234568000, \"z\": 0}",
        new Json().put("a", "x\"y\\\n").put("n", Double.NaN).put("big", 1234567890.0)
            .put("z", 0.0).toString());
  }
}
