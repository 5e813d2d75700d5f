package org.hdfsrdma.tools.fs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class FsTableTest {
  @Test
  void medianMinMax() {
    assertEquals(new Stats(3, 2, 1, 5), Stats.of(5, 1, 2));
    assertEquals(new Stats(4, 2.5, 1, 9), Stats.of(9, 1, 2, 3));
    assertEquals(new Stats(1, 7, 7, 7), Stats.of(Double.NaN, 7));
    assertTrue(Double.isNaN(Stats.of().median()));
  }

  @Test
  void ratiosAndUnits() {
    assertEquals(2.0, Stats.ratio(10, 5));
    assertTrue(Double.isNaN(Stats.ratio(1, 0)));
    assertTrue(Double.isNaN(Stats.ratio(Double.NaN, 1)));
    assertEquals(1000.0, Stats.mbPerSecond(1_000_000_000L, 1_000_000_000L));
    assertEquals(4.0, Stats.perGiB(2.0, 1L << 29));
  }

  static Sample s(String client, String op, long mbps, double clientCpu, double dnCpu, long ours) {
    long bytes = 1L << 30;
    long nanos = (long) (bytes / 1e6 / mbps * 1e9);
    return new Sample(client, op, "/f", "stock", 3, bytes, nanos, clientCpu, dnCpu, ours, bytes - ours, 0, 1);
  }

  @Test
  void summaryTakesMediansAndRatioOfMedians() {
    List<Sample> samples = List.of(s("ours", "read", 300, 1, 2, 1L << 30), s("stock", "read", 100, 2, 2, 0),
        s("ours", "read", 600, 1, 4, 1L << 30), s("stock", "read", 200, 4, 2, 0),
        s("ours", "read", 900, 3, 6, 1L << 30), s("stock", "read", 150, 3, 2, 0));
    List<FsTable.Summary> sum = FsTable.summarize(samples);
    assertEquals(4, sum.size());
    FsTable.Summary mbps = sum.get(0);
    assertEquals("MB/s", mbps.metric());
    assertEquals(600, mbps.ours().median(), 0.5);
    assertEquals(150, mbps.stock().median(), 0.5);
    assertEquals(300, mbps.ours().min(), 0.5);
    assertEquals(4.0, mbps.ratio(), 0.01);
    assertEquals(1.0 / 3, sum.get(1).ratio(), 1e-9); // client CPU s/GiB: 1 vs 3
    assertEquals(100.0, sum.get(3).ours().median());
    String table = FsTable.render(FsTable.BENCH_HEADER, FsTable.benchRows(sum), 3);
    String[] lines = table.split("\n");
    assertEquals("op    repl  metric              ours median  ours min..max  stock median  stock min..max  ours/stock",
        lines[0]);
    assertTrue(lines[2].startsWith("read  3     MB/s                      600.0   300.0..900.0         150.0    100.0..200.0"),
        lines[2]);
    assertTrue(lines[2].endsWith("4.00"), lines[2]);
    assertTrue(lines[5].endsWith("-"), "no ratio for the transport share: " + lines[5]);
  }

  @Test
  void demoSummaryAndColdReadsBesideFio() {
    List<Sample> samples = List.of(s("ours", "write", 400, 1, 2, 1L << 30), s("stock", "write", 200, 1, 2, 0),
        s("ours", FsTable.READ_AFTER_WRITE, 1500, 1, 1, 1L << 30), s("stock", FsTable.READ_AFTER_WRITE, 1000, 1, 1, 0),
        s("ours", FsTable.READ_COLD, 760, 1, 1, 1L << 30), s("stock", FsTable.READ_COLD, 400, 1, 1, 0));
    List<FsTable.Summary> sum = FsTable.summarize(samples);
    List<List<String>> rows = FsTable.demoSummaryRows(sum);
    assertEquals(List.of(List.of("write", "3", "400.0", "200.0", "2.00"),
        List.of(FsTable.READ_AFTER_WRITE, "3", "1500.0", "1000.0", "1.50"),
        List.of(FsTable.READ_COLD, "3", "760.0", "400.0", "1.90")), rows);
    String fio = FsTable.fioLines(sum, java.util.Map.of(3, List.of(700.0, 800.0, 900.0)));
    assertTrue(fio.startsWith("cold reads, replication 3: ours 760.0 MB/s, stock 400.0, fio 800.0 [700.0..900.0]"), fio);
    assertTrue(fio.trim().endsWith("ours/fio 0.95, stock/fio 0.50"), fio);
    assertEquals("", FsTable.fioLines(sum, java.util.Map.of()), "no fio: no line");
  }

  @Test
  void renderAlignsAndRules() {
    String t = FsTable.render(List.of("a", "number"), List.of(List.of("xyz", "1"), List.of("b", "22.5")), 1);
    assertEquals("a    number\n-----------\nxyz       1\nb      22.5\n", t);
  }

  @Test
  void demoRowShowsWhichPathCarriedTheBytes() {
    Sample w = new Sample("ours", "write", "/f", "ours", 3, 8L << 20, 1_000_000_000L, 0.5, 1.25, 0, 8L << 20, 0, 7);
    List<String> row = FsTable.demoRow(1, w);
    assertEquals(List.of("1", "ours", "write", "ours", "3", "8.4", "0.50", "1.25", "0.0 MiB (0%)", "8.0 MiB (100%)",
        "0"), row);
    assertEquals("n/a (no counter)", FsTable.bytesShare(-1, 10));
  }
}
