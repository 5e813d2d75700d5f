package org.hdfsrdma.bench.fs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.hdfsrdma.tools.UsageException;
import org.junit.jupiter.api.Test;

class ShellBenchTest {
  @Test
  void optionsDefaultsAndValues() {
    ShellBench.Options d = ShellBench.parse(new String[0]);
    assertEquals(List.of(64L << 10, 128L << 20), d.sizes());
    assertEquals(5, d.runs());
    assertTrue(d.fs().conf().isEmpty());

    ShellBench.Options o = ShellBench.parse(new String[] {"--sizes=4K,1M", "--runs", "3", "--dir", "/tmp/x",
        "--conf", "hrdma.client.read.local=false"});
    assertEquals(List.of(4096L, 1L << 20), o.sizes());
    assertEquals(3, o.runs());
    assertEquals("/tmp/x", o.fs().dir().toString());
    assertEquals(Map.of("hrdma.client.read.local", "false"), o.fs().conf());
  }

  @Test
  void badOptionsAreRefused() {
    assertThrows(UsageException.class, () -> ShellBench.parse(new String[] {"--runs", "0"}));
    assertThrows(UsageException.class, () -> ShellBench.parse(new String[] {"--runs"}));
    assertThrows(UsageException.class, () -> ShellBench.parse(new String[] {"--sizes", "64K,lots"}));
    assertThrows(UsageException.class, () -> ShellBench.parse(new String[] {"--size", "64K"}));
    assertThrows(UsageException.class, () -> ShellBench.parse(new String[] {"--replication", "3"}));
    assertThrows(UsageException.class, () -> ShellBench.parse(new String[] {"--bogus"}));
  }

  @Test
  void aChildsCpuIsCountedOnceItIsWaitedFor() throws Exception {
    long before = ShellBench.childrenCpuTicks();
    Process p = new ProcessBuilder("sh", "-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done").start();
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    long spent = ShellBench.childrenCpuTicks() - before;
    assertTrue(spent >= 5, "a busy child of at least 50 ms counted " + spent + " ticks");
  }

  @Test
  void hadoopsClassPathLeavesOutTheProjectsOwn() {
    String saved = System.getProperty("java.class.path");
    try {
      System.setProperty("java.class.path", String.join(File.pathSeparator,
          "/r/benchmarks/target/hrdma-benchmarks-0.1.0-SNAPSHOT.jar", "/r/java/hrdma-client/target/classes",
          "/m2/org/apache/hadoop/hadoop-common-3.5.0.jar", "/m2/io/netty/netty-common-4.2.18.Final.jar"));
      String cp = ShellBench.hadoopClassPath();
      assertEquals("/m2/org/apache/hadoop/hadoop-common-3.5.0.jar" + File.pathSeparator
          + "/m2/io/netty/netty-common-4.2.18.Final.jar", cp);
    } finally {
      System.setProperty("java.class.path", saved);
    }
  }

  @Test
  void theTableShowsMediansAndTheRatio() {
    ShellBench.Options o = ShellBench.parse(new String[] {"--sizes", "64K", "--runs", "3"});
    Map<String, List<ShellBench.Result>> rows = new LinkedHashMap<>();
    rows.put("-put 64K ours", List.of(new ShellBench.Result(3.0, 3.5), new ShellBench.Result(2.0, 3.0),
        new ShellBench.Result(9.0, 4.0)));
    rows.put("-put 64K stock", List.of(new ShellBench.Result(1.0, 2.5), new ShellBench.Result(1.5, 2.0),
        new ShellBench.Result(2.0, 2.7)));
    String t = ShellBench.render(o, rows);
    assertTrue(t.contains("-put"), t);
    assertTrue(t.matches("(?s).*-put\\s+64K\\s+3\\.00\\s+1\\.50\\s+2\\.00x\\s+3\\.50\\s+2\\.50\\s+\\+1\\.00.*"), t);
    assertFalse(t.contains("-cat  "), "no row for a command not measured: " + t);
  }

  /**
   * The site file a bench's clients get holds the cluster's client settings and the extras only:
   * a default written out would be an explicit setting (an explicit dfs.client-write-packet-size
   * makes our client send stock-sized packets).
   */
  @Test
  void theClientsSiteFileHoldsTheClustersSettingsOnly(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
      throws Exception {
    java.nio.file.Path cluster = dir.resolve("client-site.xml");
    java.nio.file.Files.writeString(cluster, "<?xml version=\"1.0\"?><configuration>"
        + "<property><name>fs.defaultFS</name><value>hdfs://127.0.0.1:9</value></property>"
        + "<property><name>dfs.replication</name><value>3</value></property></configuration>");
    java.nio.file.Path out = dir.resolve("out.xml");
    ShellBench.writeClientSite(out, ShellBench.siteConf(cluster, Map.of("hrdma.client.read.local", "false"), true));
    org.apache.hadoop.conf.Configuration back = new org.apache.hadoop.conf.Configuration(false);
    back.addResource(new org.apache.hadoop.fs.Path(out.toUri()));
    assertEquals(Map.of("fs.defaultFS", "hdfs://127.0.0.1:9", "dfs.replication", "3", "hrdma.client.read.local",
        "false", "fs.hdfs.impl", "org.hdfsrdma.client.RdmaDistributedFileSystem"), back.getPropsWithPrefix(""));
    ShellBench.writeClientSite(out, ShellBench.siteConf(cluster, Map.of(), false));
    back = new org.apache.hadoop.conf.Configuration(false);
    back.addResource(new org.apache.hadoop.fs.Path(out.toUri()));
    assertEquals("org.apache.hadoop.hdfs.DistributedFileSystem", back.get("fs.hdfs.impl"));
    assertEquals(null, back.get("dfs.client-write-packet-size"));
  }
}
