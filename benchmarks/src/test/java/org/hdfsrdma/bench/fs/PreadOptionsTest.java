package org.hdfsrdma.bench.fs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.hdfsrdma.tools.UsageException;
import org.junit.jupiter.api.Test;

class PreadOptionsTest {
  @Test
  void defaults() {
    PreadOptions o = PreadOptions.parse(new String[0]);
    assertEquals(1L << 30, o.size());
    assertEquals(List.of(4096, 65536, 1 << 20), o.ioSizes());
    assertEquals(List.of(1, 16), o.threads());
    assertEquals(3, o.seconds());
    assertEquals(3, o.runs());
    assertFalse(o.cold());
    assertFalse(o.json());
    assertNull(o.dir());
    assertNull(o.resultsDir());
    assertTrue(o.conf().isEmpty());
  }

  @Test
  void values() {
    PreadOptions o = PreadOptions.parse(new String[] {"--size", "256M", "--sizes=4K,1M", "--threads", "16,1,4",
        "--seconds", "2", "--runs=5", "--cold", "--json", "--dir", "/tmp/x", "--conf", "hrdma.client.read.local=false"});
    assertEquals(256L << 20, o.size());
    assertEquals(List.of(4096, 1 << 20), o.ioSizes());
    assertEquals(List.of(16, 1, 4), o.threads(), "in the order given");
    assertEquals(2, o.seconds());
    assertEquals(5, o.runs());
    assertTrue(o.cold());
    assertTrue(o.json());
    assertEquals("/tmp/x", o.dir().toString());
    assertEquals(Map.of("hrdma.client.read.local", "false"), o.conf());
  }

  private static String refused(String... args) {
    return assertThrows(UsageException.class, () -> PreadOptions.parse(args)).getMessage();
  }

  @Test
  void badValuesAreRefusedWithTheReason() {
    assertTrue(refused("--sizes", "4K,x").contains("sizes like 4K"));
    assertTrue(refused("--sizes", "4K,4K").contains("twice"));
    assertTrue(refused("--sizes", "128M").contains("at most 64M"));
    assertTrue(refused("--size", "1M", "--sizes", "4M").contains("larger than the file"));
    assertTrue(refused("--threads", "0").contains("at least 1"));
    assertTrue(refused("--threads", "1,1").contains("twice"));
    assertTrue(refused("--threads", "1000").contains("1..256"));
    assertTrue(refused("--seconds", "1.5").contains("whole numbers"));
    assertTrue(refused("--runs", "101").contains("1..100"));
    assertTrue(refused("--cold=yes").contains("takes no value"));
    assertTrue(refused("--replication", "3").contains("unknown option"));
    assertTrue(refused("--seconds").contains("needs a value"));
    assertTrue(refused("extra").contains("unexpected argument"));
  }

  @Test
  void helpPrintsUsageAndBadArgumentsExitTwo() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    assertEquals(0, PreadBench.run(new String[] {"--help"}, new PrintStream(out), new PrintStream(err)));
    assertTrue(out.toString(StandardCharsets.UTF_8).startsWith("usage: hrdma bench pread"));
    assertEquals(2, PreadBench.run(new String[] {"--threads", "x"}, new PrintStream(out), new PrintStream(err)));
    String e = err.toString(StandardCharsets.UTF_8);
    assertTrue(e.startsWith("hrdma bench pread: --threads takes whole numbers"), e);
    assertTrue(e.contains("usage: hrdma bench pread"), e);
  }
}
