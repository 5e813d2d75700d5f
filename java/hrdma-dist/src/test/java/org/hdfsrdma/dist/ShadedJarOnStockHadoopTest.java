package org.hdfsrdma.dist;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import org.hdfsrdma.dist.probe.StockHadoopProbe;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The shaded jar dropped next to a stock Hadoop 3.5.0's jars (hadoop-common,
 * hadoop-hdfs-client, hadoop-hdfs and their dependencies as Hadoop's own poms
 * pin them: Netty 4.1.130, slf4j 1.7.36): one class loader with only those jars (parent: the platform
 * loader, so nothing of this module's own class path leaks in) plus the probe
 * class, which does the work inside it.
 */
class ShadedJarOnStockHadoopTest {

  @Test
  @Timeout(120)
  void pluginAndClientRunNextToHadoopsNetty41() throws Exception {
    List<Path> stock;
    try (Stream<Path> s = Files.list(DistPaths.stockLib())) {
      stock = s.filter(p -> p.toString().endsWith(".jar")).sorted().collect(Collectors.toList());
    }
    List<String> stockNetty = stock.stream().map(p -> p.getFileName().toString())
        .filter(n -> n.startsWith("netty")).collect(Collectors.toList());
    assertTrue(stockNetty.contains("netty-all-4.1.130.Final.jar"), stockNetty.toString());
    assertTrue(stockNetty.stream().allMatch(n -> n.contains("-4.1.130.Final")), "not stock: " + stockNetty);

    // Hadoop's jars first, ours last: what a lib/*.jar class path gives
    // (nothing overlaps, so the order must not matter anyway).
    List<URL> urls = new ArrayList<>();
    for (Path p : stock) {
      urls.add(p.toUri().toURL());
    }
    urls.add(DistPaths.shadedJar().toUri().toURL());
    urls.add(probeClasses().toUri().toURL());

    ClassLoader saved = Thread.currentThread().getContextClassLoader();
    try (URLClassLoader cl = new URLClassLoader("stock-hadoop+hrdma", urls.toArray(new URL[0]),
        ClassLoader.getPlatformClassLoader())) {
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
