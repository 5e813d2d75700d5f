package org.hdfsrdma.bench.fs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.hdfsrdma.tools.UsageException;
import org.junit.jupiter.api.Test;

class SparkBenchTest {
  private static JsonNode json(String s) throws Exception {
    return new ObjectMapper().readTree(s);
  }

  @Test
  void optionsDefaultsAndValues() {
    SparkBench.Options d = SparkBench.parse(new String[0]);
    assertEquals(1L << 30, d.size());
    assertEquals((1L << 30) / 1024, d.rows());
    assertEquals(3, d.runs());
    assertTrue(d.python().endsWith(Path.of("build", "spark-venv", "bin", "python")), d.python().toString());

    SparkBench.Options o = SparkBench.parse(new String[] {"--size=256M", "--runs", "5", "--python", "/usr/bin/py",
        "--conf", "hrdma.client.read.local=false"});
    assertEquals(256L << 20, o.size());
    assertEquals(262144, o.rows());
    assertEquals(5, o.runs());
    assertEquals(Path.of("/usr/bin/py"), o.python());
    assertEquals(Map.of("hrdma.client.read.local", "false"), o.fs().conf());
  }

  @Test
  void badOptionsAreRefused() {
    assertThrows(UsageException.class, () -> SparkBench.parse(new String[] {"--runs", "0"}));
    assertThrows(UsageException.class, () -> SparkBench.parse(new String[] {"--size"}));
    assertThrows(UsageException.class, () -> SparkBench.parse(new String[] {"--size", "100"}));
    assertThrows(UsageException.class, () -> SparkBench.parse(new String[] {"--size", "lots"}));
    assertThrows(UsageException.class, () -> SparkBench.parse(new String[] {"--replication", "3"}));
    assertThrows(UsageException.class, () -> SparkBench.parse(new String[] {"--bogus"}));
  }

  @Test
  void aRunCountsOnlyWhenItsRowsAreRightAndOursWentOverOurPath() throws Exception {
    String ok = "\"rows\": 10, \"content_ok\": true, \"bytes\": 1000";
    assertNull(SparkBench.check(json("{" + ok + ", \"fs\": \"org.apache.hadoop.hdfs.DistributedFileSystem\"}"),
        "stock", 10, 0));
    assertNull(SparkBench.check(json("{" + ok + ", \"fs\": \"x\", \"hrdma_written\": 1000, \"hrdma_read\": 900, "
        + "\"stock_read\": 0, \"stock_write_fallbacks\": 0}"), "ours", 10, 0));

    assertTrue(SparkBench.check(null, "ours", 10, 1).contains("no result line"));
    assertTrue(SparkBench.check(json("{\"rows\": 9, \"content_ok\": true, \"bytes\": 1000}"), "stock", 10, 0)
        .contains("not the rows written"));
    assertTrue(SparkBench.check(json("{" + ok + "}"), "stock", 10, 1).contains("not the rows written"));
    assertTrue(SparkBench.check(json("{\"rows\": 10, \"content_ok\": false, \"bytes\": 1000}"), "stock", 10, 0)
        .contains("not the rows written"));
    assertTrue(SparkBench.check(json("{" + ok + ", \"fs\": \"org.hdfsrdma.client.RdmaDistributedFileSystem\"}"),
        "stock", 10, 0).contains("stock's job ran on"));
    assertTrue(SparkBench.check(json("{" + ok + ", \"hrdma_written\": 999, \"hrdma_read\": 1000, "
        + "\"stock_read\": 0, \"stock_write_fallbacks\": 0}"), "ours", 10, 0).contains("not written over hrdma"));
    assertTrue(SparkBench.check(json("{" + ok + ", \"hrdma_written\": 1000, \"hrdma_read\": 1000, "
        + "\"stock_read\": 0, \"stock_write_fallbacks\": 1}"), "ours", 10, 0).contains("not written over hrdma"));
    assertTrue(SparkBench.check(json("{" + ok + ", \"hrdma_written\": 1000, \"hrdma_read\": 1000, "
        + "\"stock_read\": 5, \"stock_write_fallbacks\": 0}"), "ours", 10, 0).contains("did not read over hrdma"));
    assertTrue(SparkBench.check(json("{" + ok + ", \"hrdma_written\": 1000}"), "ours", 10, 0)
        .contains("not written over hrdma"), "counters missing: not counted as ours");
  }

  @Test
  void theTableGivesMediansAndStocksTimeOverOurs() {
    SparkBench.Options o = SparkBench.parse(new String[] {"--size", "1M", "--runs", "3"});
    String t = SparkBench.render(o, Map.of(
        "ours", List.of(new SparkBench.Run(1, 2, 10, 1_000_000, 1, 2, 3),
            new SparkBench.Run(2, 4, 12, 1_000_000, 2, 3, 4), new SparkBench.Run(9, 9, 30, 1_000_000, 9, 9, 9)),
        "stock", List.of(new SparkBench.Run(4, 2, 12, 1_000_000, 5, 6, 7),
            new SparkBench.Run(4, 2, 12, 1_000_000, 5, 6, 7), new SparkBench.Run(4, 2, 12, 1_000_000, 5, 6, 7))));
    // medians: ours write 2 s, scan 4 s, job 12 s, cpu 2, 3, 4; stock 4, 2, 12, cpu 5, 6, 7
    assertTrue(t.matches("(?s).*write +2\\.00 +4\\.00 +0\\.5 +0\\.3 +2\\.00x +2\\.00 +5\\.00.*"), t);
    assertTrue(t.matches("(?s).*scan +4\\.00 +2\\.00 +0\\.3 +0\\.5 +0\\.50x +3\\.00 +6\\.00.*"), t);
    assertTrue(t.matches("(?s).*job +12\\.00 +12\\.00 +0\\.1 +0\\.1 +1\\.00x +4\\.00 +7\\.00.*"), t);
    assertTrue(SparkBench.render(o, Map.of("ours", List.of(new SparkBench.Run(1, 1, 1, 1, 1, 1, 1))))
        .contains("no complete pair"));
  }

  @Test
  void aProcesssCpuIsReadFromProc() throws Exception {
    long self = ProcessHandle.current().pid();
    long before = SparkBench.cpuTicks(List.of(self));
    java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
    long end = threads.getCurrentThreadCpuTime() + 300_000_000L;
    long x = 0;
    while (threads.getCurrentThreadCpuTime() < end) {
      x += x * 31 + 7;
    }
    long spent = SparkBench.cpuTicks(List.of(self)) - before;
    assertTrue(spent >= 20 && x != 1, "300 ms of this thread's CPU counted " + spent + " ticks");
  }
}
