package org.hdfsrdma.bench.mr;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.hdfsrdma.tools.UsageException;
import org.junit.jupiter.api.Test;

class MrOptionsTest {
  private static String error(String command, String... args) {
    return assertThrows(UsageException.class, () -> MrBench.points(MrOptions.parse(command, args))).getMessage();
  }

  @Test
  void defaultsAndQuick() {
    MrOptions d = MrOptions.parse("dfsio", new String[0]);
    assertEquals(4, d.files());
    assertEquals(256L << 20, d.fileBytes());
    assertEquals(128L << 20, d.blockBytes());
    assertEquals(3, d.dataNodes());
    assertEquals(3, d.replication());
    assertEquals(3, d.runs());
    MrOptions q = MrOptions.parse("dfsio", new String[] {"--quick"});
    assertEquals(2, q.files());
    assertEquals(16L << 20, q.fileBytes());
    assertEquals(2, q.runs());
    MrOptions o = MrOptions.parse("sort", new String[] {"--quick", "--runs=5", "--datanodes", "2", "--transport",
        "ucx,tcp", "--conf", "a.b=c", "--no-validate"});
    assertEquals(5, o.runs());
    assertEquals(2, o.replication());
    assertFalse(o.validate());
    assertEquals("ucx,tcp", o.clusterConf().get("hrdma.transport.order"));
    assertEquals("c", o.clusterConf().get("a.b"));
    assertFalse(o.mini());
    assertTrue(MrOptions.parse("dfsio", new String[] {"--mini"}).mini());
    assertFalse(d.clusterConf().containsKey("dfs.encrypt.data.transfer"));
    MrOptions e = MrOptions.parse("dfsio", new String[] {"--encrypt", "--conf", "hrdma.client.read.local=false"});
    assertEquals("true", e.clusterConf().get("dfs.encrypt.data.transfer"));
    assertEquals("AES/CTR/NoPadding", e.clusterConf().get("dfs.encrypt.data.transfer.cipher.suites"));
    assertEquals("true", e.clusterConf().get("dfs.block.access.token.enable"));
    assertEquals("false", e.clusterConf().get("hrdma.client.read.local"));
  }

  @Test
  void badInputSaysWhat() {
    assertTrue(error("dfsio", "--files", "0").contains("--files must be 1..64, not 0"));
    assertTrue(error("dfsio", "--files", "x").contains("--files takes a whole number, not 'x'"));
    assertTrue(error("dfsio", "--size", "12Q").contains("--size takes a size like 16M or 1G, not '12Q'"));
    assertTrue(error("dfsio", "--size", "100K").contains("--size must be 1M.."));
    assertTrue(error("dfsio", "--block-size", "3000000").contains("whole number of MiB"));
    assertTrue(error("dfsio", "--datanodes", "2", "--replication", "3").contains("--replication 3 needs at least"
        + " 3 DataNodes"));
    assertTrue(error("dfsio", "--transport", "rdma").contains("--transport takes a list of ucx, stream, tcp"));
    assertTrue(error("dfsio", "--net", "fast").contains("--net takes rates in Gbit/s"));
    assertTrue(error("dfsio", "--net", "1,1").contains("--net lists 1 twice"));
    assertTrue(error("dfsio", "--net", "-3").contains("--net rates must be"));
    assertTrue(error("dfsio", "--yarn", "rm").contains("--yarn takes the ResourceManager's HOST:PORT"));
    assertTrue(error("dfsio", "--yarn", "rm:8032", "--net", "1").contains("exclude each other"));
    assertTrue(error("dfsio", "--runs").contains("--runs needs a value"));
    assertTrue(error("dfsio", "--mini", "--net", "1").contains("--mini starts the cluster in this JVM"));
    assertTrue(error("dfsio", "--mini=1").contains("--mini takes no value"));
    assertTrue(error("dfsio", "--frobnicate").contains("unknown option --frobnicate"));
    assertTrue(error("dfsio", "extra").contains("unexpected argument 'extra'"));
    assertTrue(error("dfsio", "--quick=yes").contains("--quick takes no value"));
    assertTrue(error("dfsio", "--encrypt=aes").contains("--encrypt takes no value"));
    assertTrue(error("dfsio", "--no-validate").contains("an option of 'bench sort'"));
    assertTrue(error("dfsio", "--sweep", "clients=1,2").contains("an option of 'bench sweep'"));
    assertTrue(error("sweep", "--sweep", "color=1,2").contains("NAME one of block-size, datanodes, clients,"
        + " replication"));
    assertTrue(error("sweep", "--sweep", "clients=4").contains("needs at least two values"));
    assertTrue(error("sweep", "--sweep", "clients=1,1").contains("lists 1 twice"));
    assertTrue(error("sweep", "--sweep", "clients=1,2", "--sweep", "clients=3,4").contains("given twice"));
    assertTrue(error("sweep", "--sweep", "replication=1,4").contains("needs --datanodes 4 or more"));
    assertTrue(error("sweep", "--job", "terasort").contains("--job must be one of dfsio, randomwriter, sort"));
    assertTrue(error("sweep", "--net", "1,10").contains("give --net one rate"));
    assertTrue(error("dfsio", "--cluster", "/no/such/site.xml").contains("--cluster: cannot read /no/such/site.xml"));
  }

