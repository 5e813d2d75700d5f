package org.hdfsrdma.protocol.compat;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.datatransfer.sasl.DataTransferSaslUtil;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.security.token.block.DataEncryptionKey;
import org.apache.hadoop.security.SaslPropertiesResolver;
import org.apache.hadoop.security.token.Token;

/**
 * Stock HDFS's SASL conventions for data transfer, the same on both ends as stock's
 * SaslDataTransferClient/Server, so that the key material and the negotiated protection are
 * stock's: the SASL properties (DataTransferSaslUtil, SaslPropertiesResolver), and the user
 * names and passwords built from a DataEncryptionKey or a block token. Stateless, thread-safe.
 */
public final class StockSasl {
  private StockSasl() {}

  /** Stock's properties for dfs.encrypt.data.transfer: auth-conf, server authentication, the configured algorithm. */
  public static Map<String, String> encryptionProperties(Configuration conf) {
    return new HashMap<>(DataTransferSaslUtil.createSaslPropertiesForEncryption(
        conf.get("dfs.encrypt.data.transfer.algorithm")));
  }

  /**
   * Stock's properties for dfs.data.transfer.protection (its QOP list) toward or from
   * {@code peer}, or null when the key is not set.
   */
  public static Map<String, String> protectionProperties(Configuration conf, InetAddress peer, boolean server) {
    SaslPropertiesResolver r = DataTransferSaslUtil.getSaslPropertiesResolver(conf);
    if (r == null) {
      return null;
    }
    return new HashMap<>(server ? r.getServerProperties(peer) : r.getClientProperties(peer));
  }

  /** The SASL user name for a DataEncryptionKey: key id, block pool, nonce (base64). */
  public static String encryptionUser(DataEncryptionKey key) {
    return key.keyId + DataTransferSaslUtil.NAME_DELIMITER + key.blockPoolId + DataTransferSaslUtil.NAME_DELIMITER
        + new String(Base64.getEncoder().encode(key.nonce), StandardCharsets.UTF_8);
  }

  /** The SASL password of an encryption key (stock's encoding). */
  public static char[] encryptionPassword(byte[] encryptionKey) {
    return DataTransferSaslUtil.encryptionKeyToPassword(encryptionKey);
  }

  /** The parts of an encryption user name: key id, block pool id, nonce. */
  public record EncryptionUser(int keyId, String blockPoolId, byte[] nonce) {}

  public static EncryptionUser parseEncryptionUser(String user) throws IOException {
    String[] p = user.split(DataTransferSaslUtil.NAME_DELIMITER);
    if (p.length != 3) {
      throw new IOException("encryption key name '" + user + "' has " + p.length + " parts, not 3");
    }
    try {
      return new EncryptionUser(Integer.parseInt(p[0]), p[1], Base64.getDecoder().decode(p[2]));
    } catch (IllegalArgumentException e) {
      throw new IOException("bad encryption key name '" + user + "': " + e.getMessage(), e);
    }
  }

  /** The SASL user name for a block token: its identifier, base64. */
  public static String tokenUser(Token<BlockTokenIdentifier> token) {
    return Base64.getEncoder().encodeToString(token.getIdentifier());
  }

  /** The SASL password of a block token (or of its password as the DataNode recomputes it): base64. */
  public static char[] tokenPassword(byte[] password) {
    return Base64.getEncoder().encodeToString(password).toCharArray();
  }

  /** The block token identifier a token user name carries. */
  public static BlockTokenIdentifier parseTokenUser(String user) throws IOException {
    BlockTokenIdentifier id = new BlockTokenIdentifier();
    byte[] bytes;
    try {
      bytes = Base64.getDecoder().decode(user);
    } catch (IllegalArgumentException e) {
      throw new IOException("bad block token name: " + e.getMessage(), e);
    }
    // the peer is not authenticated yet: nothing it claims is allocated before it is bounded
    BlockTokenIdentifiers.checkBounds(bytes);
    try {
      id.readFields(new DataInputStream(new ByteArrayInputStream(bytes)));
    } catch (RuntimeException e) {
      throw new IOException("bad block token name: " + e, e);
    }
    return id;
  }
}
