package org.hdfsrdma.bench.mr;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.hdfsrdma.bench.net.NetLab;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Short real runs (tiny sizes, one run per path): Hadoop's programs on a NameNode and
 * DataNode JVMs with the plugin, through our client and the stock one.
 */
class MrEndToEndTest {
  @TempDir
  Path tmp;

  private record Run(int rc, String out, String err) {}

  private Run bench(String command, String... args) {
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    ByteArrayOutputStream e = new ByteArrayOutputStream();
    int rc = MrBench.run(command, args, new PrintStream(o, true, StandardCharsets.UTF_8),
        new PrintStream(e, true, StandardCharsets.UTF_8));
    Run r = new Run(rc, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
    System.out.println(r.out);
    System.err.println(r.err);
    return r;
  }

  private static void assertRow(String out, String point, String op, String metric) {
    assertTrue(out.lines().anyMatch(l -> l.matches(java.util.regex.Pattern.quote(point) + "\\s+\\w+\\s+" + op
        + "\\s+" + java.util.regex.Pattern.quote(metric) + "\\s+\\d.*")), point + " " + op + " " + metric + ":\n"
        + out);
  }

  private List<String> files(Path dir) throws Exception {
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }

  @Test
  @Timeout(value = 240, unit = TimeUnit.SECONDS)
  void dfsioOursAndStock() throws Exception {
    Path results = tmp.resolve("results");
    Run r = bench("dfsio", "--quick", "--runs", "1", "--files", "2", "--size", "8M", "--block-size", "4M",
        "--results", results.toString(), "--dir", tmp.resolve("c").toString());
    assertEquals(0, r.rc, r.err);
    for (String op : List.of("write", "read")) {
      for (String m : List.of("MB/s", "job s", "CPU s/GB")) {
        assertRow(r.out, "-", op, m);
      }
      // every byte of our client went over our transport
      assertTrue(r.out.lines().anyMatch(l -> l.matches("-\\s+dfsio\\s+" + op + "\\s+ours transport %\\s+100\\s.*")),
          r.out);
    }
    // TestDFSIO's own results log, 16 MiB in 2 files, one per path and op
    Path jobs = tmp.resolve("c").resolve("cluster-3").resolve("jobs");
    DfsioResult w = DfsioResult.parseLast(Files.readString(jobs.resolve("dfsio-ours-1-write.log")));
    assertEquals(2, w.files());
    assertEquals(16, w.totalMiB());
    assertEquals("read", DfsioResult.parseLast(Files.readString(jobs.resolve("dfsio-stock-1-read.log"))).op());
    List<String> f = files(results);
    assertEquals(6, f.size(), f.toString());
    assertTrue(f.contains("machine.txt"));
    String csv = Files.readString(results.resolve(f.stream().filter(x -> x.endsWith("-samples.csv")).findFirst()
        .orElseThrow()));
    assertEquals(1 + 4, csv.lines().count(), csv); // write and read, ours and stock
    assertTrue(r.err.contains("[####################] 2/2 dfsio stock run 1/1 |"), "progress line:\n" + r.err);
  }

  /**
   * --mini: the same job on a MiniDFSCluster in this JVM; its plugins share the JVM's transports
   * (one of each, not one per DataNode) and every byte of our client went through them.
   */
  @Test
  @Timeout(value = 240, unit = TimeUnit.SECONDS)
  void dfsioOnAMiniDfsClusterInThisJvm() throws Exception {
    Path results = tmp.resolve("results");
    long created = org.hdfsrdma.transport.select.SharedTransports.createdCount();
    Run r = bench("dfsio", "--mini", "--quick", "--runs", "1", "--files", "2", "--size", "8M", "--block-size",
        "4M", "--conf", "hrdma.datanode.share-transports=true", "--results", results.toString(), "--dir",
        tmp.resolve("c").toString());
    assertEquals(0, r.rc, r.err);
    assertTrue(r.out.contains("cluster=MiniDFSCluster (one JVM)"), r.out);
    for (String op : List.of("write", "read")) {
      assertRow(r.out, "-", op, "MB/s");
      assertRow(r.out, "-", op, "job s");
      assertTrue(r.out.lines().anyMatch(l -> l.matches("-\\s+dfsio\\s+" + op + "\\s+ours transport %\\s+100\\s.*")),
          r.out);
    }
    Path jobs = tmp.resolve("c").resolve("mini-3").resolve("jobs");
    assertEquals(16, DfsioResult.parseLast(Files.readString(jobs.resolve("dfsio-ours-1-read.log"))).totalMiB());
    // the three DataNodes' servers and forwarding connectors made one of each transport (ucx, stream, tcp
    // where UCX runs; tcp alone otherwise), and all are closed with the cluster
    long made = org.hdfsrdma.transport.select.SharedTransports.createdCount() - created;
    assertTrue(made >= 1 && made <= 3, "shared transports created: " + made);
    assertEquals(0, org.hdfsrdma.transport.select.SharedTransports.openCount());
  }

  @Test
  @Timeout(value = 240, unit = TimeUnit.SECONDS)
  void sortIsValidated() throws Exception {
    Run r = bench("sort", "--quick", "--runs", "1", "--files", "1", "--size", "4M", "--results",
        tmp.resolve("results").toString(), "--dir", tmp.resolve("c").toString());
    assertEquals(0, r.rc, r.err);
    assertRow(r.out, "-", "sort", "MB/s");
    Path jobs = tmp.resolve("c").resolve("cluster-3").resolve("jobs");
    for (String path : List.of("ours", "stock")) {
      assertTrue(JobOutput.sortValidated(Files.readString(jobs.resolve("sortvalidate-" + path + "-1.out"))), path);
      assertTrue(JobOutput.jobSeconds(Files.readString(jobs.resolve("sort-" + path + "-1.out"))).isPresent(), path);
    }
  }

  @Test
  @Timeout(value = 300, unit = TimeUnit.SECONDS)
  void dfsioAcrossNamespacesOnAShapedLink() throws Exception {
    Path dir = tmp.resolve("c");
    Run r = bench("dfsio", "--quick", "--runs", "1", "--files", "1", "--size", "8M", "--net", "10", "--results",
        tmp.resolve("results").toString(), "--dir", dir.toString());
    assertEquals(0, r.rc, r.err);
    assertRow(r.out, "net=10 Gbit/s", "write", "MB/s");
    assertRow(r.out, "net=10 Gbit/s", "read", "MB/s");
    assertTrue(r.out.contains("links shaped to 10 Gbit/s each way"), r.out);
    // the DataNodes served on their namespace's address, not 127.0.0.1
    Path clusterDir;
    try (Stream<Path> s = Files.list(dir)) {
      clusterDir = s.filter(p -> p.getFileName().toString().startsWith("net-")).findFirst().orElseThrow();
    }
    String dnLog = Files.readString(clusterDir.resolve("logs").resolve("dn1.log"));
    assertTrue(dnLog.matches("(?s).*Opened streaming server at /10\\.213\\.\\d+\\.11:.*"), dnLog);
    assertTrue(files(tmp.resolve("results")).stream().anyMatch(x -> x.endsWith("-net.png")));
    // the run's namespaces and links (its tag names the cluster directory, net-TAG) are gone
    String tag = clusterDir.getFileName().toString().substring("net-".length());
    assertEquals(List.of(), NetLab.ourNamespaces().stream().filter(n -> n.contains(tag)).toList());
    assertEquals(List.of(), NetLab.ourLinks().stream().filter(n -> n.contains(tag)).toList());
  }
}
