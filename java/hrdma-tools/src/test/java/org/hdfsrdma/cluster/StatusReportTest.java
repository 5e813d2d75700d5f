package org.hdfsrdma.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.hdfsrdma.cluster.StatusReport.DaemonStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StatusReportTest {
  private static final DaemonState NN = DaemonState.nameNode(20001, 20002).withProcess(11, 0);
  private static final DaemonState DN1 = DaemonState.dataNode(1, 20010, 20011, 20012, 21010).withProcess(12, 0);
  private static final DaemonState DN2 = DaemonState.dataNode(2, 20020, 20021, 20022, 21020).withProcess(13, 0);

  private static StatusReport report(DaemonStatus... rows) {
    return new StatusReport("/d", ClusterState.RUNNING, "hdfs://127.0.0.1:20001", "off", List.of(rows));
  }

  @Test
  void healthyOnlyWhenEveryDaemonIs() {
    DaemonStatus nn = new DaemonStatus(NN, true, StatusReport.UP, null);
    DaemonStatus dn1 = new DaemonStatus(DN1, true, StatusReport.LIVE, true);
    DaemonStatus dn2 = new DaemonStatus(DN2, true, StatusReport.LIVE, true);
    assertTrue(report(nn, dn1, dn2).healthy());
    assertFalse(report(nn, dn1, new DaemonStatus(DN2, true, StatusReport.LIVE, false)).healthy(), "plugin down");
    assertFalse(report(nn, dn1, new DaemonStatus(DN2, true, StatusReport.DEAD, true)).healthy(), "dead at the NN");
    assertFalse(report(nn, dn1, new DaemonStatus(DN2, false, StatusReport.LIVE, true)).healthy(), "pid gone");
    assertFalse(report(new DaemonStatus(NN, true, "no answer", null), dn1, dn2).healthy());
    assertFalse(report().healthy(), "nothing is not healthy");
  }

  @Test
  void formatsOneLinePerDaemon() {
    String text = report(new DaemonStatus(NN, true, StatusReport.UP, null),
        new DaemonStatus(DN1, true, StatusReport.LIVE, true),
        new DaemonStatus(DN2, false, StatusReport.UNKNOWN, false)).format();
    String[] lines = text.split("\n");
    assertEquals(6, lines.length, text);
    assertTrue(lines[0].contains("fs.defaultFS hdfs://127.0.0.1:20001"), text);
    assertTrue(lines[2].matches("nn\\s+11\\s+yes\\s+up\\s+-\\s+ok\\s+rpc 20001, http 20002"), lines[2]);
    assertTrue(lines[3].matches("dn1\\s+12\\s+yes\\s+live\\s+yes\\s+ok\\s+xfer 20010, ipc 20011, http 20012, plugin 21010"),
        lines[3]);
    assertTrue(lines[4].matches("dn2\\s+13\\s+no\\s+unknown\\s+no\\s+BAD\\s+.*"), lines[4]);
    assertEquals("NOT healthy", lines[5]);
  }

  @Test
  void formatsTheDataNodesVolumes() {
    org.hdfsrdma.datanode.disk.DiskStatus.Volume v = new org.hdfsrdma.datanode.disk.DiskStatus.Volume("DS-1",
        "rotational", 3, 1, 1000, 20, 900, 250e6, 24 << 20, 2.0, 1, 0, 0, 0, 10, 240L << 20, 5);
    String text = report(new DaemonStatus(NN, true, StatusReport.UP, null),
        new DaemonStatus(DN1, true, StatusReport.LIVE, true, List.of(v))).format();
    String[] lines = text.split("\n");
    assertTrue(lines[4].startsWith("disk schedulers"), text);
    assertTrue(lines[5].contains("p50[us]") && lines[5].contains("ext/blk"), text);
    assertEquals("dn1", lines[6]);
    assertTrue(lines[7].matches("\\s+DS-1\\s+rotational\\s+3\\s+1\\s+1000\\s+20\\s+900\\s+250.0\\s+24.00\\s+2.00\\s+1\\s+0/0\\s+0"),
        lines[7]);
    assertEquals("healthy", lines[8]);
  }

  @Test
  void formatsThePluginsCounters() {
    org.hdfsrdma.datanode.PluginStatus.Figures f = new org.hdfsrdma.datanode.PluginStatus.Figures(3, 1, 40, 5, 1024,
        2, 1, 64_000_000, java.util.Map.of("ucx", 2L, "tcp", 1L));
    String text = report(new DaemonStatus(NN, true, StatusReport.UP, null),
        new DaemonStatus(DN1, true, StatusReport.LIVE, true, List.of(), f)).format();
    String[] lines = text.split("\n");
    assertEquals("plugins:", lines[4], text);
    assertEquals("dn1", lines[5]);
    assertEquals("  connections 3 (tcp 1, ucx 2), writes 1, buffers out 40, packets by reference 1024, prepared ahead 5,"
        + " segments 2 granted / 1 refused, 64.0 MB mapped", lines[6]);
    assertEquals("healthy", lines[7]);
  }

  @Test
  void statusOfAStoppedClusterFromItsFile(@TempDir Path dir) throws Exception {
    ClusterManager m = new ClusterManager(dir, new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
    ClusterException e = assertThrows(ClusterException.class, m::status);
    assertTrue(e.getMessage().startsWith("no cluster in"), e.getMessage());
    ClusterStateTest.sample().withoutProcesses().withPhase(ClusterState.STOPPED).store(m.layout().stateFile());
    StatusReport r = m.status();
    assertFalse(r.healthy());
    assertEquals(3, r.daemons().size());
    assertEquals("down", r.daemons().get(0).nameNodeView());
    assertEquals(StatusReport.UNKNOWN, r.daemons().get(1).nameNodeView());
    assertTrue(r.daemons().stream().noneMatch(DaemonStatus::alive));

    ByteArrayOutputStream o = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int rc = ClusterMain.run(new String[] {"status", "--dir", dir.toString()}, new PrintStream(o, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    assertEquals(1, rc);
    assertTrue(o.toString(StandardCharsets.UTF_8).contains("NOT healthy"));
  }
}
