package org.hdfsrdma.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import org.hdfsrdma.cluster.ClusterMain.Command;
import org.hdfsrdma.cluster.ClusterMain.UsageException;
import org.junit.jupiter.api.Test;

class ClusterMainTest {
  @Test
  void parsesStartOptions() throws Exception {
    Command c = ClusterMain.parse(new String[] {"start", "--dir", "/tmp/x", "--datanodes", "2",
        "--transport-order=ucx, tcp", "--port-offset", "500", "--namenode-port", "9000", "--conf", "a=b=c",
        "--conf", "dfs.blocksize=1048576", "--jvm-opts", "-Xmx2g -Dq=1", "--timeout", "60"});
    assertEquals("start", c.action());
    assertEquals(Path.of("/tmp/x"), c.dir());
    StartOptions o = c.start();
    assertEquals(2, o.dataNodes());
    assertEquals("ucx,tcp", o.transportOrder());
    assertEquals(500, o.portOffset());
    assertEquals(9000, o.nameNodePort());
    assertEquals(Map.of("a", "b=c", "dfs.blocksize", "1048576"), o.conf());
    assertEquals("-Xmx2g -Dq=1", o.jvmOpts());
    assertEquals(60_000, o.timeoutMs());
  }

  @Test
  void unsetOptionsStayUnsetForInheritance() throws Exception {
    StartOptions o = ClusterMain.parse(new String[] {"start", "--dir", "d"}).start();
    assertEquals(0, o.dataNodes());
    assertNull(o.transportOrder());
    assertNull(o.portOffset());
    assertNull(o.jvmOpts());
    assertEquals(StartOptions.DEFAULT_TIMEOUT_MS, o.timeoutMs());
    assertEquals(30_000, ClusterMain.parse(new String[] {"stop", "--dir", "d"}).stopTimeoutMs());
  }

  @Test
  void storageTypesBecomeASetting() throws Exception {
    StartOptions o = ClusterMain.parse(new String[] {"start", "--dir", "d", "--storage", "ssd, DISK"}).start();
    assertEquals(Map.of(ClusterConfig.STORAGE_TYPES_KEY, "SSD,DISK"), o.conf());
  }

  @Test
  void usageErrors() {
    for (String[] bad : new String[][] {{}, {"go", "--dir", "d"}, {"start"}, {"start", "--dir"},
        {"start", "--dir", "d", "--datanodes", "0"}, {"start", "--dir", "d", "--datanodes", "x"},
        {"start", "--dir", "d", "--conf", "novalue"}, {"start", "--dir", "d", "--transport-order", "a;b"},
        {"stop", "--dir", "d", "--datanodes", "2"}, {"status", "--dir", "d", "extra"},
        {"start", "--dir", "d", "--bogus", "1"}, {"start", "--dir", "d", "--namenode-port", "70000"},
        {"start", "--dir", "d", "--storage", "SSD,FLOPPY"}}) {
      assertThrows(UsageException.class, () -> ClusterMain.parse(bad), String.join(" ", bad));
    }
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int rc = ClusterMain.run(new String[] {"start"}, new PrintStream(new ByteArrayOutputStream()),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    assertEquals(2, rc);
    assertTrue(err.toString(StandardCharsets.UTF_8).contains("--dir DIR is required"));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    assertEquals(0, ClusterMain.run(new String[] {"--help"}, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err)));
    assertTrue(out.toString(StandardCharsets.UTF_8).contains("hrdma cluster start"));
  }
}
