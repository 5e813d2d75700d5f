package org.hdfsrdma.nativelib;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A JVM that loaded libhrdma still does what a JVM does on SIGHUP: it runs its shutdown hooks
 * and exits (129). libucs takes SIGHUP as it loads (UCX_DEBUG_SIGNO, for a debug mode of its
 * own) and its handler swallowed the signal: a DataNode or a client application sent SIGHUP
 * (its terminal closed, an operator's {@code kill -HUP}) went on running, and Hadoop's
 * SignalLogger never logged it. Run in a child JVM: the test's own would exit.
 */
class SighupTest {
  /** The child: loads libhrdma, says so, then waits for its signal. */
  public static final class Child {
    public static void main(String[] args) throws Exception {
      Runtime.getRuntime().addShutdownHook(new Thread(() -> System.out.println("shutdown hook ran")));
      if (!HrdmaNative.isAvailable()) {
        System.out.println("libhrdma not available");
        System.exit(3);
      }
      Jni.ctxDestroy0(Jni.ctxCreate0("TLS=tcp")); // UCX in use, as in a DataNode
      System.out.println("ready");
      Thread.sleep(60_000);
      System.out.println("still running");
    }
  }

  @Test
  @Timeout(120)
  void aJvmWithLibhrdmaLoadedExitsOnSighupAfterItsShutdownHooks() throws Exception {
    String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    // env --default-signal=HUP: a build run under nohup (or any parent ignoring SIGHUP) passes the
    // ignored disposition on, and a JVM that starts with SIGHUP ignored keeps it ignored by design;
    // the child must start with the default a DataNode started from a shell or init system gets.
    Process p = new ProcessBuilder("env", "--default-signal=HUP", java, "-cp", System.getProperty("java.class.path"),
        Child.class.getName()).redirectErrorStream(true).start();
    List<String> out = new CopyOnWriteArrayList<>();
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          out.add(line);
        }
      } catch (java.io.IOException e) {
        // the child is gone
      }
    });
    reader.setDaemon(true);
    reader.start();
    try {
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (!out.contains("ready") && p.isAlive() && System.nanoTime() < end) {
        Thread.sleep(20);
      }
      assertTrue(out.contains("ready"), "the child did not load libhrdma: " + out);
      Process kill = new ProcessBuilder("kill", "-HUP", String.valueOf(p.pid())).inheritIO().start();
      assertEquals(0, kill.waitFor(), "kill -HUP");
      boolean exited = p.waitFor(20, TimeUnit.SECONDS);
      reader.join(5000);
      assertTrue(exited, "the child was still running 20 s after SIGHUP: " + out);
      assertEquals(129, p.exitValue(), "exit status after SIGHUP: " + out);
      assertTrue(out.contains("shutdown hook ran"), "no shutdown hook ran: " + out);
    } finally {
      p.destroyForcibly();
    }
  }
}
