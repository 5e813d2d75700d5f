package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.protocol.DatanodeID;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo.DatanodeInfoBuilder;
import org.hdfsrdma.protocol.RdmaPorts;
import org.hdfsrdma.transport.TransportConf;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * A DataNode that accepts a connection and never answers its hello holds up only the threads
 * that want a connection to it: one client (shared by every thread of a JVM, as a FileSystem
 * is) connects to another, healthy DataNode meanwhile at once, and the threads that want the
 * silent one share one connect and its failure.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class SilentDataNodeConnectTest {
  private static final org.apache.hadoop.security.token.Token<
      org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier> NO_TOKEN = null; // no security here
  private static final int HELLO_WAIT_MS = 6000; // dfs.client.socket-timeout: the wait for a hello reply

  private MiniDFSCluster cluster;

  @BeforeAll
  void start() throws Exception {
    cluster = PluginCluster.start(PluginCluster.baseConf(), getClass(), 1);
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(null, cluster);
  }

  private Configuration conf() {
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    c.set(TransportConf.ORDER_KEY, "tcp");
    c.set(TransportConf.CONNECT_TIMEOUT_KEY, "1000");
    c.setInt(HdfsClientConfigKeys.DFS_CLIENT_SOCKET_TIMEOUT_KEY, HELLO_WAIT_MS);
    return c;
  }

  /** A DataNode whose plugin port accepts connections and never says a word. */
  private static final class Silent implements AutoCloseable {
    final ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    final List<Socket> held = new CopyOnWriteArrayList<>();
    final AtomicInteger accepted = new AtomicInteger();

    Silent() throws IOException {
      Thread t = new Thread(() -> {
        while (!server.isClosed()) {
          try {
            held.add(server.accept());
            accepted.incrementAndGet();
          } catch (IOException e) {
            return;
          }
        }
      }, "silent-datanode");
      t.setDaemon(true);
      t.start();
    }

    DatanodeInfo node(Configuration conf) {
      int xfer = server.getLocalPort() - conf.getInt(RdmaPorts.PORT_OFFSET_KEY, RdmaPorts.PORT_OFFSET_DEFAULT);
      return new DatanodeInfoBuilder().setNodeID(new DatanodeID("127.0.0.1", "localhost", "silent-dn", xfer,
          xfer + 1, xfer + 2, xfer + 3)).build();
    }

    @Override
    public void close() throws IOException {
      server.close();
      for (Socket s : held) {
        s.close();
      }
    }
  }

  @Test
  void aSilentDataNodeDoesNotDelayAConnectionToAnother() throws Exception {
    Configuration conf = conf();
    DatanodeInfo healthy = new DatanodeInfoBuilder().setNodeID(cluster.getDataNodes().get(0).getDatanodeId())
        .build();
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try (Silent silent = new Silent(); RdmaBlockClient client = new RdmaBlockClient(conf)) {
      DatanodeInfo quiet = silent.node(conf);
      assertTrue(RdmaPorts.pluginPort(quiet, conf) == silent.server.getLocalPort());
      Future<DataNodeConnection> stuck = threads.submit(() -> client.connection(quiet, NO_TOKEN));
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (silent.accepted.get() == 0) {
        assertTrue(System.nanoTime() < until, "the client never reached the silent DataNode");
        Thread.sleep(10);
      }
      long t0 = System.nanoTime();
      DataNodeConnection c = threads.submit(() -> client.connection(healthy, NO_TOKEN)).get();
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertTrue(c.isOpen());
      assertFalse(stuck.isDone(), "the silent DataNode answered after all");
      assertTrue(ms < HELLO_WAIT_MS / 2, "the healthy DataNode's connection waited " + ms + " ms for the silent one");
      ExecutionException e = assertThrows(ExecutionException.class, stuck::get);
      assertTrue(e.getCause() instanceof IOException, e.toString());
    } finally {
      threads.shutdownNow();
    }
  }

  @Test
  void threadsWantingTheSameSilentDataNodeShareOneConnectAndItsFailure() throws Exception {
    Configuration conf = conf();
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try (Silent silent = new Silent(); RdmaBlockClient client = new RdmaBlockClient(conf)) {
      DatanodeInfo quiet = silent.node(conf);
      Future<DataNodeConnection> a = threads.submit(() -> client.connection(quiet, NO_TOKEN));
      Future<DataNodeConnection> b = threads.submit(() -> client.connection(quiet, NO_TOKEN));
      long t0 = System.nanoTime();
      ExecutionException ea = assertThrows(ExecutionException.class, a::get);
      ExecutionException eb = assertThrows(ExecutionException.class, b::get);
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertTrue(ea.getCause() instanceof IOException, ea.toString());
      assertTrue(eb.getCause() instanceof IOException, eb.toString());
      assertEquals(1, silent.accepted.get(), "each thread connected on its own");
      assertTrue(ms < 2L * HELLO_WAIT_MS, "the second thread waited for a second connect: " + ms + " ms");
    } finally {
      threads.shutdownNow();
    }
  }
}
