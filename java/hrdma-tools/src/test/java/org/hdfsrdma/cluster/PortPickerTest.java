package org.hdfsrdma.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PortPickerTest {
  @Test
  void picksDistinctFreePortsBelowTheEphemeralRange() throws IOException {
    PortPicker p = PortPicker.forHost("127.0.0.1");
    assertTrue(p.high() < PortPicker.ephemeralRange()[0] || p.high() == 65535);
    Set<Integer> seen = new HashSet<>();
    for (int i = 0; i < 20; i++) {
      int port = p.pick();
      assertTrue(port >= p.low() && port <= p.high());
      assertTrue(seen.add(port), "picked twice: " + port);
    }
    int xfer = p.pickXferWithPlugin(1000, 0);
    assertFalse(seen.contains(xfer) || seen.contains(xfer + 1000));
    assertTrue(xfer + 1000 <= p.high(), "the plugin port stays in range when it can");
    assertEquals(22, p.reserved().size());
  }

  @Test
  void aBoundPortIsNotFreeAndIsNotReused() throws IOException {
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
      int busy = s.getLocalPort();
      assertFalse(PortPicker.canBind("127.0.0.1", busy));
      PortPicker p = PortPicker.forHost("127.0.0.1");
      assertFalse(p.tryReserve(busy));
      assertNotEquals(busy, p.reuseOrPick(busy), "a busy previous port is replaced");
    }
  }

  @Test
  void previousPortsAreKeptWhenFree() throws IOException {
    PortPicker p = new PortPicker(30000, 30100, port -> true, 1);
    assertEquals(30042, p.reuseOrPick(30042));
    assertEquals(30050, p.pickXferWithPlugin(10, 30050));
    assertTrue(p.reserved().containsAll(Set.of(30042, 30050, 30060)));
    assertNotEquals(30042, p.reuseOrPick(30042), "never twice");
    assertNotEquals(30050, p.pickXferWithPlugin(10, 30050), "never twice");
  }

  @Test
  void theXferPortIsOnlyTakenWhenItsPluginPortIsFreeToo() throws IOException {
    // every plugin candidate (xfer + 5) is busy except 30012; xfer 30007 is the only usable one
    Set<Integer> busy = new HashSet<>();
    for (int port = 30000; port <= 30020; port++) {
      if (port != 30012 && port != 30007) {
        busy.add(port);
      }
    }
    PortPicker p = new PortPicker(30000, 30020, port -> !busy.contains(port), 7);
    assertEquals(30007, p.pickXferWithPlugin(5, 30003));
    assertThrows(IOException.class, () -> p.pickXferWithPlugin(5, 0));
  }

  @Test
  void aFixedNameNodePortInUseIsAPortConflict() throws IOException {
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
      StartOptions o = new StartOptions(2, null, null, s.getLocalPort(), null, Map.of(), 1000, "");
      ClusterException e = assertThrows(ClusterException.class,
          () -> ClusterManager.plan(null, o, PortPicker.forHost("127.0.0.1")));
      assertTrue(e.getMessage().startsWith("port conflict: --namenode-port " + s.getLocalPort()), e.getMessage());
    }
  }

  @Test
  void planInheritsThePreviousStartAndItsPorts() throws Exception {
    ClusterState prev = ClusterStateTest.sample();
    PortPicker all = new PortPicker(20000, 22000, port -> true, 3);
    StartOptions none = new StartOptions(0, null, null, 0, null, Map.of("extra", "1"), 1000, "");
    ClusterState s = ClusterManager.plan(prev, none, all);
    assertEquals(2, s.dataNodes().size());
    assertEquals("ucx,tcp", s.transportOrder());
    assertEquals("-Xmx1g -Dx=y", s.jvmOpts());
    assertEquals("1", s.extraConf().get("extra"));
    assertEquals("1048576", s.extraConf().get("dfs.blocksize"));
    assertEquals(prev.fsDefaultFs(), s.fsDefaultFs());
    assertEquals(20010, s.dataNodes().get(0).xferPort());
    assertEquals(21010, s.dataNodes().get(0).pluginPort());
    assertEquals(0, s.nameNode().pid());

    StartOptions more = new StartOptions(3, "tcp", 500, 0, null, Map.of(), 1000, "");
    ClusterState t = ClusterManager.plan(prev, more, new PortPicker(20000, 22000, port -> true, 3));
    assertEquals(3, t.dataNodes().size());
    assertEquals("tcp", t.transportOrder());
    for (DaemonState d : t.dataNodes()) {
      assertEquals(d.xferPort() + 500, d.pluginPort());
    }
    assertThrows(ClusterException.class, () -> ClusterManager.plan(null,
        new StartOptions(1, null, 0, 0, null, Map.of(), 1000, ""), new PortPicker(20000, 22000, port -> true, 3)));
  }

  @Test
  void planPlacesDaemonsOnTheirHosts() throws Exception {
    StartOptions o = new StartOptions(2, null, null, 0, null, Map.of(), 1000, "",
        Map.of("nn", "10.213.9.2", "dn1", "10.213.9.11", "dn2", "10.213.9.12"),
        Map.of("dn1", List.of("ip", "netns", "exec", "hrdma-0000-dn1")));
    ClusterState s = ClusterManager.plan(null, o, new PortPicker(20000, 22000, port -> true, 3));
    assertTrue(s.fsDefaultFs().startsWith("hdfs://10.213.9.2:"), s.fsDefaultFs());
    assertEquals("10.213.9.12", s.host("dn2"));
    // without hosts: the local cluster, as before
    ClusterState local = ClusterManager.plan(null, new StartOptions(1, null, null, 0, null, Map.of(), 1000, ""),
        new PortPicker(20000, 22000, port -> true, 3));
    assertTrue(local.fsDefaultFs().startsWith("hdfs://127.0.0.1:"), local.fsDefaultFs());
    assertEquals(Map.of(), local.hosts());
  }
}
