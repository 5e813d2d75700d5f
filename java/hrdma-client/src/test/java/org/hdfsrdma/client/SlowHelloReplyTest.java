package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.hdfsrdma.protocol.RdmaPorts;
import org.hdfsrdma.transport.TransportConf;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * A client waits for a DataNode's hello reply as stock's client waits for a DataNode's
 * responses (dfs.client.socket-timeout, the DataNode's own wait for our hello), not the connect
 * timeout: a loaded but honest DataNode that answers late is served over hrdma, and one that
 * never answers is left for the stock path after that timeout (counted). The DataNode is
 * reached through a proxy that holds back its first bytes (the hello reply).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class SlowHelloReplyTest {
  private static final int CONNECT_MS = 300;
  private static final int SOCKET_TIMEOUT_MS = 4000;

  private MiniDFSCluster cluster;
  private final Path file = new Path("/slow-hello");
  private final byte[] data = new byte[300_000];

  @BeforeAll
  void start() throws Exception {
    cluster = PluginCluster.start(PluginCluster.baseConf(), getClass(), 1);
    new Random(7).nextBytes(data);
    try (FSDataOutputStream out = cluster.getFileSystem().create(file)) {
      out.write(data);
    }
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(null, cluster);
  }

  /** Our client, every same-host shortcut off, reaching the DataNode's plugin through {@code proxy}. */
  private RdmaDistributedFileSystem client(DelayingProxy proxy) throws IOException {
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    c.setBoolean(HrdmaClientKeys.READ_LOCAL_KEY, false);
    c.setBoolean(HrdmaClientKeys.READ_SHM_KEY, false);
    c.set(TransportConf.ORDER_KEY, "tcp"); // the bootstrap connection through the proxy carries the data
    c.set(TransportConf.CONNECT_TIMEOUT_KEY, String.valueOf(CONNECT_MS));
    c.setInt(HdfsClientConfigKeys.DFS_CLIENT_SOCKET_TIMEOUT_KEY, SOCKET_TIMEOUT_MS);
    c.setInt(RdmaPorts.PORT_KEY, proxy.port());
    return (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
  }

  private InetSocketAddress plugin() {
    return new InetSocketAddress("127.0.0.1",
        RdmaPorts.pluginPort(cluster.getDataNodes().get(0).getDatanodeId(), cluster.getConfiguration(0)));
  }

  @Test
  void aDataNodeThatAnswersItsHelloLateIsServedOverHrdma() throws Exception {
    try (DelayingProxy proxy = new DelayingProxy(plugin(), 6L * CONNECT_MS);
        RdmaDistributedFileSystem fs = client(proxy)) {
      assertArrayEquals(data, PluginCluster.readWhole(fs, file));
      assertEquals(0, fs.stockFallbacks(), "a late but honest DataNode was left for the stock path");
      assertEquals(data.length, fs.rdmaBytesRead());
      assertTrue(proxy.accepted() >= 1, "the client did not go through the proxy");
    }
  }

  @Test
  void aDataNodeThatNeverAnswersIsLeftForTheStockPathAfterTheSocketTimeout() throws Exception {
    try (DelayingProxy proxy = new DelayingProxy(plugin(), Long.MAX_VALUE);
        RdmaDistributedFileSystem fs = client(proxy)) {
      long t0 = System.nanoTime();
      assertArrayEquals(data, PluginCluster.readWhole(fs, file));
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertEquals(1, fs.stockFallbacks());
      assertEquals(0, fs.rdmaBytesRead());
      assertTrue(ms >= SOCKET_TIMEOUT_MS, "fell back after " + ms + " ms, before the socket timeout");
      assertTrue(proxy.accepted() >= 1, "the client did not go through the proxy");
    }
  }

  /**
   * Forwards connections to {@code target}; what the target sends back is held for
   * {@code holdMs} (forever: Long.MAX_VALUE) before the first byte is passed on.
   */
  private static final class DelayingProxy implements AutoCloseable {
    private final ServerSocket server = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final Thread acceptor;
    private volatile int accepted;

    DelayingProxy(InetSocketAddress target, long holdMs) throws IOException {
      acceptor = new Thread(() -> {
        while (!server.isClosed()) {
          try {
            Socket in = server.accept();
            Socket out = new Socket(target.getAddress(), target.getPort());
            sockets.add(in);
            sockets.add(out);
            accepted++;
            pump(in, out, 0, "up");
            pump(out, in, holdMs, "down");
          } catch (IOException e) {
            return; // closed
          }
        }
      }, "delaying-proxy");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    private void pump(Socket from, Socket to, long holdMs, String name) {
      Thread t = new Thread(() -> {
        byte[] b = new byte[64 << 10];
        boolean first = true;
        try (InputStream i = from.getInputStream(); OutputStream o = to.getOutputStream()) {
          int n;
          while ((n = i.read(b)) > 0) {
            if (first && holdMs > 0) {
              Thread.sleep(holdMs);
            }
            first = false;
            o.write(b, 0, n);
            o.flush();
          }
        } catch (IOException | InterruptedException e) {
          // either side closed
        } finally {
          closeQuietly(from);
          closeQuietly(to);
        }
      }, "delaying-proxy-" + name);
      t.setDaemon(true);
      t.start();
    }

    int port() {
      return server.getLocalPort();
    }

    int accepted() {
      return accepted;
    }

    @Override
    public void close() throws IOException {
      server.close();
      for (Socket s : sockets) {
        closeQuietly(s);
      }
    }

    private static void closeQuietly(Socket s) {
      try {
        s.close();
      } catch (IOException e) {
        // closing anyway
      }
    }
  }
}
