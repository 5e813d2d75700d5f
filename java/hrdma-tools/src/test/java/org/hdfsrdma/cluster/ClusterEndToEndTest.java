package org.hdfsrdma.cluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.hdfsrdma.client.RdmaDistributedFileSystem;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The real thing: 'cluster start' with a NameNode and two DataNodes (three JVMs with the
 * plugin), our client (selected by client-site.xml) writing and reading, 'status',
 * 'stop' leaving no process, and a restart that keeps the data (no re-format).
 */
class ClusterEndToEndTest {
  private static final Path DIR = Path.of("target", "e2e-cluster").toAbsolutePath();
  /** Start-up speed over peak speed for three JVMs on two cores. */
  private static final String JVM_OPTS = "-Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC";

  private record Result(int rc, String out, String err) {}

  private static Result cli(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    long t0 = System.nanoTime();
    int rc = ClusterMain.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    Result r = new Result(rc, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    System.err.printf("== hrdma cluster %s: rc %d in %.1f s%n%s%s", String.join(" ", args), rc,
        (System.nanoTime() - t0) / 1e9, r.out(), r.err());
    return r;
  }

  private static void deleteTree(Path root) throws Exception {
    if (Files.exists(root)) {
      try (var s = Files.walk(root)) {
        for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
          Files.delete(p);
        }
      }
    }
  }

  private static final Path BAD_DIR = Path.of("target", "e2e-bad-cluster").toAbsolutePath();

  @AfterEach
  void noOrphans() throws Exception {
    for (Path d : List.of(DIR, BAD_DIR)) {
      List<ProcessHandle> left = Daemons.allOf(new ClusterLayout(d));
      if (!left.isEmpty()) {
        Daemons.stop(left, 5000);
      }
    }
  }

  /** A DataNode that dies during start: its log tail in the error, nothing left running. */
  @Test
  @Timeout(120)
  void aDaemonDyingDuringStartStopsEverything() throws Exception {
    deleteTree(BAD_DIR);
    useModuleClasspath();
    ClusterLayout layout = new ClusterLayout(BAD_DIR);
    // one data directory per DataNode: tolerating 5 failed volumes is invalid, the DataNode exits
    Result r = cli("start", "--dir", BAD_DIR.toString(), "--datanodes", "1", "--jvm-opts", JVM_OPTS,
        "--conf", "dfs.datanode.failed.volumes.tolerated=5", "--timeout", "80");
    assertEquals(1, r.rc());
    assertTrue(r.err().contains("dn1 (pid ") && r.err().contains("exited with code"), r.err());
    assertTrue(r.err().contains("last lines of " + layout.log("dn1")), r.err());
    assertTrue(r.err().contains("failed.volumes.tolerated"), r.err());
    assertTrue(r.out().contains("stopped what it had started"), r.out());
    assertEquals(List.of(), Daemons.allOf(layout));
    ClusterState st = ClusterState.load(layout.stateFile());
    assertEquals(ClusterState.STOPPED, st.phase());
    assertTrue(st.daemons().stream().allMatch(d -> d.pid() == 0));
  }

  private static FileSystem client() throws Exception {
    Configuration conf = new Configuration();
    conf.addResource(new org.apache.hadoop.fs.Path(new ClusterLayout(DIR).clientSite().toUri()));
    return FileSystem.newInstance(conf);
  }

  private static byte[] read(FileSystem fs, org.apache.hadoop.fs.Path p) throws Exception {
    try (FSDataInputStream in = fs.open(p)) {
      return in.readAllBytes();
    }
  }

  /** Sleeps; true, so it can end a wait loop's condition. */
  private static boolean sleep(long ms) throws InterruptedException {
    Thread.sleep(ms);
    return true;
  }

  private static String clusterId(ClusterLayout layout) throws Exception {
    return Files.readAllLines(layout.nameVersionFile()).stream().filter(l -> l.startsWith("clusterID=")).findFirst()
        .orElseThrow();
  }

  private static void useModuleClasspath() throws Exception {
    List<String> cp = new ArrayList<>(ClasspathTest.daemonClasspath());
    cp.add(0, Path.of("target", "classes").toAbsolutePath().toString()); // the web apps
    System.setProperty(ClusterMain.CLASSPATH_PROPERTY, String.join(File.pathSeparator, cp));
  }

