package org.hdfsrdma.bench.mr;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Parsing the programs' real output, captured on this machine from Hadoop 3.5.0's
 * TestDFSIO (its -resFile), RandomWriter, examples 3.4.2's Sort and SortValidator
 * (src/test/resources/mr/).
 */
class JobOutputParseTest {
  static String resource(String name) throws IOException {
    try (InputStream in = JobOutputParseTest.class.getResourceAsStream("/mr/" + name)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void dfsioWriteLog() throws IOException {
    DfsioResult r = DfsioResult.parseLast(resource("dfsio-write.log"));
    assertEquals("write", r.op());
    assertEquals(3, r.files());
    assertEquals(48, r.totalMiB());
    assertEquals(11.92, r.throughputMiBs());
    assertEquals(17.39, r.avgIoRateMiBs());
    assertEquals(11.67, r.ioRateStdDev());
    assertEquals(6.28, r.execSeconds());
    assertEquals(48L << 20, r.bytes());
    assertEquals(11.92 * 1048576 / 1e6, r.throughputMBs(), 1e-9);
  }

  @Test
  void dfsioAppendedLogGivesTheLastSection() throws IOException {
    // TestDFSIO appends one section per run to its results file
    DfsioResult r = DfsioResult.parseLast(resource("dfsio-write.log") + resource("dfsio-read.log"));
    assertEquals("read", r.op());
    assertEquals(326.53, r.throughputMiBs());
    assertEquals(1.2, r.execSeconds());
  }

  @Test
  void dfsioGarbageIsAnError() throws IOException {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> DfsioResult.parseLast(resource("sort.out")));
    assertTrue(e.getMessage().contains("not a TestDFSIO results log"), e.getMessage());
    String cut = resource("dfsio-write.log").replaceAll("(?m)^.*Throughput mb/sec.*\\R", "");
    e = assertThrows(IllegalArgumentException.class, () -> DfsioResult.parseLast(cut));
    assertTrue(e.getMessage().contains("Throughput mb/sec"), e.getMessage());
  }

  @Test
  void randomWriterAndSortJobSeconds() throws IOException {
    assertEquals(3.0, JobOutput.jobSeconds(resource("randomwriter.out")).getAsDouble());
    assertEquals(2.0, JobOutput.jobSeconds(resource("sort.out")).getAsDouble());
    assertFalse(JobOutput.jobSeconds(resource("dfsio-read.log")).isPresent());
  }

  @Test
  void sortValidatorVerdict() throws IOException {
    assertTrue(JobOutput.sortValidated(resource("sortvalidate.out")));
    assertFalse(JobOutput.sortValidated(resource("sort.out")));
  }
}
