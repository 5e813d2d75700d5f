package org.hdfsrdma.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ClusterStateTest {
  static ClusterState sample() {
    return new ClusterState(ClusterState.RUNNING, "hdfs://127.0.0.1:20001", 1000, "ucx,tcp", "-Xmx1g -Dx=y",
        Map.of("dfs.blocksize", "1048576", "odd.key", "a=b:c#d\\e"),
        DaemonState.nameNode(20001, 20002).withProcess(111, 1234567L),
        List.of(DaemonState.dataNode(1, 20010, 20011, 20012, 21010).withProcess(222, 7654321L),
            DaemonState.dataNode(2, 20020, 20021, 20022, 21020)));
  }

  @Test
  void roundTripsThroughText() throws IOException {
    ClusterState s = sample();
    ClusterState back = ClusterState.parse(s.toText());
    assertEquals(s, back);
    assertEquals(111, back.nameNode().pid());
    assertEquals(21010, back.dataNodes().get(0).pluginPort());
    assertEquals(0, back.dataNodes().get(1).pid());
    assertEquals("a=b:c#d\\e", back.extraConf().get("odd.key"));
  }

  @Test
  void hostsOfPlacedDaemonsRoundTrip() throws IOException {
    ClusterState s = sample();
    ClusterState placed = new ClusterState(s.phase(), "hdfs://10.213.5.2:20001", s.portOffset(), s.transportOrder(),
        s.jvmOpts(), s.extraConf(), s.nameNode(), s.dataNodes(), Map.of("nn", "10.213.5.2", "dn2", "10.213.5.12"));
    ClusterState back = ClusterState.parse(placed.toText());
    assertEquals(placed, back);
    assertEquals("10.213.5.12", back.host("dn2"));
    assertEquals(ClusterConfig.HOST, back.host("dn1"));
    // a local cluster's text has no host lines (the format of earlier starts)
    assertTrue(!s.toText().contains(".host="), s.toText());
  }

  @Test
  void storesAtomicallyAndLoads(@TempDir Path dir) throws IOException {
    Path f = dir.resolve("cluster.properties");
    assertNull(ClusterState.load(f));
    sample().store(f);
    assertEquals(sample(), ClusterState.load(f));
    assertTrue(Files.readString(f).contains("fs.defaultFS=hdfs\\://127.0.0.1\\:20001")
        || Files.readString(f).contains("fs.defaultFS=hdfs://127.0.0.1:20001"));
    assertEquals(List.of("cluster.properties"), Files.list(dir).map(p -> p.getFileName().toString()).toList());
  }

  @Test
  void withoutProcessesKeepsPortsDropsPids() {
    ClusterState s = sample().withoutProcesses().withPhase(ClusterState.STOPPED);
    assertTrue(s.daemons().stream().allMatch(d -> d.pid() == 0 && d.startMillis() == 0));
    assertEquals(20010, s.dataNodes().get(0).xferPort());
    assertEquals(ClusterState.STOPPED, s.phase());
  }

  @Test
  void malformedFilesNameTheProblem(@TempDir Path dir) throws IOException {
    String good = sample().toText();
    IOException e = assertThrows(IOException.class, () -> ClusterState.parse(good.replace("dn2.xfer.port=20020\n", "")));
    assertTrue(e.getMessage().contains("dn2.xfer.port"), e.getMessage());
    e = assertThrows(IOException.class, () -> ClusterState.parse(good.replace("nn.pid=111", "nn.pid=x")));
    assertTrue(e.getMessage().contains("nn.pid"), e.getMessage());
    e = assertThrows(IOException.class, () -> ClusterState.parse(good.replace("state=running", "state=odd")));
    assertTrue(e.getMessage().contains("odd"), e.getMessage());
    e = assertThrows(IOException.class, () -> ClusterState.parse(good.replace("datanodes=2", "datanodes=0")));
    assertTrue(e.getMessage().contains("datanodes"), e.getMessage());
    Path f = dir.resolve("cluster.properties");
    Files.writeString(f, "state=running\n");
    e = assertThrows(IOException.class, () -> ClusterState.load(f));
    assertTrue(e.getMessage().contains(f.toString()) && e.getMessage().contains("remove that file"), e.getMessage());
  }
}
