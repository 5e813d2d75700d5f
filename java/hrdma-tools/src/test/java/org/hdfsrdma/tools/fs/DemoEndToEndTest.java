package org.hdfsrdma.tools.fs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** One small {@code hrdma demo}: real NameNode + 3 DataNode JVMs with the plugin. */
class DemoEndToEndTest {
  /**
   * The daemons run on this module's classes (the web apps) and target/classpath.txt, as
   * ClusterEndToEndTest's do: the module's jar is not built yet when its tests run.
   */
  @BeforeAll
  static void daemonClasspath() throws Exception {
    String deps = Files.readString(Path.of("target", "classpath.txt")).trim();
    System.setProperty(LocalCluster.CLASSPATH_PROPERTY,
        Path.of("target", "classes").toAbsolutePath() + File.pathSeparator + deps);
  }

  @AfterAll
  static void clear() {
    System.clearProperty(LocalCluster.CLASSPATH_PROPERTY);
  }

  @Test
  @Timeout(value = 300, unit = TimeUnit.SECONDS) // a cluster start, four cases, cache drops and fio
  void smallDemoPasses() {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    PrintStream out = new PrintStream(buf, true, StandardCharsets.UTF_8);
    int rc = Demo.run(new String[] {"--size", "8M", "--runs", "1"}, out, out);
    String text = buf.toString(StandardCharsets.UTF_8);
    System.out.println(text);
    assertEquals(0, rc, text);
    assertTrue(text.contains(String.join("  ", "run", "path ", "op   ")), "table header:\n" + text);
    // every case, each client: writes, its own file right after, the other's warm, its own cold
    for (String row : new String[] {"1 ours write ours", "1 stock write stock", "1 ours read after write ours",
        "1 stock read after write stock", "1 ours read warm stock", "1 stock read warm ours",
        "1 ours read cold ours", "1 stock read cold stock"}) {
      assertTrue(text.matches("(?s).*\\n" + row.replace(" ", "\\s+") + "\\s.*"), "row '" + row + "':\n" + text);
    }
    // the summary: ours beside stock with the ratio, per case
    for (String op : new String[] {"write", "read after write", "read warm", "read cold"}) {
      assertTrue(text.matches("(?s).*\\n" + op.replace(" ", "\\s") + "\\s+3\\s+[0-9.]+\\s+[0-9.]+\\s+[0-9.]+\\n.*"),
          "summary row '" + op + "':\n" + text);
    }
    if (ColdReads.fioAvailable()) {
      assertTrue(text.matches("(?s).*cold reads, replication 3: ours [0-9.]+ MB/s, stock [0-9.]+, fio [0-9.]+.*"),
          text);
    }
    assertTrue(text.contains("content: CRC32C of every read stream equals the written stream's"), text);
    assertTrue(text.matches("(?s).*by stock MD5-of-\\S+  \\(equal\\).*"), text);
    assertTrue(text.contains("demo: PASS"), text);
    assertTrue(text.contains("hrdma cluster: stopped"), text);
  }
}
