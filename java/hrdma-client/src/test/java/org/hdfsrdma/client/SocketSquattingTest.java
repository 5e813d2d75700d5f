package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.protocol.ShortCircuitSocket;
import org.hdfsrdma.protocol.SocketPaths;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * With block tokens on, a short-circuit socket in a sticky directory others may
 * write to (as /tmp) could have been created by another local user before the
 * DataNode: the DataNode does not bind there, and a client sends no token there
 * and reads over the transports instead, content unchanged.
 */
@Timeout(180)
class SocketSquattingTest {
  private static final int LEN = 2 * PluginCluster.BLOCK + 77;

  /** A fresh directory anyone may write to, sticky as /tmp; the socket path in it. */
  private static String stickySocketPath() throws Exception {
    java.nio.file.Path dir = Files.createTempDirectory(java.nio.file.Path.of("target"), "sticky-").toAbsolutePath();
    Files.setAttribute(dir, "unix:mode", 01777);
    return dir.resolve("dn-_PORT.sock").toString();
  }

  private static Configuration clusterConf(String socketPath, boolean allowSticky) {
    Configuration conf = PluginCluster.baseConf();
    conf.set(ShortCircuitSocket.PATH_KEY, socketPath);
    conf.setBoolean(SocketPaths.ALLOW_STICKY_KEY, allowSticky);
    return conf;
  }

  private static RdmaDistributedFileSystem client(MiniDFSCluster cluster, String socketPath, boolean allowSticky)
      throws Exception {
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    c.set(ShortCircuitSocket.PATH_KEY, socketPath);
    c.setBoolean(RdmaBlockClient.LOCAL_READS_KEY, true);
    c.setBoolean(SocketPaths.ALLOW_STICKY_KEY, allowSticky);
    c.setBoolean("fs.hdfs.impl.disable.cache", true);
    return (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
  }

  private static byte[] writeAndRead(MiniDFSCluster cluster, RdmaDistributedFileSystem fs, String name)
      throws Exception {
    byte[] data = PluginCluster.random(LEN, name.hashCode());
    Path p = new Path(name);
    try (FSDataOutputStream out = cluster.getFileSystem().create(p, (short) 1)) {
      out.write(data);
    }
    byte[] got = new byte[LEN];
    try (FSDataInputStream in = fs.open(p)) {
      in.readFully(0, got);
    }
    assertArrayEquals(data, got);
    return got;
  }

  private static long granted() {
    return RdmaDataNodePlugin.running().stream().mapToLong(RdmaDataNodePlugin::shortCircuitGranted).sum();
  }

  private static long refused() {
    return RdmaDataNodePlugin.running().stream().mapToLong(RdmaDataNodePlugin::shortCircuitRefused).sum();
  }

  @Test
  void theDataNodeBindsNoSocketThereAndClientsReadOverTheTransports() throws Exception {
    String path = stickySocketPath();
    MiniDFSCluster cluster = PluginCluster.start(clusterConf(path, false), getClass(), 1);
    RdmaDistributedFileSystem fs = null;
    try {
      for (RdmaDataNodePlugin p : RdmaDataNodePlugin.running()) {
        assertNull(p.shortCircuitPath(), "a short-circuit socket bound in a sticky directory");
      }
      fs = client(cluster, path, false);
      writeAndRead(cluster, fs, "/squat/server");
      assertEquals(0, fs.localBytesRead(), "short-circuit bytes");
      assertTrue(fs.rdmaBytesRead() >= LEN, "over the transports: " + fs.rdmaBytesRead());
    } finally {
      PluginCluster.shutdown(fs, cluster);
    }
  }

  @Test
  void aClientSendsNoTokenToASocketThereUnlessAllowed() throws Exception {
    String path = stickySocketPath();
    // this DataNode binds there (as a squatter could): the refusal below is the client's own
    MiniDFSCluster cluster = PluginCluster.start(clusterConf(path, true), getClass(), 1);
    RdmaDistributedFileSystem fs = null;
    RdmaDistributedFileSystem allowed = null;
    try {
      for (RdmaDataNodePlugin p : RdmaDataNodePlugin.running()) {
        assertNotNull(p.shortCircuitPath(), "the DataNode allowed to bind in a sticky directory");
      }
      fs = client(cluster, path, false);
      writeAndRead(cluster, fs, "/squat/client");
      assertEquals(0, granted() + refused(), "the socket got no request");
      assertEquals(0, fs.localBytesRead(), "short-circuit bytes");
      assertTrue(fs.localFallbacks() > 0, "counted as a short-circuit fallback");
      assertTrue(fs.rdmaBytesRead() >= LEN, "over the transports: " + fs.rdmaBytesRead());

      allowed = client(cluster, path, true);
      writeAndRead(cluster, allowed, "/squat/allowed");
      assertTrue(granted() > 0, "a client allowed to use it is served there");
      assertTrue(allowed.localBytesRead() >= LEN, "short-circuit bytes: " + allowed.localBytesRead());
    } finally {
      if (allowed != null) {
        allowed.close();
      }
      PluginCluster.shutdown(fs, cluster);
    }
  }
}
