package org.hdfsrdma.dist;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.concurrent.TimeUnit;
import org.hdfsrdma.dist.probe.StockCluster;
import org.hdfsrdma.dist.probe.StockHadoopProbe;
import org.hdfsrdma.dist.probe.UcxClientMain;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The shaded jar dropped next to a stock Hadoop 3.5.0's jars (hadoop-common,
 * hadoop-hdfs-client, hadoop-hdfs and their dependencies as Hadoop's own poms
 * pin them: Netty 4.1.130, slf4j 1.7.36): one class loader with only those jars (parent: the platform
 * loader, so nothing of this module's own class path leaks in) plus the probe
 * classes, which do the work inside it; and a client in a fresh JVM on those jars.
 */
class ShadedJarOnStockHadoopTest {

  @Test
  @Timeout(120)
  void pluginAndClientRunNextToHadoopsNetty41() throws Exception {
    List<Path> stock = stockJars();
    List<String> stockNetty = stock.stream().map(p -> p.getFileName().toString())
        .filter(n -> n.startsWith("netty")).collect(Collectors.toList());
    assertTrue(stockNetty.contains("netty-all-4.1.130.Final.jar"), stockNetty.toString());
    assertTrue(stockNetty.stream().allMatch(n -> n.contains("-4.1.130.Final")), "not stock: " + stockNetty);

    ClassLoader saved = Thread.currentThread().getContextClassLoader();
    try (URLClassLoader cl = stockLoader(stock)) {
      Thread.currentThread().setContextClassLoader(cl);
      Class<?> probe = Class.forName(StockHadoopProbe.class.getName(), true, cl);
      assertFalse(probe == StockHadoopProbe.class, "the probe must come from the isolated loader");
      @SuppressWarnings("unchecked")
      Map<String, String> r = ((Supplier<Map<String, String>>) probe.getConstructor().newInstance()).get();
      r.forEach((k, v) -> System.out.println("[stock-hadoop] " + k + " = " + v));

      assertEquals("3.5.0", r.get("hadoop"));
      assertEquals("4.1.130.Final", r.get("netty.stock"));
      assertEquals(System.getProperty("hrdma.netty.version", "4.2.18.Final"), r.get("netty.shaded"));
      assertTrue(r.get("netty.stock.jar").startsWith("netty-common-4.1.130"), r.get("netty.stock.jar"));
      assertTrue(r.get("netty.shaded.jar").startsWith("hrdma-hadoop-plugin-"), r.get("netty.shaded.jar"));
      assertEquals("false", r.get("netty.stock.has.MultiThreadIoEventLoopGroup"));
      assertEquals("true", r.get("netty.shaded.has.MultiThreadIoEventLoopGroup"));
      assertEquals("false", r.get("protobuf.unshaded.loadable"));
      assertEquals("false", r.get("jfr.shaded"), "the relocated Netty's JFR events off by default");
      assertEquals(String.valueOf(System.getProperty("io.netty.jfr.enabled")), r.get("jfr.stock"),
          "stock Netty's property untouched");
      for (String t : List.of("ucx", "stream", "tcp")) {
        assertTrue(r.get("providers").contains(t), r.get("providers"));
      }
      assertTrue(r.get("tcp.exchange").startsWith("re:hello"), r.get("tcp.exchange"));
      assertEquals("0/0", r.get("tcp.buffersOutstanding"));
      // Where Hadoop's own (unrelocated) Netty gets epoll, ours must too: the
      // renamed liborg_hdfsrdma_shaded_netty_transport_native_epoll_x86_64.so.
      if ("available".equals(r.get("epoll.stock"))) {
        assertEquals("available", r.get("epoll.shaded"));
        assertEquals("true", r.get("tcp.epoll"));
      }
    } finally {
      Thread.currentThread().setContextClassLoader(saved);
    }
  }

  /**
   * A client whose connections go over ucx loads no Netty at all: a fresh JVM on stock Hadoop's
   * jars and the shaded jar writes a file through our client to a stock NameNode and a DataNode
   * with the plugin (run in this JVM, in a loader like the one above), reads it back, and its
   * class-loading log names no {@code io.netty} class, relocated or not. With the defaults, so
   * the same-host paths too: the write's shared-memory segment and the short-circuit read, whose
   * descriptors come over the DataNode's domain socket through libhrdma.
   */
  @Test
  @Timeout(120)
  void aClientOnUcxLoadsNoNetty() throws Exception {
    assumeTrue(HrdmaNative.isAvailable(), () -> "no native library: " + HrdmaNative.unavailabilityCause());
    List<Path> stock = stockJars();
    Path base = DistPaths.probeDir().resolveSibling("ucx-client-cluster");
    deleteTree(base);
    Files.createDirectories(base);
    int size = 64 * 1024;
    // The daemons' web UIs want webapps/ on the class path, which Maven Central's hadoop-hdfs jar
    // leaves out: empty ones do.
    Path webapps = base.resolve("webapps-root");
    for (String app : List.of("hdfs", "datanode", "static")) {
      Files.createDirectories(webapps.resolve("webapps").resolve(app));
    }
    boolean passed = false;
    ClassLoader saved = Thread.currentThread().getContextClassLoader();
    try (URLClassLoader cl = stockLoader(stock, webapps.toUri().toURL())) {
      Thread.currentThread().setContextClassLoader(cl);
      Object cluster = Class.forName(StockCluster.class.getName(), true, cl).getConstructor().newInstance();
      try {
        long t0 = System.nanoTime();
        @SuppressWarnings("unchecked")
        String fsUri = ((java.util.function.Function<java.io.File, String>) cluster).apply(base.toFile());
        long t1 = System.nanoTime();
        Path classLog = base.resolve("client-classes.log");
        Path out = base.resolve("client.out");
        Path err = base.resolve("client.err");
        List<String> cmd = new ArrayList<>(List.of(
            Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
            "-Xmx256m", "-Xlog:class+load=info:file=" + classLog,
            "-cp", String.join(java.io.File.pathSeparator, DistPaths.stockLib().resolve("*").toString(),
                DistPaths.shadedJar().toString(), DistPaths.probeDir().toString()),
            UcxClientMain.class.getName(), fsUri, Integer.toString(size)));
        Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        if (!p.waitFor(90, TimeUnit.SECONDS)) {
          p.destroyForcibly();
          throw new AssertionError("the client did not finish in 90 s; stderr:\n" + tail(err));
        }
        long t2 = System.nanoTime();
        assertEquals(0, p.exitValue(), () -> "the client failed; stderr:\n" + tail(err));
        System.out.printf("[ucx-client] cluster up in %d ms, the client's JVM took %d ms%n",
            TimeUnit.NANOSECONDS.toMillis(t1 - t0), TimeUnit.NANOSECONDS.toMillis(t2 - t1));
        Map<String, String> r = new java.util.HashMap<>();
        for (String line : Files.readAllLines(out)) {
          String[] kv = line.split("=", 2);
          if (kv.length == 2) {
            r.put(kv[0], kv[1]);
          }
        }
        r.forEach((k, v) -> System.out.println("[ucx-client] " + k + " = " + v));
        assertEquals("same", r.get("content"), "read back what was written");
        assertEquals(Integer.toString(size), r.get("rdmaBytesWritten"), "written over our transport");
        // the defaults: the DataNode is on this host, so the read is a short-circuit one, its
        // descriptors passed over the DataNode's domain socket
        assertEquals(Integer.toString(size), r.get("localBytesRead"), "read by short-circuit");
        assertEquals("0", r.get("stockBytesRead"));
        List<String> loaded = Files.readAllLines(classLog);
        assertTrue(loaded.stream().anyMatch(l -> l.contains(" org.hdfsrdma.transport.ucx.UcxEndpoint ")),
            "the ucx transport carried it");
        List<String> netty = loaded.stream().filter(l -> l.contains("io.netty")).collect(Collectors.toList());
        System.out.println("[ucx-client] classes loaded: " + loaded.size() + ", Netty's: " + netty.size());
        assertEquals(List.of(), netty.subList(0, Math.min(20, netty.size())),
            netty.size() + " Netty classes loaded, the first ones listed (all in " + classLog + ")");
        passed = true;
      } finally {
        ((AutoCloseable) cluster).close();
      }
    } finally {
      Thread.currentThread().setContextClassLoader(saved);
      if (passed) { // else kept for a look
        deleteTree(base);
      }
    }
  }

  private static List<Path> stockJars() throws IOException {
    try (Stream<Path> s = Files.list(DistPaths.stockLib())) {
      return s.filter(p -> p.toString().endsWith(".jar")).sorted().collect(Collectors.toList());
    }
  }

  /**
   * {@code more} (resources), Hadoop's jars, ours last: what a lib/*.jar class path gives
   * (nothing overlaps, so the order must not matter anyway); the probe's classes; the platform
   * loader as parent, so that nothing of this module's own class path leaks in.
   */
  private static URLClassLoader stockLoader(List<Path> stock, URL... more) throws IOException {
    List<URL> urls = new ArrayList<>(List.of(more));
    for (Path p : stock) {
      urls.add(p.toUri().toURL());
    }
    urls.add(DistPaths.shadedJar().toUri().toURL());
    urls.add(probeClasses().toUri().toURL());
    return new URLClassLoader("stock-hadoop+hrdma", urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
  }

  private static String tail(Path file) {
    try {
      List<String> all = Files.readAllLines(file);
      return String.join("\n", all.subList(Math.max(0, all.size() - 30), all.size()));
    } catch (IOException e) {
      return "(" + e + ")";
    }
  }

  private static void deleteTree(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.sorted(java.util.Comparator.reverseOrder()).collect(Collectors.toList())) {
        Files.deleteIfExists(p);
      }
    }
  }

  /** A directory with only the probe's classes (not the tests, not JUnit). */
  private static Path probeClasses() throws IOException {
    String pkg = StockHadoopProbe.class.getPackageName().replace('.', '/');
    Path from;
    try {
      from = Paths.get(StockHadoopProbe.class.getProtectionDomain().getCodeSource().getLocation().toURI())
          .resolve(pkg);
    } catch (java.net.URISyntaxException e) {
      throw new IOException(e);
    }
    Path to = DistPaths.probeDir().resolve(pkg);
    Files.createDirectories(to);
    try (Stream<Path> s = Files.list(from)) {
      for (Path c : s.filter(p -> p.toString().endsWith(".class")).collect(Collectors.toList())) {
        Files.copy(c, to.resolve(c.getFileName()), StandardCopyOption.REPLACE_EXISTING);
      }
    }
    return DistPaths.probeDir();
  }
}
