package org.hdfsrdma.tools.fs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.hdfsrdma.tools.UsageException;
import org.junit.jupiter.api.Test;

class FsOptionsTest {
  @Test
  void confSettingsAreKeptInOrderAndBadOnesRefused() {
    FsOptions o = FsOptions.parseDemo(new String[] {"--conf", "hrdma.transport.order=tcp",
        "--conf=hrdma.ucx.spin-count=0"});
    assertEquals(java.util.Map.of("hrdma.transport.order", "tcp", "hrdma.ucx.spin-count", "0"), o.conf());
    assertEquals(List.of("hrdma.transport.order", "hrdma.ucx.spin-count"), List.copyOf(o.conf().keySet()));
    UsageException e = assertThrows(UsageException.class,
        () -> FsOptions.parseDemo(new String[] {"--conf", "novalue"}));
    assertTrue(e.getMessage().contains("KEY=VALUE"), e.getMessage());
    assertTrue(FsOptions.parseBench(new String[0]).conf().isEmpty());
  }

  @Test
  void demoDefaults() {
    FsOptions o = FsOptions.parseDemo(new String[0]);
    assertEquals(1L << 30, o.size());
    assertNull(o.dir());
    assertEquals(1, o.runs());
    assertEquals(List.of(3), o.replications());
    assertFalse(o.json());
  }

  @Test
  void benchDefaultsAndValues() {
    FsOptions d = FsOptions.parseBench(new String[0]);
    assertEquals(3, d.runs());
    assertEquals(List.of(1, 3), d.replications());
    FsOptions o = FsOptions.parseBench(new String[] {"--size", "8M", "--replication=3,1", "--runs", "5", "--json",
        "--dir", "/tmp/x"});
    assertEquals(8L << 20, o.size());
    assertEquals(List.of(3, 1), o.replications());
    assertEquals(5, o.runs());
    assertTrue(o.json());
    assertEquals("/tmp/x", o.dir().toString());
  }

  @Test
  void clearErrors() {
    assertMessage("--size takes a size like 8M or 1G, not 'lots'", () -> FsOptions.parseDemo(args("--size", "lots")));
    assertMessage("--size must be at least 64K, not '1K'", () -> FsOptions.parseDemo(args("--size", "1K")));
    assertMessage("--runs must be at least 1, not 0", () -> FsOptions.parseDemo(args("--runs", "0")));
    assertMessage("--runs takes a whole number, not 'x'", () -> FsOptions.parseDemo(args("--runs", "x")));
    assertMessage("--runs needs a value", () -> FsOptions.parseDemo(args("--runs")));
    assertMessage("unknown option --bogus", () -> FsOptions.parseDemo(args("--bogus", "1")));
    assertMessage("unknown option --replication (an option of 'hrdma bench fs')",
        () -> FsOptions.parseDemo(args("--replication", "1")));
    assertMessage("--replication values must be 1..3 (the cluster has 3 DataNodes), not 4",
        () -> FsOptions.parseBench(args("--replication", "1,4")));
    assertMessage("--replication lists 3 twice", () -> FsOptions.parseBench(args("--replication", "3,3")));
    assertMessage("--replication takes a whole number, not ''", () -> FsOptions.parseBench(args("--replication", "1,")));
    assertMessage("--replication must be at least 1, not 0", () -> FsOptions.parseBench(args("--replication", "0")));
    assertMessage("unexpected argument 'fs'", () -> FsOptions.parseBench(args("fs")));
  }

  @Test
  void demoRunReportsUsageErrorsWithExit2() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int rc = Demo.run(args("--size", "1K"), new PrintStream(out), new PrintStream(err, true, StandardCharsets.UTF_8));
    assertEquals(2, rc);
    assertTrue(err.toString(StandardCharsets.UTF_8).startsWith("hrdma demo: --size must be at least 64K"));
  }

  private static String[] args(String... a) {
    return a;
  }

  private static void assertMessage(String want, org.junit.jupiter.api.function.Executable e) {
    assertEquals(want, assertThrows(UsageException.class, e).getMessage());
  }
}