  @Test
  @Timeout(170)
  void startWriteReadStatusStopRestart() throws Exception {
    deleteTree(DIR);
    useModuleClasspath();
    ClusterLayout layout = new ClusterLayout(DIR);
    String dir = DIR.toString();

    Result start = cli("start", "--dir", dir, "--datanodes", "2", "--jvm-opts", JVM_OPTS, "--timeout", "80");
    assertEquals(0, start.rc(), start.err());
    assertTrue(start.out().contains("(newly formatted)"), start.out());
    ClusterState st = ClusterState.load(layout.stateFile());
    assertEquals(ClusterState.RUNNING, st.phase());
    assertTrue(start.out().contains("fs.defaultFS=" + st.fsDefaultFs()), start.out());
    assertTrue(start.out().contains(layout.clientSite().toString()), start.out());
    List<Long> pids = st.daemons().stream().map(DaemonState::pid).toList();
    assertEquals(3, pids.size());
    assertEquals(3, Daemons.allOf(layout).size(), "three marked JVMs run");
    String clusterId = clusterId(layout);

    byte[] data = new byte[3 * 1024 * 1024 + 17];
    new Random(42).nextBytes(data);
    org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path("/e2e/data.bin");
    try (FileSystem fs = client()) {
      // client-site.xml selects our client, and our transport carries the bytes
      RdmaDistributedFileSystem rfs = assertInstanceOf(RdmaDistributedFileSystem.class, fs);
      try (FSDataOutputStream out = fs.create(file)) {
        out.write(data);
      }
      assertArrayEquals(data, read(fs, file));
      assertTrue(rfs.rdmaBytesWritten() >= data.length, "written over hrdma: " + rfs.rdmaBytesWritten());
      assertEquals(0, rfs.stockWriteFallbacks());
      assertTrue(rfs.rdmaBytesRead() + rfs.localBytesRead() >= data.length,
          "read over hrdma " + rfs.rdmaBytesRead() + ", short-circuit " + rfs.localBytesRead());
      assertEquals(0, rfs.stockBytesRead());
      FileStatus s = fs.getFileStatus(file);
      assertEquals(2, s.getReplication());
      // close() returns once the NameNode knows one replica of the last block (as stock's):
      // the pipeline's first DataNode finalizes and reports last, so wait for both reports
      long deadline = System.nanoTime() + 60_000_000_000L;
      int fewest;
      do {
        fewest = Integer.MAX_VALUE;
        for (BlockLocation b : fs.getFileBlockLocations(s, 0, s.getLen())) {
          fewest = Math.min(fewest, b.getHosts().length);
        }
      } while (fewest < 2 && System.nanoTime() < deadline && sleep(100));
      assertEquals(2, fewest, "replicated to both DataNodes");
    }

    Result status = cli("status", "--dir", dir);
    assertEquals(0, status.rc(), status.out());
    assertTrue(status.out().trim().endsWith("healthy") && !status.out().contains("NOT healthy"), status.out());
    assertEquals(2, status.out().lines().filter(l -> l.matches("dn\\d\\s+\\d+\\s+yes\\s+live\\s+yes\\s+ok.*")).count(),
        status.out());
    // each plugin's metrics2 bean, read over the DataNode's /jmx
    assertTrue(status.out().contains("plugins:"), status.out());
    assertEquals(2, status.out().lines().filter(l -> l.matches("\\s+connections \\d+.*segments \\d+ granted.*")).count(),
        status.out());

    Result again = cli("start", "--dir", dir);
    assertEquals(1, again.rc());
    assertTrue(again.err().contains("in use by a running cluster"), again.err());

    Result stop = cli("stop", "--dir", dir);
    assertEquals(0, stop.rc(), stop.err());
    for (long pid : pids) {
      assertFalse(ProcessHandle.of(pid).map(Daemons::isLive).orElse(false), "pid " + pid + " still alive");
    }
    assertEquals(List.of(), Daemons.allOf(layout));
    ClusterState stopped = ClusterState.load(layout.stateFile());
    assertEquals(ClusterState.STOPPED, stopped.phase());
    assertTrue(stopped.daemons().stream().allMatch(d -> d.pid() == 0));
    assertEquals(1, cli("status", "--dir", dir).rc());
    assertEquals(0, cli("stop", "--dir", dir).rc(), "stop is idempotent");

    Result restart = cli("start", "--dir", dir, "--timeout", "80");
    assertEquals(0, restart.rc(), restart.err());
    assertTrue(restart.out().contains("(data of the previous start kept)"), restart.out());
    assertFalse(restart.out().contains("formatting"), restart.out());
    assertEquals(clusterId, clusterId(layout), "not re-formatted");
    assertEquals(2, ClusterState.load(layout.stateFile()).dataNodes().size(), "--datanodes inherited");
    try (FileSystem fs = client()) {
      assertArrayEquals(data, read(fs, file));
    }
    List<Long> pids2 = ClusterState.load(layout.stateFile()).daemons().stream().map(DaemonState::pid).toList();
    assertEquals(0, cli("stop", "--dir", dir).rc());
    for (long pid : pids2) {
      assertFalse(ProcessHandle.of(pid).map(Daemons::isLive).orElse(false), "pid " + pid + " still alive");
    }
    assertEquals(List.of(), Daemons.allOf(layout));
  }
}
