package org.hdfsrdma.client;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.BlockLocalPathInfo;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.hdfsrdma.protocol.ShortCircuitSocket;

/**
 * What the short-circuit read tests (LocalReadTest, PreadTest, ZeroCopyReadTest) share: a
 * socket directory of their own under target/ (so no other cluster of the machine answers
 * there), the cluster and client settings that use it, and a replica's files to look at or
 * corrupt in place.
 */
final class LocalReadFixture {
  /** Where the DataNodes' short-circuit sockets are. */
  final Path socketDir;

  /** A new socket directory target/PREFIX*. */
  LocalReadFixture(String prefix) throws IOException {
    socketDir = Files.createTempDirectory(Path.of("target"), prefix).toAbsolutePath();
  }

  /** The socket path pattern of the DataNodes (_PORT: the xfer port). */
  String socketPath() {
    return socketDir.resolve("dn-_PORT.sock").toString();
  }

  /** The cluster's settings: the tests' base, with the DataNodes' sockets in {@link #socketDir}. */
  Configuration clusterConf() {
    Configuration conf = PluginCluster.baseConf();
    conf.set(ShortCircuitSocket.PATH_KEY, socketPath());
    return conf;
  }

  /**
   * Our client for {@code cluster}, short-circuit reads on or off ({@code local}) at the
   * DataNodes' sockets; windows of {@code windowBytes} verified {@code ahead} ahead when
   * {@code windowBytes} &gt; 0 (else the defaults).
   */
  Configuration clientConf(MiniDFSCluster cluster, boolean local, int windowBytes, int ahead) {
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    c.set(ShortCircuitSocket.PATH_KEY, socketPath());
    c.setBoolean(RdmaBlockClient.LOCAL_READS_KEY, local);
    if (windowBytes > 0) {
      c.setInt(RdmaBlockClient.LOCAL_WINDOW_BYTES_KEY, windowBytes);
      c.setInt(RdmaBlockClient.LOCAL_VERIFY_AHEAD_KEY, ahead);
    }
    return c;
  }

  /** The block and .meta files of {@code lb}'s replica on {@code dn}. */
  static BlockLocalPathInfo files(MiniDFSCluster cluster, DatanodeInfo dn, LocatedBlock lb) throws IOException {
    for (DataNode d : cluster.getDataNodes()) {
      if (d.getDatanodeUuid().equals(dn.getDatanodeUuid())) {
        return d.getFSDataset().getBlockLocalPathInfo(lb.getBlock());
      }
    }
    throw new AssertionError("no DataNode " + dn);
  }

  /** Flips the byte at block offset {@code at} of {@code lb}'s replica on {@code dn}, in place. */
  static void flip(MiniDFSCluster cluster, DatanodeInfo dn, LocatedBlock lb, long at) throws IOException {
    File f = new File(files(cluster, dn, lb).getBlockPath());
    try (RandomAccessFile raf = new RandomAccessFile(f, "rw")) {
      raf.seek(at);
      int v = raf.read();
      raf.seek(at);
      raf.write(v ^ 0x01);
    }
  }
}
