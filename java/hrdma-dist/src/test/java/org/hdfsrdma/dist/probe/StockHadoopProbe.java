package org.hdfsrdma.dist.probe;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.Listener;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportProvider;
import org.hdfsrdma.transport.Transports;
import org.hdfsrdma.transport.tcp.TcpTransport;

/**
 * Runs INSIDE the isolated class loader of {@code ShadedJarOnStockHadoopTest}
 * (shaded jar + stock Hadoop 3.5.0 jars, nothing from the test class path), so
 * it names only org.hdfsrdma.transport API types and JDK types directly; Netty
 * (both of them) and Hadoop are reached by name through that loader. Throws on
 * any failure; returns what it saw.
 */
public final class StockHadoopProbe implements Supplier<Map<String, String>> {
  private static final long WAIT_S = 10;

  @Override
  public Map<String, String> get() {
    try {
      return run();
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private Map<String, String> run() throws Exception {
    ClassLoader cl = StockHadoopProbe.class.getClassLoader();
    Map<String, String> out = new LinkedHashMap<>();

    // The plugin and the client, linked against the stock Hadoop classes.
    Class<?> dfs = Class.forName("org.hdfsrdma.client.RdmaDistributedFileSystem", true, cl);
    Class<?> stockDfs = Class.forName("org.apache.hadoop.hdfs.DistributedFileSystem", false, cl);
    check(stockDfs.isAssignableFrom(dfs), "RdmaDistributedFileSystem extends DistributedFileSystem");
    Object fs = dfs.getConstructor().newInstance();
    out.put("client", fs.getClass().getName() + " from " + where(dfs));
    Class<?> plugin = Class.forName("org.hdfsrdma.datanode.RdmaDataNodePlugin", true, cl);
    Class<?> servicePlugin = Class.forName("org.apache.hadoop.util.ServicePlugin", false, cl);
    check(servicePlugin.isAssignableFrom(plugin), "RdmaDataNodePlugin is a ServicePlugin");
    plugin.getConstructor().newInstance();
    out.put("plugin", plugin.getName());
    out.put("hadoop", (String) Class.forName("org.apache.hadoop.util.VersionInfo", true, cl)
        .getMethod("getVersion").invoke(null));

    // Both Netty versions in one loader.
    out.put("netty.stock", nettyVersion(cl, "io.netty"));
    out.put("netty.stock.jar", where(Class.forName("io.netty.util.Version", false, cl)));
    out.put("netty.shaded", nettyVersion(cl, "org.hdfsrdma.shaded.io.netty"));
    out.put("netty.shaded.jar", where(Class.forName("org.hdfsrdma.shaded.io.netty.util.Version", false, cl)));
    out.put("netty.stock.has.MultiThreadIoEventLoopGroup",
        String.valueOf(loadable(cl, "io.netty.channel.MultiThreadIoEventLoopGroup")));
    out.put("netty.shaded.has.MultiThreadIoEventLoopGroup",
        String.valueOf(loadable(cl, "org.hdfsrdma.shaded.io.netty.channel.MultiThreadIoEventLoopGroup")));
    out.put("epoll.stock", epoll(cl, "io.netty"));
    out.put("epoll.shaded", epoll(cl, "org.hdfsrdma.shaded.io.netty"));
    out.put("protobuf.unshaded.loadable", String.valueOf(loadable(cl, "com.google.protobuf.Message")));

    // The client's Netty defaults reach the relocated copy's property only, never stock Netty's.
    // (Names built at run time: a literal here would not be relocated, but keep it plain.)
    String jfr = String.join(".", "io", "netty", "jfr", "enabled");
    String shadedJfr = "org.hdfsrdma.shaded." + jfr;
    String savedJfr = System.getProperty(jfr);
    String savedShadedJfr = System.clearProperty(shadedJfr);
    try {
      Class.forName("org.hdfsrdma.transport.tcp.NettyStartup", true, cl).getMethod("apply").invoke(null);
      out.put("jfr.shaded", String.valueOf(System.getProperty(shadedJfr)));
      out.put("jfr.stock", String.valueOf(System.getProperty(jfr)));
    } finally {
      restore(shadedJfr, savedShadedJfr);
      restore(jfr, savedJfr);
    }

    // Transports through the ServiceLoader list inside the shaded jar.
    List<String> names = new ArrayList<>();
    for (TransportProvider p : Transports.providers()) {
      names.add(p.name() + (p.unavailabilityCause() == null ? "" : " (unavailable: " + p.unavailabilityCause() + ")"));
    }
    out.put("providers", String.join(", ", names));
    TransportConf conf = TransportConf.defaults().with(TransportConf.CONNECT_TIMEOUT_KEY, "5000");
    try (Transport ucx = Transports.create("ucx", conf)) {
      out.put("ucx", ucx.getClass().getName() + " " + ucx.capabilities());
    }

    // A small exchange over tcp: client sends, server answers, both check bytes.
    try (Transport server = Transports.create("tcp", conf); Transport client = Transports.create("tcp", conf)) {
      out.put("tcp.epoll", String.valueOf(((TcpTransport) server).usesEpoll()));
      EndpointHandler echo = (ep, msg) -> {
        try {
          ByteBuffer in = msg.nio();
          byte[] b = new byte[in.remaining()];
          in.duplicate().get(b);
          byte[] reply = ("re:" + new String(b, StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8);
          RegisteredBuffer r = ep.transport().allocator().allocate(reply.length);
          r.nio().put(r.nio().position(), reply);
          ep.send(r);
        } catch (Exception e) {
          ep.close();
        } finally {
          msg.release();
        }
      };
      CompletableFuture<String> answer = new CompletableFuture<>();
      EndpointHandler receiver = (ep, msg) -> {
        try {
          ByteBuffer in = msg.nio();
          byte[] b = new byte[in.remaining()];
          in.duplicate().get(b);
          answer.complete(new String(b, StandardCharsets.UTF_8));
        } finally {
          msg.release();
        }
      };
      try (Listener listener = server.listen(new InetSocketAddress("127.0.0.1", 0), echo)) {
        Endpoint ep = client.connect(listener.localAddress(), receiver).get(WAIT_S, TimeUnit.SECONDS);
        byte[] hello = "hello from a stock Hadoop class loader".getBytes(StandardCharsets.UTF_8);
        RegisteredBuffer m = client.allocator().allocate(hello.length);
        m.nio().put(m.nio().position(), hello);
        ep.send(m).get(WAIT_S, TimeUnit.SECONDS);
        String got = answer.get(WAIT_S, TimeUnit.SECONDS);
        check(got.equals("re:" + new String(hello, StandardCharsets.UTF_8)), "tcp answer: " + got);
        out.put("tcp.exchange", got);
        ep.close();
        ep.closeFuture().get(WAIT_S, TimeUnit.SECONDS);
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_S);
      while ((client.allocator().buffersOutstanding() != 0 || server.allocator().buffersOutstanding() != 0)
          && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      out.put("tcp.buffersOutstanding",
          client.allocator().buffersOutstanding() + "/" + server.allocator().buffersOutstanding());
    }
    return out;
  }

  private static String nettyVersion(ClassLoader cl, String pkg) throws Exception {
    Class<?> version = Class.forName(pkg + ".util.Version", true, cl);
    Map<?, ?> all = (Map<?, ?>) version.getMethod("identify", ClassLoader.class).invoke(null, cl);
    Object common = all.get("netty-common");
    check(common != null, pkg + ".util.Version.identify() knows no netty-common: " + all.keySet());
    return (String) version.getMethod("artifactVersion").invoke(common);
  }

  private static String epoll(ClassLoader cl, String pkg) throws Exception {
    Class<?> epoll = Class.forName(pkg + ".channel.epoll.Epoll", true, cl);
    boolean ok = (Boolean) epoll.getMethod("isAvailable").invoke(null);
    return ok ? "available" : "unavailable: " + epoll.getMethod("unavailabilityCause").invoke(null);
  }

  private static boolean loadable(ClassLoader cl, String name) {
    try {
      Class.forName(name, false, cl);
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  private static String where(Class<?> c) {
    var src = c.getProtectionDomain().getCodeSource();
    if (src == null) {
      return "?";
    }
    String p = src.getLocation().getPath();
    return p.substring(p.lastIndexOf('/') + 1);
  }

  private static void check(boolean ok, String what) {
    if (!ok) {
      throw new AssertionError(what);
    }
  }

  private static void restore(String key, String value) {
    if (value == null) {
      System.clearProperty(key);
    } else {
      System.setProperty(key, value);
    }
  }
}
