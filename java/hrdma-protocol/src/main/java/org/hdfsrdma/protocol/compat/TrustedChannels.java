package org.hdfsrdma.protocol.compat;

import java.net.InetAddress;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.datatransfer.TrustedChannelResolver;

/**
 * Stock's trusted-channel decision (dfs.trustedchannel.resolver.class, TrustedChannelResolver),
 * applied as stock's SaslDataTransferClient and SaslDataTransferServer apply it: a client skips
 * the handshake when it trusts both its own host and the DataNode's; a DataNode skips it for a
 * peer it trusts. The default resolver trusts nothing. Thread-safe as the configured resolver.
 */
public final class TrustedChannels {
  private final TrustedChannelResolver resolver;

  private TrustedChannels(TrustedChannelResolver resolver) {
    this.resolver = resolver;
  }

  /** The resolver {@code conf} names (stock's {@code TrustedChannelResolver.getInstance}). */
  public static TrustedChannels of(Configuration conf) {
    return new TrustedChannels(TrustedChannelResolver.getInstance(conf));
  }

  /** The connecting side (SaslDataTransferClient#checkTrustAndSend): this host and {@code dataNode} both trusted. */
  public boolean clientTrusts(InetAddress dataNode) {
    return resolver.isTrusted() && dataNode != null && resolver.isTrusted(dataNode);
  }

  /** The DataNode side (SaslDataTransferServer#getEncryptedStreams, #getSaslStreams): {@code peer} trusted. */
  public boolean serverTrusts(InetAddress peer) {
    return peer != null && resolver.isTrusted(peer);
  }
}
