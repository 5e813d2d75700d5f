package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.datatransfer.TrustedChannelResolver;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.transport.FrameTap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Stock's trusted-channel resolver (dfs.trustedchannel.resolver.class) on an encrypted cluster:
 * where it trusts both ends, stock's SaslDataTransferClient and Server skip SASL and carry the
 * stream as it is; our path does the same (no handshake, no seal, counted on the DataNode),
 * rather than falling back to stock or encrypting anyway.
 */
@Timeout(300)
class TrustedChannelTest {
  /** Trusts this host and every loopback peer: the test cluster's whole world. */
  public static final class LoopbackTrusted extends TrustedChannelResolver {
    @Override
    public boolean isTrusted() {
      return true;
    }

    @Override
    public boolean isTrusted(InetAddress peer) {
      return peer.isLoopbackAddress();
    }
  }

  @Test
  void trustedChannelsSkipTheHandshakeAsStockDoes() throws Exception {
    org.apache.hadoop.conf.Configuration conf = WireProtectionTest.encrypted(PluginCluster.baseConf());
    conf.setClass("dfs.trustedchannel.resolver.class", LoopbackTrusted.class, TrustedChannelResolver.class);
    // a hello late on a loaded machine would send the write to the stock path, which this test is not about
    conf.set(org.hdfsrdma.transport.TransportConf.CONNECT_TIMEOUT_KEY, "30000");
    MiniDFSCluster cluster = PluginCluster.start(conf, getClass(), 3);
    RdmaDistributedFileSystem fs = null;
    try {
      org.apache.hadoop.conf.Configuration cc = WireProtectionTest.clientConf(cluster);
      cc.setClass("dfs.trustedchannel.resolver.class", LoopbackTrusted.class, TrustedChannelResolver.class);
      cc.set(org.hdfsrdma.transport.TransportConf.CONNECT_TIMEOUT_KEY, "30000");
      fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), cc);
      WireProtectionTest.MarkerTap tap = new WireProtectionTest.MarkerTap();
      FrameTap.set(tap);
      WireProtectionTest.writeAndRead(fs, new Path("/trusted/f"));
      FrameTap.set(null);
      assertTrue(fs.rdmaBytesWritten() >= 3 * PluginCluster.BLOCK, "written over hrdma: " + fs.rdmaBytesWritten());
      assertTrue(fs.rdmaBytesRead() >= 3 * PluginCluster.BLOCK, "read over hrdma: " + fs.rdmaBytesRead());
      assertEquals(0, fs.protectionFallbacks(), "nothing went to the stock path");
      assertEquals(0, fs.stockWriteFallbacks());
      assertEquals(0, sum(RdmaDataNodePlugin::wireHandshakes), "no handshake on a trusted channel");
      assertEquals(0, sum(RdmaDataNodePlugin::wireUnprotectedRefused));
      assertTrue(sum(RdmaDataNodePlugin::wireTrustedChannels) >= 3,
          "client and pipeline connections served as trusted: " + sum(RdmaDataNodePlugin::wireTrustedChannels));
      assertTrue(tap.marked.get() > 0, "a trusted channel is not encrypted, as stock's: the tap saw no marker in "
          + tap.frames.get() + " frames");
    } finally {
      FrameTap.set(null);
      PluginCluster.shutdown(fs, cluster);
    }
  }

  private static long sum(java.util.function.ToLongFunction<RdmaDataNodePlugin> f) {
    return RdmaDataNodePlugin.running().stream().mapToLong(f).sum();
  }

  /** The resolver's default trusts nothing: the same cluster conf without it still shakes hands (see WireProtectionTest). */
  @Test
  void defaultResolverTrustsNothing() throws IOException {
    org.apache.hadoop.conf.Configuration conf = WireProtectionTest.encrypted(new org.apache.hadoop.conf.Configuration(false));
    org.hdfsrdma.protocol.wire.WireProtection w = org.hdfsrdma.protocol.wire.WireProtection.forClient(conf, true, 0);
    assertEquals(false, w.clientTrusts(InetAddress.getLoopbackAddress()));
    assertEquals(false, w.serverTrusts(InetAddress.getLoopbackAddress()));
    conf.setClass("dfs.trustedchannel.resolver.class", LoopbackTrusted.class, TrustedChannelResolver.class);
    w = org.hdfsrdma.protocol.wire.WireProtection.forClient(conf, true, 0);
    assertEquals(true, w.clientTrusts(InetAddress.getLoopbackAddress()));
    assertEquals(false, w.clientTrusts(InetAddress.getByAddress(new byte[] {10, 0, 0, 1})), "only peers it trusts");
  }
}
