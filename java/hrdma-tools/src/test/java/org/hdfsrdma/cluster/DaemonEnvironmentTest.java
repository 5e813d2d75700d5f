package org.hdfsrdma.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.hdfsrdma.nativelib.UcxStartEnvironment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A daemon starts with the UCX settings libhrdma-preload would otherwise set while its threads run;
 * a value the user exported wins.
 */
class DaemonEnvironmentTest {
  @TempDir
  Path dir;

  private static String startEnvironment(Process p) throws Exception {
    Path environ = Path.of("/proc", Long.toString(p.pid()), "environ");
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    String env = "";
    while (p.isAlive() && System.nanoTime() < end && !(env = Files.readString(environ, StandardCharsets.ISO_8859_1))
        .contains("UCX_")) {
      Thread.sleep(20);
    }
    return env;
  }

  @Test
  void aLaunchedDaemonHasThePreloadsSettingsFromItsStart() throws Exception {
    List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx32m",
        "-cp", System.getProperty("java.class.path"), Sleeper.class.getName());
    Process p = Daemons.launch(cmd, dir.resolve("logs/sleeper.log"), dir, false);
    try {
      List<String> entries = List.of(startEnvironment(p).split("\0"));
      for (var e : UcxStartEnvironment.VARIABLES.entrySet()) {
        String want = e.getKey() + "=" + e.getValue();
        boolean userSet = System.getenv(e.getKey()) != null;
        assertTrue(userSet ? entries.contains(e.getKey() + "=" + System.getenv(e.getKey())) : entries.contains(want),
            want + " not in the daemon's start environment: "
            + entries.stream().filter(x -> x.startsWith("UCX_")).toList());
      }
      assertEquals(1, entries.stream().filter(s -> s.startsWith("UCX_MEM_EVENTS=")).count());
    } finally {
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
    }
  }
}
