package org.hdfsrdma.bench.fs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PreadTableTest {
  /** A run of {@code ops} reads in one second whose latencies are 1..100 us (p50 50, p99 99). */
  private static PreadTable.Run run(String client, int io, int threads, boolean cold, long ops, int scale) {
    long[] lat = new long[100];
    for (int i = 0; i < 100; i++) {
      lat[i] = (100 - i) * 1000L * scale;
    }
    PreadTable.Run r = PreadTable.Run.of(client, io, threads, cold, 1, 1_000_000_000L, lat, lat.length);
    return new PreadTable.Run(client, io, threads, cold, 1, ops, r.nanos(), r.p50Us(), r.p99Us());
  }

  @Test
  void aRunsIopsAndPercentilesFromItsLatencies() {
    long[] lat = new long[200];
    for (int i = 0; i < 200; i++) {
      lat[i] = (i + 1) * 1000L; // 1..200 us
    }
    PreadTable.Run r = PreadTable.Run.of("ours", 4096, 16, false, 2, 2_000_000_000L, lat, 200);
    assertEquals(100.0, r.iops(), 1e-9, "200 reads in 2 s");
    assertEquals(100.0, r.p50Us(), 1e-9, "the lower middle sample");
    assertEquals(198.0, r.p99Us(), 1e-9, "nearest rank: the 198th of 200");
    PreadTable.Run none = PreadTable.Run.of("stock", 4096, 1, true, 1, 1_000_000_000L, new long[0], 0);
    assertEquals(0.0, none.iops());
    assertTrue(Double.isNaN(none.p50Us()));
  }

  @Test
  void cellsTakeMediansOfTheRunsAndTheRatioOfMedians() {
    List<PreadTable.Run> runs = new ArrayList<>();
    // 4K, 16 threads, warm: ours 9000/10000/30000 IOPS, stock 4000/5000/6000; then a cold cell
    runs.add(run("ours", 4096, 16, false, 9000, 1));
    runs.add(run("stock", 4096, 16, false, 4000, 3));
    runs.add(run("ours", 4096, 16, false, 30000, 1));
    runs.add(run("stock", 4096, 16, false, 6000, 3));
    runs.add(run("ours", 4096, 16, false, 10000, 2));
    runs.add(run("stock", 4096, 16, false, 5000, 3));
    runs.add(run("ours", 1 << 20, 1, true, 300, 10));
    runs.add(run("stock", 1 << 20, 1, true, 150, 20));
    List<PreadTable.Cell> cells = PreadTable.summarize(runs);
    assertEquals(2, cells.size());
    PreadTable.Cell c = cells.get(0);
    assertEquals(10000, c.oursIops().median(), 1e-9);
    assertEquals(5000, c.stockIops().median(), 1e-9);
    assertEquals(2.0, c.ratio(), 1e-9);
    assertEquals(50.0, c.oursP50().median(), 1e-9, "latency scale 1, 1, 2: median 1");
    assertEquals(99.0, c.oursP99().median(), 1e-9);
    assertEquals(297.0, c.stockP99().median(), 1e-9);
    String[] lines = PreadTable.render(cells).split("\n");
    assertEquals("#bytes  threads  cache  ours IOPS  stock IOPS  ours/stock  ours p50[usec]  ours p99[usec]"
        + "  stock p50[usec]  stock p99[usec]", lines[0]);
    assertTrue(lines[1].matches("-+"), lines[1]);
    assertEquals("4K      16       warm       10000        5000        2.00            50.0            99.0"
        + "            150.0            297.0", lines[2]);
    assertEquals("1M      1        cold         300         150        2.00           500.0           990.0"
        + "           1000.0           1980.0", lines[3]);
    assertEquals(lines[0].length(), lines[2].length(), "fixed width");
  }

  @Test
  void jsonHasConfigRunsAndSummaries() {
    List<PreadTable.Run> runs = List.of(run("ours", 4096, 1, false, 100, 1), run("stock", 4096, 1, false, 50, 1));
    List<String> l = PreadTable.jsonLines(PreadOptions.parse(new String[0]), "m", runs, PreadTable.summarize(runs));
    assertEquals(4, l.size());
    assertTrue(l.get(0).contains("\"type\": \"config\"") && l.get(0).contains("no short-circuit"), l.get(0));
    assertTrue(l.get(1).contains("\"client\": \"ours\"") && l.get(1).contains("\"iops\": 100"), l.get(1));
    assertTrue(l.get(3).contains("\"ratio_ours_stock\": 2"), l.get(3));
  }
}
