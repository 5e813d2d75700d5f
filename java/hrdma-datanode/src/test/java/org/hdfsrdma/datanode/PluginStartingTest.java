package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.hdfsrdma.protocol.RdmaPorts;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.hdfsrdma.transport.select.HrdmaConnector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The plugin listens from {@link RdmaDataNodePlugin#start}, before its DataNode registers, and
 * refuses every hello as "starting" until it serves; one that cannot start releases its port.
 * The warm-up ({@link RdmaDataNodePlugin#warmUpBody}) holds the plugin in "starting".
 */
class PluginStartingTest {
  private static final long WAIT_MS = 30_000;

  private static MiniDFSCluster cluster(String name) throws Exception {
    Configuration conf = new Configuration();
    conf.set(DFSConfigKeys.DFS_DATANODE_PLUGINS_KEY, RdmaDataNodePlugin.class.getName());
    conf.set(TransportConf.CONNECT_TIMEOUT_KEY, "3000");
    File base = new File("target/test-dir/" + PluginStartingTest.class.getSimpleName() + "-" + name);
    MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(1).build();
    cluster.waitActive();
    return cluster;
  }

  private static RdmaDataNodePlugin pluginOf(DataNode dn) {
    return RdmaDataNodePlugin.running().stream().filter(p -> dn.getDatanodeUuid().equals(p.datanodeUuid()))
        .findFirst().orElseThrow(() -> new AssertionError("no plugin for " + dn));
  }

  private static HrdmaConnector connector() {
    return new HrdmaConnector(TransportConf.defaults().with(TransportConf.CONNECT_TIMEOUT_KEY, "3000"));
  }

  @Test
  @Timeout(180)
  void aRegisteredDataNodesPluginRefusesAsStartingUntilItServes() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    Callable<Integer> real = RdmaDataNodePlugin.warmUpBody;
    RdmaDataNodePlugin.warmUpBody = () -> {
      release.await();
      return 0;
    };
    MiniDFSCluster cluster = null;
    try {
      cluster = cluster("refuses");
      // registered with the NameNode (waitActive): the plugin listens already, and does not serve
      DataNode dn = cluster.getDataNodes().get(0);
      RdmaDataNodePlugin p = pluginOf(dn);
      assertEquals(RdmaDataNodePlugin.State.WAITING, p.state());
      assertNull(p.serviceAddress(), "not serving");
      InetSocketAddress listening = p.listeningAddress();
      assertNotNull(listening, "listening before the DataNode registered");
      assertEquals(dn.getXferPort() + RdmaPorts.PORT_OFFSET_DEFAULT, listening.getPort());
      InetSocketAddress dial = new InetSocketAddress("127.0.0.1", listening.getPort());
      try (HrdmaConnector c = connector()) {
        for (int i = 0; i < 3; i++) {
          TransportException e = assertThrows(TransportException.class, () -> InfoClient.info(c, dial));
          assertInstanceOf(TransportException.Starting.class, e, e.toString());
        }
        assertEquals(3, p.refusedStarting());
        release.countDown();
        PluginMiniClusters.awaitServing(cluster);
        assertEquals(listening, p.serviceAddress(), "the port it listened on serves");
        assertEquals(dn.getDatanodeUuid(), InfoClient.info(c, dial).info().datanodeUuid());
        assertEquals(3, p.refusedStarting());
      }
    } finally {
      release.countDown();
      RdmaDataNodePlugin.warmUpBody = real;
      if (cluster != null) {
        cluster.shutdown();
      }
    }
  }

  /**
   * A plugin whose start fails after it listened (here its warm-up throws an Error, which the
   * warm-up's own catch does not take) closes its server: the port is free, a client meets no
   * listener (the stock path, as on a DataNode without the plugin), not a "starting" forever.
   */
  @Test
  @Timeout(180)
  void aPluginThatCannotStartReleasesItsPort() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    Callable<Integer> real = RdmaDataNodePlugin.warmUpBody;
    RdmaDataNodePlugin.warmUpBody = () -> {
      release.await();
      throw new AssertionError("a start made to fail");
    };
    MiniDFSCluster cluster = null;
    try {
      cluster = cluster("fails");
      DataNode dn = cluster.getDataNodes().get(0);
      RdmaDataNodePlugin p = pluginOf(dn);
      InetSocketAddress listening = p.listeningAddress();
      assertNotNull(listening);
      release.countDown();
      long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
      while ((p.state() != RdmaDataNodePlugin.State.FAILED || p.listeningAddress() != null)
          && System.nanoTime() < end) {
        Thread.sleep(20);
      }
      assertEquals(RdmaDataNodePlugin.State.FAILED, p.state());
      assertTrue(p.failure().contains("cannot start") && p.failure().contains("a start made to fail"), p.failure());
      assertNull(p.listeningAddress());
      try (HrdmaConnector c = connector()) {
        TransportException e = assertThrows(TransportException.class,
            () -> InfoClient.info(c, new InetSocketAddress("127.0.0.1", listening.getPort())));
        assertInstanceOf(TransportException.Unreachable.class, e, e.toString());
        assertFalse(e instanceof TransportException.Starting);
      }
      try (ServerSocket s = new ServerSocket()) {
        s.setReuseAddress(true);
        s.bind(listening); // released
      }
    } finally {
      release.countDown();
      RdmaDataNodePlugin.warmUpBody = real;
      if (cluster != null) {
        cluster.shutdown();
      }
    }
  }
}
