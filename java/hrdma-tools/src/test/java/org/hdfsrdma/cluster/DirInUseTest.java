package org.hdfsrdma.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A directory whose daemons still run is refused; stop ends them; pids not ours are ignored. */
class DirInUseTest {
  @TempDir
  Path dir;
  private Process fake;
  private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
  private final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);

  /** A JVM that looks like daemon {@code name} of the cluster in {@code dir}. */
  private Process fakeDaemon(String name) throws Exception {
    ClusterLayout layout = new ClusterLayout(dir);
    Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        Daemons.marker(layout, name), "-Xmx32m", "-cp", System.getProperty("java.class.path"),
        Sleeper.class.getName()).redirectErrorStream(true).redirectOutput(new File("/dev/null")).start();
    // until its command line is readable
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (Daemons.allOf(layout).isEmpty() && System.nanoTime() < end) {
      Thread.sleep(20);
    }
    return p;
  }

  @AfterEach
  void kill() throws InterruptedException {
    if (fake != null) {
      fake.destroyForcibly();
      fake.waitFor(10, TimeUnit.SECONDS);
    }
  }

  private ClusterState recorded(long nnPid) {
    ClusterState s = ClusterStateTest.sample();
    return s.withDaemons(s.nameNode().withProcess(nnPid, 0), s.dataNodes().stream().map(DaemonState::withoutProcess).toList());
  }

  @Test
  void aRecordedLiveDaemonMakesTheDirInUse() throws Exception {
    fake = fakeDaemon("nn");
    ClusterManager m = new ClusterManager(dir, out);
    ClusterState st = recorded(fake.pid());
    st.store(m.layout().stateFile());
    ClusterException e = assertThrows(ClusterException.class, () -> m.checkNotRunning(st));
    assertTrue(e.getMessage().contains("in use by a running cluster (nn pid " + fake.pid() + ")"), e.getMessage());
    // start refuses before touching anything
    StartOptions o = new StartOptions(0, null, null, 0, null, Map.of(), 5000, "");
    e = assertThrows(ClusterException.class, () -> m.start(o));
    assertTrue(e.getMessage().contains("in use"), e.getMessage());
    assertTrue(fake.isAlive());

    assertTrue(m.stop(10_000));
    assertTrue(fake.waitFor(10, TimeUnit.SECONDS), "stop sent SIGTERM");
    assertTrue(bytes.toString(StandardCharsets.UTF_8).contains("stopped nn (pid " + fake.pid() + ")"));
    ClusterState after = ClusterState.load(m.layout().stateFile());
    assertEquals(ClusterState.STOPPED, after.phase());
    assertEquals(0, after.nameNode().pid());
    m.checkNotRunning(after);
    assertFalse(m.stop(1000), "stop is idempotent");
  }

  @Test
  void anUnrecordedJvmOfTheDirIsFoundToo() throws Exception {
    fake = fakeDaemon("dn1");
    ClusterManager m = new ClusterManager(dir, out);
    ClusterException e = assertThrows(ClusterException.class, () -> m.checkNotRunning(null));
    assertTrue(e.getMessage().contains("unrecorded JVM pid " + fake.pid()), e.getMessage());
    m.stop(10_000);
    assertTrue(fake.waitFor(10, TimeUnit.SECONDS));
  }

  @Test
  void aReusedPidIsNotOurs() throws Exception {
    ClusterManager m = new ClusterManager(dir, out);
    // this test JVM is alive but carries no marker of dir
    ClusterState st = recorded(ProcessHandle.current().pid());
    m.checkNotRunning(st);
    assertTrue(Daemons.find(m.layout(), st.nameNode()).isEmpty());
    StatusReport r = m.statusOf(st);
    assertFalse(r.daemons().get(0).alive());
  }

  @Test
  void aSecondCommandOnTheSameDirIsRefusedWhileOneWorks() throws Exception {
    ClusterManager m = new ClusterManager(dir, out);
    try (ClusterManager.DirLock l = ClusterManager.DirLock.acquire(m.layout())) {
      l.held();
      ClusterException e = assertThrows(ClusterException.class, () -> m.stop(1000));
      assertTrue(e.getMessage().contains("another 'hrdma cluster' command"), e.getMessage());
    }
    m.stop(1000);
  }

  @Test
  void stopOfANonexistentDirSaysSo() throws Exception {
    ClusterManager m = new ClusterManager(dir.resolve("nothing"), out);
    assertFalse(m.stop(1000));
    assertTrue(bytes.toString(StandardCharsets.UTF_8).contains("does not exist"));
    assertEquals(List.of(), Daemons.allOf(m.layout()));
  }
}
