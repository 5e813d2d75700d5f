package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FsShell;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.tools.DistCp;
import org.apache.hadoop.util.ToolRunner;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * Hadoop's own tools with {@code fs.hdfs.impl} set to our client, as on a client host
 * configured by conf/core-site.xml: {@code hadoop fs} (FsShell) and distcp (on MapReduce's
 * LocalJobRunner), both in this JVM. Each checks the bytes and that our transport carried
 * them: the tools take their FileSystem from FileSystem.get (the cache), the same
 * instance whose counters the test reads.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(240)
class HadoopToolsTest {
  private static final int SIZE = 3 * PluginCluster.BLOCK + 4097;
  private MiniDFSCluster cluster;
  private Configuration conf;
  private File local;

  @BeforeAll
  void start() throws Exception {
    cluster = PluginCluster.start(PluginCluster.baseConf(), getClass(), 3);
    conf = new Configuration(cluster.getConfiguration(0));
    conf.set("fs.hdfs.impl", RdmaDistributedFileSystem.class.getName());
    conf.set("fs.defaultFS", "hdfs://localhost:" + cluster.getNameNodePort());
    // FileSystem's cache is keyed by scheme, authority and user, not by fs.hdfs.impl: a
    // stock instance cached before would be what the tools get
    FileSystem.closeAll();
    // every byte read crosses the transport (no short-circuit or shared-memory reads)
    conf.setBoolean(RdmaBlockClient.LOCAL_READS_KEY, false);
    conf.setBoolean(RdmaBlockClient.SHM_READS_KEY, false);
    conf.set("mapreduce.framework.name", "local");
    local = new File("target/test-dir/" + getClass().getSimpleName() + "/local");
    Files.createDirectories(local.toPath());
  }

  @AfterAll
  void stop() throws Exception {
    FileSystem.closeAll();
    PluginCluster.shutdown(null, cluster);
  }

  private RdmaDistributedFileSystem ours() throws Exception {
    return assertInstanceOf(RdmaDistributedFileSystem.class, FileSystem.get(conf));
  }

  private String shell(String... args) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrintStream was = System.out;
    FsShell sh = new FsShell(conf);
    int rc;
    try (PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8)) {
      System.setOut(ps);
      rc = ToolRunner.run(sh, args);
    } finally {
      System.setOut(was);
      sh.close();
    }
    assertEquals(0, rc, "hadoop fs " + String.join(" ", args) + ": " + out);
    return out.toString(StandardCharsets.UTF_8);
  }

  @Test
  void fsShellPutAndGetGoOverHrdma() throws Exception {
    byte[] data = PluginCluster.random(SIZE, 11);
    File src = new File(local, "put.bin");
    File back = new File(local, "get.bin");
    Files.write(src.toPath(), data);
    Files.deleteIfExists(back.toPath());
    RdmaDistributedFileSystem fs = ours();
    long w0 = fs.rdmaBytesWritten();
    long r0 = fs.rdmaBytesRead();
    long s0 = fs.stockBytesRead();

    shell("-mkdir", "-p", "/shell");
    shell("-put", src.getPath(), "/shell/put.bin");
    assertTrue(shell("-ls", "/shell").contains("/shell/put.bin"));
    shell("-get", "/shell/put.bin", back.getPath());

    assertArrayEquals(data, Files.readAllBytes(back.toPath()));
    assertTrue(fs.rdmaBytesWritten() - w0 >= SIZE, "-put over hrdma: " + (fs.rdmaBytesWritten() - w0));
    assertTrue(fs.rdmaBytesRead() - r0 >= SIZE, "-get over hrdma: " + (fs.rdmaBytesRead() - r0));
    assertEquals(s0, fs.stockBytesRead(), "nothing read through the stock path");
  }

  @Test
  void distcpCopiesOverHrdma() throws Exception {
    byte[] a = PluginCluster.random(SIZE, 21);
    byte[] b = PluginCluster.random(SIZE / 3, 22);
    RdmaDistributedFileSystem fs = ours();
    try (var out = fs.create(new Path("/dcp/src/a.bin"))) {
      out.write(a);
    }
    try (var out = fs.create(new Path("/dcp/src/sub/b.bin"))) {
      out.write(b);
    }
    long w0 = fs.rdmaBytesWritten();
    long r0 = fs.rdmaBytesRead();
    long s0 = fs.stockBytesRead();

    int rc = ToolRunner.run(conf, new DistCp(conf, null), new String[] {"/dcp/src", "/dcp/dst"});
    assertEquals(0, rc, "distcp");

    for (String[] f : new String[][] {{"a.bin", "a"}, {"sub/b.bin", "b"}}) {
      try (var in = fs.open(new Path("/dcp/dst/" + f[0]))) {
        assertArrayEquals(f[1].equals("a") ? a : b, in.readAllBytes(), f[0]);
      }
    }
    long copied = a.length + b.length;
    // the copy's reads and writes, then the test's read-back
    assertTrue(fs.rdmaBytesWritten() - w0 >= copied, "distcp wrote over hrdma: " + (fs.rdmaBytesWritten() - w0));
    assertTrue(fs.rdmaBytesRead() - r0 >= 2 * copied, "distcp read over hrdma: " + (fs.rdmaBytesRead() - r0));
    assertEquals(s0, fs.stockBytesRead(), "nothing read through the stock path");
  }
}