  @Test
  void aRunningCluster(@org.junit.jupiter.api.io.TempDir java.nio.file.Path tmp) throws Exception {
    java.nio.file.Path site = java.nio.file.Files.writeString(tmp.resolve("hdfs-site.xml"), "<configuration/>");
    MrOptions o = MrOptions.parse("sweep", new String[] {"--cluster", site.toString()});
    assertEquals(site, o.cluster());
    // its DataNodes are not ours to start: no datanodes sweep
    assertEquals(List.of("block-size", "clients", "replication"), List.copyOf(o.sweep().keySet()));
    assertTrue(error("dfsio", "--cluster", site.toString(), "--net", "1").contains("--cluster uses a running"));
    assertTrue(error("sweep", "--cluster", site.toString(), "--sweep", "datanodes=3,4").contains("cannot be swept"));
    assertTrue(error("dfsio", "--encrypt", "--cluster", site.toString()).contains("--encrypt configures the cluster"));
  }

  @Test
  void sweepPoints() {
    List<Point> pts = MrBench.points(MrOptions.parse("sweep", new String[] {"--sweep", "datanodes=3,4",
        "--sweep", "block-size=4M,1G"}));
    // the block-size points share the first cluster; the datanodes points come last
    assertEquals(List.of("block-size=4M", "block-size=1G", "datanodes=3", "datanodes=4"),
        pts.stream().map(Point::label).toList());
    assertEquals(1L << 30, pts.get(1).blockBytes());
    assertEquals(4, pts.get(3).dataNodes());
    assertTrue(pts.get(0).sameCluster(pts.get(1)));
    assertFalse(pts.get(2).sameCluster(pts.get(3)));
    List<Point> all = MrBench.points(MrOptions.parse("sweep", new String[] {"--quick"}));
    assertEquals(List.of("block-size", "clients", "replication", "datanodes"),
        all.stream().map(Point::param).distinct().toList());
    List<Point> nets = MrBench.points(MrOptions.parse("dfsio", new String[] {"--net", "1,10g,0"}));
    assertEquals(List.of("net=1 Gbit/s", "net=10 Gbit/s", "net=unshaped"), nets.stream().map(Point::label).toList());
    assertEquals(0, nets.get(2).gbit());
  }

  @Test
  void exitCodeTwoAndUsageOnStderr() {
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    ByteArrayOutputStream e = new ByteArrayOutputStream();
    int rc = MrBench.run("dfsio", new String[] {"--clients", "-1"}, new PrintStream(o), new PrintStream(e));
    String err = e.toString(StandardCharsets.UTF_8);
    assertEquals(2, rc);
    assertTrue(err.startsWith("hrdma bench dfsio: --clients must be 1..64, not -1"), err);
    assertTrue(err.contains("usage: hrdma bench dfsio"), err);
    assertEquals(2, MrBench.run("terasort", new String[0], new PrintStream(o), new PrintStream(e)));
    assertEquals(0, MrBench.run("sweep", new String[] {"--help"}, new PrintStream(o), new PrintStream(e)));
    assertTrue(o.toString(StandardCharsets.UTF_8).contains("usage: hrdma bench sweep"));
  }
}
