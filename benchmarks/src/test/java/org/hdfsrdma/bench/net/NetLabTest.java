package org.hdfsrdma.bench.net;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The emulated network: real namespaces, veth links, a bridge and tc (as root, which
 * the test machines are). Every test uses its own tag and checks that nothing of that
 * tag is left, whatever happened: after a failure while building, after close, after
 * SIGTERM of the JVM that built it, and through {@code bench netns cleanup}.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class NetLabTest {
  private final String tag = NetLab.newTag();
  private final PrintStream quiet = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);

  private List<String> leftovers() {
    List<String> l = new java.util.ArrayList<>();
    NetLab.ourNamespaces().stream().filter(n -> n.startsWith(NetLab.NS_PREFIX + tag + "-")).forEach(l::add);
    NetLab.ourLinks().stream().filter(n -> n.startsWith(NetLab.LINK_PREFIX + tag)).forEach(l::add);
    return l;
  }

  @AfterEach
  void nothingLeft() {
    List<String> left = leftovers();
    NetLab.cleanupAll(tag);
    assertEquals(List.of(), left, "left behind by the test");
  }

  @Test
  void failureWhileBuildingRemovesWhatWasCreated() {
    // the third role's link name is longer than the kernel's 15 characters: 'ip link add' fails
    // after two namespaces, their links and the bridge exist
    IOException e = assertThrows(IOException.class,
        () -> NetLab.create(tag, List.of("nn", "dn1", "averyveryverylongrole"), 1, quiet));
    assertTrue(e.getMessage().contains("ip link add " + NetLab.LINK_PREFIX + tag + "averyveryverylongrole"),
        e.getMessage());
    assertEquals(List.of(), leftovers());
  }

  @Test
  void shapedLinksCarryTrafficBetweenNamespacesAndCloseRemovesThem() throws Exception {
    try (NetLab lab = NetLab.create(tag, List.of("nn", "cl", "dn1"), 1, quiet)) {
      assertEquals(List.of(lab.namespace("cl"), lab.namespace("dn1"), lab.namespace("nn")),
          NetLab.ourNamespaces().stream().filter(n -> n.contains(tag)).sorted().toList());
      String qdisc = NetLab.Sh.run(List.of("tc", "-n", lab.namespace("dn1"), "qdisc", "show", "dev", NetLab.IFACE));
      assertTrue(qdisc.contains("tbf") && qdisc.contains("rate 1Gbit"), qdisc);
      String host = NetLab.Sh.run(List.of("tc", "qdisc", "show", "dev", lab.hostLink("dn1")));
      assertTrue(host.contains("tbf") && host.contains("rate 1Gbit"), host);
      // client namespace -> DataNode namespace over the bridge, at the shaped rate (iperf3, 1 s)
      List<String> server = new java.util.ArrayList<>(lab.prefix("dn1"));
      server.addAll(List.of("iperf3", "-s", "-1", "-B", lab.address("dn1"), "-p", "5201"));
      Process s = new ProcessBuilder(server).redirectErrorStream(true).start();
      try {
        List<String> client = new java.util.ArrayList<>(lab.prefix("cl"));
        client.addAll(List.of("iperf3", "-c", lab.address("dn1"), "-p", "5201", "-t", "2", "-J"));
        String json = null;
        for (int attempt = 0; json == null; attempt++) {
          try {
            json = NetLab.Sh.run(client);
            if (json.contains("Connection refused") && attempt <= 20) {
              json = null; // iperf3 -J reports the refusal in its JSON: the server is not listening yet
              Thread.sleep(100);
            }
          } catch (IOException e) {
            if (attempt > 20) {
              throw e;
            }
            Thread.sleep(100); // the server is not listening yet
          }
        }
        java.util.regex.Matcher m = java.util.regex.Pattern.compile(
            "\"sum_received\":\\s*\\{[^}]*\"bits_per_second\":\\s*([0-9.e+]+)").matcher(json);
        assertTrue(m.find(), json);
        double gbit = Double.parseDouble(m.group(1)) / 1e9;
        assertTrue(gbit > 0.5 && gbit < 1.05, "shaped to 1 Gbit/s, measured " + gbit);
      } finally {
        s.destroyForcibly();
      }
      assertEquals(lab.address("dn1"), lab.hosts().get("dn1"));
      assertFalse(lab.hosts().containsKey("cl"));
      assertEquals(List.of("ip", "netns", "exec", lab.namespace("nn")), lab.prefixes().get("nn"));
    }
    assertEquals(List.of(), leftovers());
  }

  @Test
  void cleanupCommandRemovesWhatAKilledRunLeft() throws Exception {
    NetLab lab = NetLab.create(tag, List.of("nn", "dn1"), 0, quiet);
    // a process still running inside, as a daemon of a killed run would be
    List<String> cmd = new java.util.ArrayList<>(lab.prefix("dn1"));
    cmd.addAll(List.of("sleep", "600"));
    Process sleeper = new ProcessBuilder(cmd).start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!NetLab.Sh.quiet(List.of("ip", "netns", "pids", lab.namespace("dn1"))).contains(
        Long.toString(sleeper.pid())) && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int rc = NetnsMain.run(new String[] {"cleanup", "--tag", tag}, new PrintStream(out, true,
        StandardCharsets.UTF_8), quiet);
    assertEquals(0, rc);
    String o = out.toString(StandardCharsets.UTF_8);
    assertTrue(o.contains("netns " + lab.namespace("dn1")) && o.contains("link " + lab.bridge()), o);
    assertTrue(sleeper.waitFor(10, TimeUnit.SECONDS), "the process in the namespace was killed");
    assertEquals(List.of(), leftovers());
    lab.close(); // idempotent over what cleanup removed
  }

  @Test
  void sigtermOfTheOwnerRunsTheCleanup() throws Exception {
    List<String> cmd = List.of(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java",
        "-cp", System.getProperty("java.class.path"), NetLabHolder.class.getName(), tag);
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = r.readLine()) != null && !line.equals("ready")) {
        // the lab's own log line
      }
      assertEquals("ready", line);
      assertFalse(leftovers().isEmpty());
      p.destroy(); // SIGTERM, as Ctrl-C's SIGINT: the JVM runs its shutdown hooks
      assertTrue(p.waitFor(30, TimeUnit.SECONDS));
    } finally {
      p.destroyForcibly();
    }
    assertEquals(List.of(), leftovers());
  }

  @Test
  void listAndUsage() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8);
    assertEquals(0, NetnsMain.run(new String[] {"list"}, ps, ps));
    assertTrue(out.toString(StandardCharsets.UTF_8).startsWith("namespaces: "));
    assertEquals(2, NetnsMain.run(new String[0], ps, ps));
    assertEquals(2, NetnsMain.run(new String[] {"cleanup", "--tag", "xyz"}, ps, ps));
    assertEquals(2, NetnsMain.run(new String[] {"remove"}, ps, ps));
  }

  @Test
  void tbfCommand() {
    assertEquals(List.of("tc", "qdisc", "replace", "dev", "hr0", "root", "tbf", "rate", "10000000000bit", "burst",
        "1250000", "latency", "50ms"), NetLab.tbf(List.of("tc"), "hr0", 10));
    // at least one 64 KiB segment of burst at low rates
    assertEquals("65536", NetLab.tbf(List.of("tc"), "hr0", 0.1).get(10));
    assertEquals("unshaped", NetLab.rateText(0));
    assertEquals("40 Gbit/s", NetLab.rateText(40));
  }
}
