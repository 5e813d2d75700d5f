package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * The plugin's and the client's counters are metrics2 sources visible over JMX: after a
 * write and a read through {@link RdmaDistributedFileSystem}, the beans' attributes equal
 * the Java counters, per transport records name the transport used, and a closed file
 * system's bean is gone.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class MetricsTest {
  private static final MBeanServer JMX = ManagementFactory.getPlatformMBeanServer();
  private MiniDFSCluster cluster;
  private Configuration clientConf;

  @BeforeAll
  void start() throws Exception {
    Configuration conf = PluginCluster.baseConf();
    conf.setBoolean(HrdmaClientKeys.READ_SHM_KEY, false); // reads over the transport: its bytes are counted
    conf.setBoolean(HrdmaClientKeys.READ_LOCAL_KEY, false); // not short-circuit (on by default)
    cluster = PluginCluster.start(conf, getClass(), 1);
    clientConf = new Configuration(conf);
    clientConf.set("fs.hdfs.impl", RdmaDistributedFileSystem.class.getName());
    clientConf.setBoolean("fs.hdfs.impl.disable.cache", true);
    clientConf.setLong(HrdmaClientKeys.METRICS_DELAY_MS_KEY, 0); // the beans at once
  }

  @AfterAll
  void stop() {
    if (cluster != null) {
      cluster.shutdown();
    }
  }

  /** The attributes of the one bean named {@code name} under any metrics prefix. */
  private static Map<String, Object> bean(String name) throws Exception {
    Set<ObjectName> names = JMX.queryNames(new ObjectName("Hadoop:name=" + name + ",*"), null);
    assertEquals(1, names.size(), "beans named " + name + ": " + names);
    ObjectName on = names.iterator().next();
    Map<String, Object> m = new HashMap<>();
    for (javax.management.MBeanAttributeInfo a : JMX.getMBeanInfo(on).getAttributes()) {
      m.put(a.getName(), JMX.getAttribute(on, a.getName()));
    }
    return m;
  }

  /**
   * The bean once {@code attr} reads {@code expected}: Hadoop's metrics system serves JMX from a
   * snapshot it refreshes at most once a period (10 s by default, 1 s in this module's tests:
   * hadoop-metrics2.properties), and it took one when the source was registered.
   */
  private static Map<String, Object> beanWhen(String name, String attr, long expected) throws Exception {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
    Map<String, Object> b = bean(name);
    while (num(b, attr) != expected && System.nanoTime() < deadline) {
      Thread.sleep(250);
      b = bean(name);
    }
    return b;
  }

  private static long num(Map<String, Object> bean, String attr) {
    Object v = bean.get(attr);
    assertNotNull(v, attr + " in " + bean.keySet());
    return ((Number) v).longValue();
  }

  /** The sum of the transport records' Connections (records 1..n, each tagged with a known transport). */
  private static long connectionsPerTransport(Map<String, Object> bean) {
    long sum = 0;
    int n = 1;
    for (; bean.containsKey("tag.Transport." + n); n++) {
      assertTrue(Set.of("ucx", "stream", "tcp").contains(bean.get("tag.Transport." + n)), bean.toString());
      sum += num(bean, "Connections." + n);
    }
    assertTrue(n > 1, "no transport record: " + bean);
    return sum;
  }

  @Test
  void countersOfThePluginAndTheClientAreJmxBeans() throws Exception {
    byte[] data = new byte[3 * PluginCluster.BLOCK + 1000];
    new Random(7).nextBytes(data);
    Path file = new Path("/metrics/a.bin");
    String clientBean;
    try (RdmaDistributedFileSystem fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), clientConf)) {
      clientBean = fs.metricsName();
      assertNotNull(clientBean, "the client registered no metrics source");
      try (FSDataOutputStream out = fs.create(file)) {
        out.write(data);
      }
      byte[] back = new byte[data.length];
      try (FSDataInputStream in = fs.open(file)) {
        in.readFully(back);
      }
      assertArrayEquals(data, back);
      assertTrue(fs.rdmaBytesRead() >= data.length && fs.rdmaBytesWritten() >= data.length,
          fs.rdmaBytesRead() + " read, " + fs.rdmaBytesWritten() + " written over hrdma");

      Map<String, Object> c = beanWhen(clientBean, "RdmaBytesRead", fs.rdmaBytesRead());
      assertEquals(fs.rdmaBytesRead(), num(c, "RdmaBytesRead"));
      assertEquals(fs.rdmaBytesWritten(), num(c, "RdmaBytesWritten"));
      assertEquals(0, num(c, "StockBytesRead"));
      assertEquals(0, num(c, "StockFallbacks"));
      assertEquals(fs.blockClientIfStarted().openConnections(), num(c, "OpenConnections"));
      assertTrue(num(c, "OpenConnections") >= 1, c.toString());
      assertEquals(num(c, "OpenConnections"), connectionsPerTransport(c), "connections per transport add up: " + c);

      RdmaDataNodePlugin plugin = RdmaDataNodePlugin.running().get(0);
      Map<String, Object> p = beanWhen(plugin.metricsName(), "OpenConnections", plugin.openConnections());
      assertEquals(plugin.openConnections(), num(p, "OpenConnections"));
      assertTrue(num(p, "OpenConnections") >= 1, p.toString());
      assertEquals(plugin.sharedSegmentsGranted(), num(p, "SharedSegmentsGranted"));
      assertEquals(0, num(p, "SharedSegmentBytes"));
      assertEquals(num(p, "OpenConnections"), connectionsPerTransport(p), "connections per transport add up: " + p);

      // the DFSClient's files being written, our stream's among them while it is open
      try (FSDataOutputStream open = fs.create(new Path("/metrics/open.bin"))) {
        open.write(data, 0, 100);
        assertEquals(1, num(beanWhen(clientBean, "FilesBeingWritten", 1), "FilesBeingWritten"));
      }
      assertEquals(0, num(beanWhen(clientBean, "FilesBeingWritten", 0), "FilesBeingWritten"));
    }
    assertTrue(JMX.queryNames(new ObjectName("Hadoop:name=" + clientBean + ",*"), null).isEmpty(),
        "a closed file system's bean is unregistered");
  }

  /**
   * The source is registered off the caller's thread; a file system closed at once (a short
   * command) is never left with a bean, whichever of the two comes first.
   */
  @Test
  void aFileSystemClosedAtOnceLeavesNoBean() throws Exception {
    for (int i = 0; i < 5; i++) {
      String name;
      try (RdmaDistributedFileSystem fs = (RdmaDistributedFileSystem) FileSystem.newInstance(cluster.getURI(),
          clientConf)) {
        name = fs.metricsName();
        assertNotNull(name, "the client registered no metrics source");
      }
      ClientMetrics.awaitDue();
      assertTrue(JMX.queryNames(new ObjectName("Hadoop:name=" + name + ",*"), null).isEmpty(),
          "a bean left by a file system closed at once: " + name);
    }
    // and one kept open gets its bean
    try (RdmaDistributedFileSystem fs = (RdmaDistributedFileSystem) FileSystem.newInstance(cluster.getURI(),
        clientConf)) {
      long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
      ObjectName on = new ObjectName("Hadoop:name=" + fs.metricsName() + ",*");
      while (JMX.queryNames(on, null).isEmpty() && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertEquals(1, JMX.queryNames(on, null).size(), "no bean for an open file system");
    }
  }

  /**
   * With the default delay a file system closed within it (a short command) starts and registers
   * nothing; one kept open past its delay gets its bean.
   */
  @Test
  void aShortLivedFileSystemRegistersNothingWithTheDefaultDelay() throws Exception {
    Configuration conf = new Configuration(clientConf);
    conf.unset(HrdmaClientKeys.METRICS_DELAY_MS_KEY);
    String name;
    try (RdmaDistributedFileSystem fs = (RdmaDistributedFileSystem) FileSystem.newInstance(cluster.getURI(), conf)) {
      name = fs.metricsName();
      assertNotNull(name, "the client has no metrics source");
      assertTrue(fs.metricsPending(), "registration is not pending during the default delay");
      try (FSDataOutputStream out = fs.create(new Path("/metrics/short.bin"))) {
        out.write(new byte[1000]);
      }
      assertTrue(JMX.queryNames(new ObjectName("Hadoop:name=" + name + ",*"), null).isEmpty(),
          "registered within the default delay: " + name);
    }
    ClientMetrics.awaitDue();
    assertTrue(JMX.queryNames(new ObjectName("Hadoop:name=" + name + ",*"), null).isEmpty(),
        "a bean left by a file system closed within the delay: " + name);

    conf.setLong(HrdmaClientKeys.METRICS_DELAY_MS_KEY, 300);
    try (RdmaDistributedFileSystem fs = (RdmaDistributedFileSystem) FileSystem.newInstance(cluster.getURI(), conf)) {
      ObjectName on = new ObjectName("Hadoop:name=" + fs.metricsName() + ",*");
      long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
      while (JMX.queryNames(on, null).isEmpty() && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertEquals(1, JMX.queryNames(on, null).size(), "no bean for a file system open past its delay");
      assertFalse(fs.metricsPending());
    }
  }
}
