package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.web.WebHdfsConstants;
import org.apache.hadoop.hdfs.web.WebHdfsTestUtil;
import org.hdfsrdma.datanode.InfoClient.Answer;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.RdmaPorts;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.select.HrdmaConnector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * The plugin inside three stock DataNodes of one MiniDFSCluster (shared by
 * the class; the last test shuts it down and checks what is left).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RdmaDataNodePluginTest {
  private static final long WAIT_MS = 30_000;

  private MiniDFSCluster cluster;
  private Configuration conf;

  @BeforeAll
  void startCluster() throws IOException {
    conf = new Configuration();
    conf.set(DFSConfigKeys.DFS_DATANODE_PLUGINS_KEY, RdmaDataNodePlugin.class.getName());
    conf.set(TransportConf.CONNECT_TIMEOUT_KEY, "3000");
    File base = new File("target/test-dir/" + getClass().getSimpleName());
    cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(3).build();
    cluster.waitActive();
  }

  @AfterAll
  void stopCluster() {
    if (cluster != null) {
      cluster.shutdown();
    }
  }

  private static RdmaDataNodePlugin pluginOf(String uuid, Predicate<RdmaDataNodePlugin> done)
      throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
    while (System.nanoTime() < end) {
      for (RdmaDataNodePlugin p : RdmaDataNodePlugin.running()) {
        if (uuid.equals(p.datanodeUuid()) && done.test(p)) {
          return p;
        }
      }
      Thread.sleep(20);
    }
    throw new AssertionError("no plugin for DataNode " + uuid + " reached the expected state; running: "
        + RdmaDataNodePlugin.running());
  }

  private DatanodeInfo[] liveDataNodes() throws IOException {
    return cluster.getFileSystem().getDataNodeStats(DatanodeReportType.LIVE);
  }

  /** Where a client would dial: what the NameNode says, through RdmaPorts. */
  private InetSocketAddress pluginAddress(DatanodeInfo dn) {
    return new InetSocketAddress(dn.getIpAddr(), RdmaPorts.pluginPort(dn, conf));
  }

  @Test
  @Order(1)
  @Timeout(120)
  void everyDataNodeServesInfoOnItsDerivedPort() throws Exception {
    String bpid = cluster.getNamesystem().getBlockPoolId();
    DatanodeInfo[] dns = liveDataNodes();
    assertEquals(3, dns.length);
    java.util.Map<String, org.hdfsrdma.transport.Transport> shared = null;
    for (DatanodeInfo dn : dns) {
      RdmaDataNodePlugin p = pluginOf(dn.getDatanodeUuid(), x -> x.state() == RdmaDataNodePlugin.State.SERVING);
      assertEquals(dn.getXferPort() + RdmaPorts.PORT_OFFSET_DEFAULT, p.serviceAddress().getPort());
      // hrdma.datanode.share-transports=true (the default): the DataNodes of one JVM on the same transports
      if (shared == null) {
        shared = p.transports();
      }
      assertEquals(shared.keySet(), p.transports().keySet());
      for (var e : shared.entrySet()) {
        assertSame(e.getValue(), p.transports().get(e.getKey()), e.getKey() + " of " + dn);
      }
    }
    for (String order : List.of(TransportConf.ORDER_DEFAULT, "tcp")) {
      try (HrdmaConnector c = new HrdmaConnector(TransportConf.defaults()
          .with(TransportConf.ORDER_KEY, order)
          .with(TransportConf.CONNECT_TIMEOUT_KEY, "3000"))) {
        for (DatanodeInfo dn : dns) {
          Answer a = InfoClient.info(c, pluginAddress(dn));
          assertEquals(dn.getDatanodeUuid(), a.info().datanodeUuid());
          assertEquals(dn.getXferPort(), a.info().xferPort());
          assertEquals(List.of(bpid), a.info().blockPoolIds());
          if (order.equals("tcp")) {
            assertEquals("tcp", a.transport());
          }
          System.err.println("hrdma test: INFO from " + dn.getXferAddr() + " over " + a.transport());
        }
      }
    }
  }

  @Test
  @Order(2)
  @Timeout(60)
  void garbageGetsAnErrorReplyAndTheServerKeepsServing() throws Exception {
    DatanodeInfo dn = liveDataNodes()[0];
    try (HrdmaConnector c = new HrdmaConnector(TransportConf.defaults().with(TransportConf.ORDER_KEY, "tcp"))) {
      for (byte[] garbage : List.of(new byte[] {9, 9, 9}, new byte[] {9, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5},
          new byte[] {1, 0x55, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6},
          new byte[] {1, 0x10, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 7, (byte) 0xff, (byte) 0xff},
          new byte[] {1, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8})) {
        ByteBuffer r = InfoClient.raw(c, pluginAddress(dn), garbage);
        Message m = MessageCodec.decode(r);
        assertEquals(MessageKind.ERROR, m.kind());
        assertEquals(Status.ERROR_INVALID, m.error().getStatus());
        assertEquals(garbage.length >= 16 ? garbage[15] : 0, m.requestId(), "the error answers the request");
        System.err.println("hrdma test: garbage answered with: " + m.error().getMessage());
        assertTrue(m.error().getMessage().contains("refused a bad message"), m.error().getMessage());
      }
      // the INFO_REPLY kind is not a request: answered as unsupported
      ByteBuffer r = InfoClient.raw(c, pluginAddress(dn), new byte[] {1, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9});
      assertEquals(Status.ERROR_UNSUPPORTED, MessageCodec.decode(r).error().getStatus());
      assertEquals(dn.getDatanodeUuid(), InfoClient.info(c, pluginAddress(dn)).info().datanodeUuid());
    }
  }

  @Test
  @Order(3)
  @Timeout(120)
  void portConflictIsReportedAndTheStockPathKeepsWorking() throws Exception {
    try (ServerSocket taken = new ServerSocket()) {
      taken.bind(new InetSocketAddress("127.0.0.1", 0));
      int port = taken.getLocalPort();
      Configuration c4 = new Configuration(conf);
      c4.setInt(RdmaPorts.PORT_KEY, port);
      cluster.startDataNodes(c4, 1, true, null, null);
      cluster.waitActive();
      DataNode dn4 = cluster.getDataNodes().get(3);
      RdmaDataNodePlugin p = pluginOf(dn4.getDatanodeUuid(), x -> x.state() == RdmaDataNodePlugin.State.FAILED);
      assertNull(p.serviceAddress());
      assertTrue(p.failure().contains("cannot listen on 127.0.0.1:" + port), p.failure());
      assertTrue(p.failure().contains("stock data path is unaffected"), p.failure());

      // The stock path of that DataNode: write a replica to it alone, read it back,
      // over the stock client and over WebHDFS (the DataNode's Netty HTTP server).
      DistributedFileSystem fs = cluster.getFileSystem();
      Path file = new Path("/conflict/file");
      byte[] data = new byte[300_000];
      new Random(4).nextBytes(data);
      try (FSDataOutputStream out = fs.create(file, FsPermission.getFileDefault(), true, 4096, (short) 1,
          128L << 20, null, new InetSocketAddress[] {dn4.getXferAddress()})) {
        out.write(data);
      }
      List<LocatedBlock> blocks = fs.getClient().getLocatedBlocks(file.toString(), 0).getLocatedBlocks();
      assertEquals(1, blocks.size());
      assertEquals(dn4.getDatanodeUuid(), blocks.get(0).getLocations()[0].getDatanodeUuid(),
          "favored node ignored");
      assertArrayEquals(data, DFSTestUtil.readFileAsBytes(fs, file));
      FileSystem web = WebHdfsTestUtil.getWebHdfsFileSystem(conf, WebHdfsConstants.WEBHDFS_SCHEME);
      assertArrayEquals(data, DFSTestUtil.readFileAsBytes(web, file));
    }
  }

  @Test
  @Order(4)
  @Timeout(120)
  void shutdownStopsEveryPluginAndReleasesItsPorts() throws Exception {
    List<RdmaDataNodePlugin> plugins = RdmaDataNodePlugin.running();
    assertEquals(4, plugins.size(), plugins.toString());
    List<InetSocketAddress> ports = new ArrayList<>();
    for (RdmaDataNodePlugin p : plugins) {
      if (p.state() == RdmaDataNodePlugin.State.SERVING) {
        ports.add(p.serviceAddress());
      }
    }
    assertEquals(3, ports.size());
    cluster.shutdown();
    cluster = null;
    assertEquals(List.of(), RdmaDataNodePlugin.running());
    for (RdmaDataNodePlugin p : plugins) {
      assertEquals(RdmaDataNodePlugin.State.STOPPED, p.state());
      assertNull(p.serviceAddress());
      p.stop(); // idempotent
    }
    for (InetSocketAddress a : ports) {
      try (ServerSocket s = new ServerSocket()) {
        s.setReuseAddress(true);
        s.bind(a);
      }
    }
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
    List<String> left;
    do {
      left = new ArrayList<>();
      for (Thread t : Thread.getAllStackTraces().keySet()) {
        if (t.isAlive() && t.getName().startsWith("hrdma-")) {
          left.add(t.getName());
        }
      }
      if (left.isEmpty()) {
        return;
      }
      Thread.sleep(20);
    } while (System.nanoTime() < end);
    fail("threads left after shutdown: " + left);
  }

  @Test
  @Order(0)
  void pluginOnSomethingElseFailsQuietly() {
    RdmaDataNodePlugin p = new RdmaDataNodePlugin();
    p.start("not a datanode");
    assertEquals(RdmaDataNodePlugin.State.FAILED, p.state());
    assertNotNull(p.failure());
    assertTrue(p.failure().contains("not a DataNode"), p.failure());
    p.stop();
    p.stop();
    assertEquals(RdmaDataNodePlugin.State.STOPPED, p.state());
  }
}
