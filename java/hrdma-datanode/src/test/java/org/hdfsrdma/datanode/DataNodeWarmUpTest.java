package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.hdfsrdma.protocol.RdmaPorts;
import org.hdfsrdma.transport.BufferPool;
import org.hdfsrdma.transport.SlabAllocator;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.select.HrdmaConnector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The DataNode plugin's warm-up: it runs a write's messages through the codec and leaves
 * nothing behind (buffers, registered memory, descriptors, threads); a plugin runs it before it
 * listens and serves whether it succeeded, failed, or was turned off.
 */
class DataNodeWarmUpTest {
  @Test
  void runsAWritesMessagesAndLeavesNothingBehind() throws Exception {
    DataNodeWarmUp.run(); // the classes loaded and their jars opened, as in a DataNode after its first run
    Set<Thread> threadsBefore = Thread.getAllStackTraces().keySet();
    long fdsBefore = openDescriptors();
    int messages;
    try (BufferPool pool = new BufferPool(SlabAllocator.DIRECT, 256 << 10, 1 << 20)) {
      messages = DataNodeWarmUp.run(pool);
      assertEquals(0, pool.buffersOutstanding(), "every message's buffer released");
      assertTrue(pool.bytesRegistered() > 0, "the messages went through the pool");
      pool.close();
      assertEquals(0, pool.bytesRegistered(), "the pool's memory freed at close");
    }
    // the write request, a forwarded one, the response, a data packet, an ack, a write reference and
    // the write segment's request, grant and release
    assertEquals(9, messages);
    long fdsAfter = openDescriptors();
    // fewer is another test's cluster closing files in the background
    assertTrue(fdsAfter <= fdsBefore, "no descriptor left open: " + fdsBefore + " before, " + fdsAfter + " after");
    Set<String> started = Thread.getAllStackTraces().keySet().stream().filter(t -> !threadsBefore.contains(t))
        .filter(Thread::isAlive).map(Thread::getName).collect(Collectors.toSet());
    assertEquals(Set.of(), started, "no thread started");
  }

  @Test
  @Timeout(180)
  void aPluginServesWhenItsWarmUpRanFailedOrWasOff() throws Exception {
    assertServes("ok", null);
    Callable<Integer> real = RdmaDataNodePlugin.warmUpBody;
    RdmaDataNodePlugin.warmUpBody = () -> {
      throw new IllegalStateException("a warm-up made to fail");
    };
    try {
      assertServes("failed: java.lang.IllegalStateException: a warm-up made to fail", null);
    } finally {
      RdmaDataNodePlugin.warmUpBody = real;
    }
    assertServes(null, "false");
  }

  /** One DataNode with the plugin (hrdma.datanode.warm-up = {@code setting} unless null): serves, answers INFO. */
  private void assertServes(String warmUpResult, String setting) throws Exception {
    Configuration conf = new Configuration();
    conf.set(DFSConfigKeys.DFS_DATANODE_PLUGINS_KEY, RdmaDataNodePlugin.class.getName());
    conf.set(TransportConf.CONNECT_TIMEOUT_KEY, "3000");
    if (setting != null) {
      conf.set(HrdmaDataNodeKeys.WARM_UP_KEY, setting);
    }
    File base = new File("target/test-dir/" + getClass().getSimpleName() + "-" + System.nanoTime());
    MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(1).build();
    try {
      cluster.waitActive();
      PluginMiniClusters.awaitServing(cluster);
      DataNode dn = cluster.getDataNodes().get(0);
      RdmaDataNodePlugin plugin = RdmaDataNodePlugin.running().stream()
          .filter(p -> p.state() == RdmaDataNodePlugin.State.SERVING
              && p.serviceAddress().getPort() == dn.getXferPort() + RdmaPorts.PORT_OFFSET_DEFAULT)
          .findFirst().orElseThrow(() -> new AssertionError("no serving plugin for " + dn));
      if (warmUpResult == null) {
        assertNull(plugin.warmUpResult());
      } else {
        assertEquals(warmUpResult, plugin.warmUpResult());
      }
      try (HrdmaConnector c = new HrdmaConnector(TransportConf.defaults().with(TransportConf.CONNECT_TIMEOUT_KEY,
          "3000"))) {
        InfoClient.Answer a = InfoClient.info(c, new InetSocketAddress("127.0.0.1", plugin.serviceAddress().getPort()));
        assertNotNull(a);
      }
    } finally {
      cluster.shutdown();
    }
  }

  private static long openDescriptors() throws IOException {
    try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
      return s.count();
    }
  }
}
