package org.hdfsrdma.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.hdfsrdma.transport.TransportConf;
import org.junit.jupiter.api.Test;
import org.hdfsrdma.tools.UsageException;

class PerfOptionsTest {
  private static String error(String... args) {
    return assertThrows(UsageException.class, () -> PerfOptions.parse(args)).getMessage();
  }

  @Test
  void defaults() {
    PerfOptions o = PerfOptions.parse();
    assertEquals(List.of("send_bw"), o.tests);
    assertEquals(List.of("tcp"), o.transports);
    assertEquals(PerfOptions.Mode.LOOPBACK, o.mode);
    assertEquals(1, o.runsOrDefault());
    assertEquals(List.of(1 << 20), o.sizesFor("send_bw"));
    assertEquals(List.of(8), o.sizesFor("send_lat"));
    assertEquals(8192, o.itersFor("send_bw", 1 << 20));
    assertEquals(100_000, o.itersFor("send_bw", 8));
    assertEquals(10_000, o.itersFor("send_lat", 8));
    assertFalse(o.json);
    assertNull(o.ucxTls);
  }

  @Test
  void parsesEverything() {
    PerfOptions o = PerfOptions.parse("send_lat", "--test", "write_bw,read_bw", "--transport",
        "ucx,stream", "--size", "8,64K", "--iters", "10K", "--warmup=0", "--window", "16",
        "--runs", "5", "--client", "node2:9000", "--json", "--ucx-tls", "sm,tcp",
        "--conf", "hrdma.transport.credits=128");
    assertEquals(List.of("send_lat", "write_bw", "read_bw"), o.tests);
    assertEquals(List.of("ucx", "stream"), o.transports);
    assertEquals(List.of(8, 65536), o.sizes);
    assertEquals(10240L, o.iters);
    assertEquals(0L, o.warmup);
    assertEquals(16, o.window);
    assertEquals(5, o.runsOrDefault());
    assertEquals(PerfOptions.Mode.CLIENT, o.mode);
    assertEquals("node2", o.host);
    assertEquals(9000, o.port);
    assertTrue(o.json);
    assertEquals("sm,tcp", o.ucxTls);
    assertEquals("128", o.conf.get("hrdma.transport.credits"));
  }

  @Test
  void compareModes() {
    PerfOptions o = PerfOptions.parse("compare");
    assertTrue(o.compare);
    assertTrue(o.tests.isEmpty());
    assertEquals(3, o.runsOrDefault());
    assertTrue(PerfOptions.parse("--compare", "--runs", "1").compare);
    assertTrue(error("--compare", "--server").contains("compare"));
  }

  @Test
  void clearErrors() {
    assertTrue(error("ping_bw").contains("unknown test 'ping_bw'"));
    assertTrue(error("--test", "foo").contains("known: send_bw"));
    assertTrue(error("--size", "12Q").contains("bad size '12Q'"));
    assertTrue(error("--size").contains("--size needs a value"));
    assertTrue(error("--size", "--json").contains("--size needs a value"));
    assertTrue(error("--iters", "many").contains("--iters"));
    assertTrue(error("--iters", "0").contains("positive"));
    assertTrue(error("--transport", "rdma").contains("unknown transport 'rdma'"));
    assertTrue(error("--client", "h:99999").contains("bad port"));
    assertTrue(error("--server", "--client", "h").contains("exclude"));
    assertTrue(error("--conf", "novalue").contains("KEY=VALUE"));
    assertTrue(error("--frobnicate").contains("unknown option '--frobnicate'"));
    assertTrue(error("--ucx-tls", "tcp;rm -rf").contains("--ucx-tls"));
  }

  @Test
  void clientHostForms() {
    assertEquals(PerfOptions.DEFAULT_PORT, PerfOptions.parse("--client", "host").port);
    PerfOptions v6 = PerfOptions.parse("--client", "[fe80::1]:7000");
    assertEquals("fe80::1", v6.host);
    assertEquals(7000, v6.port);
    assertEquals("fe80::1", PerfOptions.parse("--client", "fe80::1").host);
  }

  @Test
  void serverOrderIsTheTransportsGivenElseTheConfiguredOrder() {
    TransportConf all = Perf.serverConf(PerfOptions.parse("--server"));
    assertEquals(List.of("ucx", "stream", "tcp"), all.order());
    TransportConf some = Perf.serverConf(PerfOptions.parse("--server", "--transport", "stream",
        "--ucx-tls", "tcp", "--conf", "hrdma.transport.order=tcp"));
    assertEquals(List.of("stream"), some.order());
    assertEquals("TLS=tcp", some.get(TransportConf.UCX_CONFIG_KEY, null));
    assertEquals(List.of("tcp"), Perf.serverConf(PerfOptions.parse("--server", "--conf",
        "hrdma.transport.order=tcp")).order());
  }

  @Test
  void loopbackChildGetsTheSameSettings() {
    PerfOptions o = PerfOptions.parse("--transport", "ucx", "--ucx-tls", "sm,tcp", "--conf",
        "hrdma.transport.credits=128");
    assertFalse(o.sameProcess);
    List<String> cmd = Perf.Bench.serveCommand(o, "ucx", o.ucxTls, 4711);
    int main = cmd.indexOf(org.hdfsrdma.tools.Main.class.getName()); // serve is a tool
    assertEquals(System.getProperty("java.class.path"), cmd.get(main - 1));
    assertEquals(List.of("serve", "--port", "4711", "--transport", "ucx", "--ucx-tls", "sm,tcp",
        "--conf", "hrdma.transport.credits=128"), cmd.subList(main + 1, cmd.size()));
    assertTrue(PerfOptions.parse("--same-process").sameProcess);
    assertTrue(error("--same-process", "--client", "h").contains("--same-process"));
  }

  @Test
  void perfExitsTwoOnBadUsage() {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int rc = Perf.run(new String[] {"--size", "12Q"}, new PrintStream(out),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    assertEquals(2, rc);
    assertTrue(err.toString(StandardCharsets.UTF_8).contains("bad size '12Q'"));
  }
}
