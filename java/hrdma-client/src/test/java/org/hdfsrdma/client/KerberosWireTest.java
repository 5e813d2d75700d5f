package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.sasl.SaslDataTransferTestCase;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.io.IOUtils;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.protocol.wire.ClientGate;
import org.hdfsrdma.transport.FrameTap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Data transfer protection with Kerberos and dfs.data.transfer.protection (Hadoop's
 * SaslDataTransferTestCase: a MiniKdc, keytabs, HTTPS): our client authenticates each
 * connection with the block token (SASL DIGEST-MD5, the QOP stock's resolver gives) and, at
 * integrity and privacy, no plaintext crosses our transports; a forged token password and an
 * expired token are refused with a clear error and counted, and the file is still read.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class KerberosWireTest extends SaslDataTransferTestCase {
  private MiniDFSCluster cluster;

  /**
   * Kerberos login is JVM-wide: the next test classes in this JVM must find Hadoop in simple
   * mode again (else their MiniDFSClusters ask for keytabs).
   */
  @org.junit.jupiter.api.AfterAll
  static void backToSimpleSecurity() {
    org.apache.hadoop.conf.Configuration simple = new org.apache.hadoop.conf.Configuration();
    simple.set("hadoop.security.authentication", "simple");
    org.apache.hadoop.security.UserGroupInformation.reset();
    org.apache.hadoop.security.UserGroupInformation.setConfiguration(simple);
  }

  @AfterEach
  void stop() {
    FrameTap.set(null);
    if (cluster != null) {
      cluster.shutdown();
      cluster = null;
    }
  }

  private RdmaDistributedFileSystem start(String protection) throws Exception {
    HdfsConfiguration conf = createSecureConfig(protection);
    for (Map.Entry<String, String> e : PluginCluster.baseConf()) {
      if (e.getKey().startsWith("hrdma.") || e.getKey().equals("dfs.datanode.plugins")
          || e.getKey().equals("dfs.blocksize") || e.getKey().equals("dfs.bytes-per-checksum")) {
        conf.set(e.getKey(), e.getValue());
      }
    }
    File base = new File("target/test-dir/KerberosWireTest-" + protection);
    cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(3).build();
    cluster.waitActive();
    PluginCluster.awaitPluginsServing(cluster);
    return (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), WireProtectionTest.clientConf(cluster));
  }

  private void noPlaintextAt(String protection) throws Exception {
    try (RdmaDistributedFileSystem fs = start(protection)) {
      long before = RdmaDataNodePlugin.running().stream().mapToLong(RdmaDataNodePlugin::wireHandshakes).sum();
      WireProtectionTest.MarkerTap tap = new WireProtectionTest.MarkerTap();
      FrameTap.set(tap);
      WireProtectionTest.writeAndRead(fs, new Path("/kerberos/" + protection));
      FrameTap.set(null);
      assertEquals(0, fs.protectionFallbacks());
      assertEquals(0, fs.stockWriteFallbacks());
      assertTrue(fs.rdmaBytesWritten() > 0 && fs.rdmaBytesRead() > 0,
          fs.rdmaBytesWritten() + " written, " + fs.rdmaBytesRead() + " read over hrdma");
      assertTrue(tap.frames.get() > 12, "frames: " + tap.frames.get());
      assertEquals(0, tap.marked.get(), "frames holding plaintext");
      assertTrue(RdmaDataNodePlugin.running().stream().mapToLong(RdmaDataNodePlugin::wireHandshakes).sum() > before);
    }
  }

  @Test
  void privacy() throws Exception {
    noPlaintextAt("privacy");
  }

  @Test
  void integrity() throws Exception {
    noPlaintextAt("integrity");
  }

  @Test
  void forgedOrExpiredTokenIsRefusedAndCounted() throws Exception {
    try (RdmaDistributedFileSystem fs = start("privacy")) {
      Path p = new Path("/kerberos/forged");
      WireProtectionTest.writeAndRead(fs, p);
      LocatedBlock b = fs.getClient().getLocatedBlocks(p.toUri().getPath(), 0).get(0);
      Token<BlockTokenIdentifier> t = b.getBlockToken();
      byte[] pw = t.getPassword().clone();
      pw[0] ^= 1;
      b.setBlockToken(new Token<>(t.getIdentifier(), pw, t.getKind(), t.getService()));
      long failed = RdmaDataNodePlugin.running().stream().mapToLong(RdmaDataNodePlugin::wireHandshakesFailed).sum();
      Configuration c = WireProtectionTest.clientConf(cluster);
      try (RdmaBlockClient client = new RdmaBlockClient(c)) {
        assertThrows(ClientGate.ProtectionException.class, () -> client.open(b, b.getLocations()[0], 0, 4096));
        assertEquals(1, client.protectionFallbacks());
      }
      assertEquals(failed + 1,
          RdmaDataNodePlugin.running().stream().mapToLong(RdmaDataNodePlugin::wireHandshakesFailed).sum());
      // an expired token: the DataNode's secret manager refuses it by name
      BlockTokenIdentifier id = t.decodeIdentifier();
      id.setExpiryDate(System.currentTimeMillis() - 60_000);
      b.setBlockToken(new Token<>(id.getBytes(), t.getPassword(), t.getKind(), t.getService()));
      try (RdmaBlockClient client = new RdmaBlockClient(c)) {
        ClientGate.ProtectionException e = assertThrows(ClientGate.ProtectionException.class,
            () -> client.open(b, b.getLocations()[0], 0, 4096));
        assertTrue(e.getMessage().contains("expired"), e.getMessage());
        assertEquals(1, client.protectionFallbacks());
      }
      assertEquals(failed + 2,
          RdmaDataNodePlugin.running().stream().mapToLong(RdmaDataNodePlugin::wireHandshakesFailed).sum());
      byte[] back = new byte[WireProtectionTest.markedData().length];
      try (FSDataInputStream in = fs.open(p)) {
        IOUtils.readFully(in, back, 0, back.length);
      }
      assertArrayEquals(WireProtectionTest.markedData(), back);
    }
  }
}
