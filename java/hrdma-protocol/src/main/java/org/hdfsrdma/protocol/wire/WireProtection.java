package org.hdfsrdma.protocol.wire;

import java.net.InetAddress;
import java.util.Locale;
import java.util.Map;
import javax.security.sasl.Sasl;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.UserGroupInformation;
import org.hdfsrdma.protocol.HrdmaProtocolKeys;
import org.hdfsrdma.protocol.compat.StockSasl;
import org.hdfsrdma.protocol.compat.TrustedChannels;

/**
 * What protection a cluster's configuration asks of the data transfer path, decided from the
 * stock keys as stock's SaslDataTransferServer/Client decide it, and our own settings of the
 * protection layer. Immutable, thread-safe.
 *
 * <ul>
 *   <li>{@link Mode#ENCRYPT}: {@code dfs.encrypt.data.transfer}: SASL DIGEST-MD5 with the
 *       NameNode's data encryption key, auth-conf, then every message sealed.
 *   <li>{@link Mode#SASL}: security on ({@code hadoop.security.authentication} not simple),
 *       the plugin port not privileged and {@code dfs.data.transfer.protection} set: SASL
 *       DIGEST-MD5 with the block token, the QOP the resolver gives; sealed from then on when
 *       integrity or privacy was negotiated.
 *   <li>{@link Mode#NONE}: security off, or on with a privileged plugin port (stock trusts
 *       its privileged xfer port the same way), or on with neither but
 *       {@code ignore.secure.ports.for.testing}.
 * </ul>
 * Security on with none of these is {@link #refusal}: the plugin does not start.
 */
public final class WireProtection {
  /** The AEAD sealing a protected connection's messages: AES/GCM/NoPadding or ChaCha20-Poly1305. */
  public static final String CIPHER_KEY = HrdmaProtocolKeys.WIRE_CIPHER_KEY;
  public static final String CIPHER_DEFAULT = HrdmaProtocolKeys.WIRE_CIPHER_DEFAULT;
  /** AES key size, 128 or 256 (ChaCha20 is always 256). The DataNode's choice is the connection's. */
  public static final String KEY_BITS_KEY = HrdmaProtocolKeys.WIRE_KEY_BITS_KEY;
  public static final int KEY_BITS_DEFAULT = HrdmaProtocolKeys.WIRE_KEY_BITS_DEFAULT;
  /** A connection that has not finished its handshake this long after connecting is closed. */
  public static final String HANDSHAKE_TIMEOUT_KEY = HrdmaProtocolKeys.WIRE_HANDSHAKE_TIMEOUT_MS_KEY;
  public static final long HANDSHAKE_TIMEOUT_DEFAULT = HrdmaProtocolKeys.WIRE_HANDSHAKE_TIMEOUT_MS_DEFAULT;
  /** Most MB put through the cipher at start to have it compiled (see {@link SealWarmUp}); 0: no warm-up. */
  public static final String WARM_UP_MB_KEY = HrdmaProtocolKeys.WIRE_WARM_UP_MB_KEY;
  public static final int WARM_UP_MB_DEFAULT = HrdmaProtocolKeys.WIRE_WARM_UP_MB_DEFAULT;

  static final String ENCRYPT_KEY = "dfs.encrypt.data.transfer";
  static final String PROTECTION_KEY = "dfs.data.transfer.protection";
  static final String AUTHENTICATION_KEY = "hadoop.security.authentication";
  static final String IGNORE_SECURE_PORTS_KEY = "ignore.secure.ports.for.testing";

  /** The start of every refusal of an op on a connection that has not completed its handshake. */
  public static final String UNPROTECTED_REFUSAL = "data transfer protection required: ";

  /** How a connection authenticates. */
  public enum Mode { NONE, ENCRYPT, SASL }

  private final Configuration conf;
  private final Mode mode;
  private final String refusal;
  private final String cipher;
  private final int keyBits;
  private final long handshakeTimeoutMs;
  private final int warmUpMb;
  private final TrustedChannels trust;

  private WireProtection(Configuration conf, Mode mode, String refusal) {
    this.conf = conf;
    this.mode = mode;
    this.refusal = refusal;
    this.cipher = conf.getTrimmed(CIPHER_KEY, CIPHER_DEFAULT);
    this.keyBits = conf.getInt(KEY_BITS_KEY, KEY_BITS_DEFAULT);
    this.handshakeTimeoutMs = conf.getLong(HANDSHAKE_TIMEOUT_KEY, HANDSHAKE_TIMEOUT_DEFAULT);
    this.warmUpMb = conf.getInt(WARM_UP_MB_KEY, WARM_UP_MB_DEFAULT);
    this.trust = mode == Mode.NONE ? null : TrustedChannels.of(conf);
    if (!cipher.equals("AES/GCM/NoPadding") && !cipher.equals("ChaCha20-Poly1305")) {
      throw new IllegalArgumentException(CIPHER_KEY + "=" + cipher + ": not AES/GCM/NoPadding or ChaCha20-Poly1305");
    }
    if (keyBits != 128 && keyBits != 256) {
      throw new IllegalArgumentException(KEY_BITS_KEY + "=" + keyBits + ": not 128 or 256");
    }
    if (handshakeTimeoutMs < 1) {
      throw new IllegalArgumentException(HANDSHAKE_TIMEOUT_KEY + "=" + handshakeTimeoutMs);
    }
    if (warmUpMb < 0) {
      throw new IllegalArgumentException(WARM_UP_MB_KEY + "=" + warmUpMb);
    }
  }

  /** Whether the configuration turns Hadoop security (Kerberos) on. */
  static boolean secure(Configuration conf) {
    return UserGroupInformation.isSecurityEnabled()
        || !"simple".equals(conf.getTrimmed(AUTHENTICATION_KEY, "simple").toLowerCase(Locale.ROOT));
  }

  /** The DataNode's protection for its plugin listening on {@code port}. */
  public static WireProtection forDataNode(Configuration conf, int port) {
    if (conf.getBoolean(ENCRYPT_KEY, false)) {
      return new WireProtection(conf, Mode.ENCRYPT, null);
    }
    if (!secure(conf) || (port > 0 && port < 1024)) {
      return new WireProtection(conf, Mode.NONE, null);
    }
    if (!conf.getTrimmed(PROTECTION_KEY, "").isEmpty()) {
      return new WireProtection(conf, Mode.SASL, null);
    }
    if (conf.getBoolean(IGNORE_SECURE_PORTS_KEY, false)) {
      return new WireProtection(conf, Mode.NONE, null);
    }
    return new WireProtection(conf, Mode.NONE, "security is on (" + AUTHENTICATION_KEY + "), the plugin port "
        + port + " is not privileged (< 1024) and neither " + ENCRYPT_KEY + " nor " + PROTECTION_KEY
        + " is set: connections could be neither authenticated nor trusted, as stock refuses for its xfer port");
  }

  /**
   * The client's protection toward a DataNode plugin on {@code port}; {@code nameNodeEncrypts}
   * is what the NameNode says of dfs.encrypt.data.transfer (as stock's client asks it), or the
   * client's own key when there is no NameNode to ask.
   */
  public static WireProtection forClient(Configuration conf, boolean nameNodeEncrypts, int port) {
    if (nameNodeEncrypts) {
      return new WireProtection(conf, Mode.ENCRYPT, null);
    }
    if (!secure(conf) || (port > 0 && port < 1024)) {
      return new WireProtection(conf, Mode.NONE, null);
    }
    if (!conf.getTrimmed(PROTECTION_KEY, "").isEmpty()) {
      return new WireProtection(conf, Mode.SASL, null);
    }
    return new WireProtection(conf, Mode.NONE, "security is on, the DataNode's plugin port " + port
        + " is not privileged and " + PROTECTION_KEY + " is not set");
  }

  /**
   * Whether connections under this protection may be sealed: ENCRYPT always; SASL when
   * dfs.data.transfer.protection asks for integrity or privacy (authentication alone is not sealed).
   */
  public boolean maySeal() {
    if (mode == Mode.ENCRYPT) {
      return true;
    }
    if (mode == Mode.NONE) {
      return false;
    }
    String p = conf.getTrimmed(PROTECTION_KEY, "").toLowerCase(Locale.ROOT);
    return p.contains("integrity") || p.contains("privacy");
  }

  /**
   * Starts the cipher's warm-up ({@link SealWarmUp}) on a daemon thread when connections may be
   * sealed, once per cipher and JVM; true when this call started it.
   */
  public boolean warmUp() {
    return maySeal() && SealWarmUp.start(cipher, keyBits(), (long) warmUpMb << 20);
  }

  /**
   * Whether a client skips the handshake toward the DataNode at {@code dataNode}: stock's
   * dfs.trustedchannel.resolver.class trusts this host and that one (as SaslDataTransferClient).
   */
  public boolean clientTrusts(InetAddress dataNode) {
    return trust != null && trust.clientTrusts(dataNode);
  }

  /** Whether a DataNode skips the handshake for {@code peer}: the resolver trusts it (as SaslDataTransferServer). */
  public boolean serverTrusts(InetAddress peer) {
    return trust != null && trust.serverTrusts(peer);
  }

  public Mode mode() {
    return mode;
  }

  /** Why this side cannot run the fast path at the configured protection, or null. */
  public String refusal() {
    return refusal;
  }

  String cipher() {
    return cipher;
  }

  int keyBits() {
    return cipher.startsWith("AES") ? keyBits : 256;
  }

  long handshakeTimeoutMs() {
    return handshakeTimeoutMs;
  }

  /** The SASL properties of a connection with {@code peer} (stock's). */
  Map<String, String> saslProperties(InetAddress peer, boolean server) {
    Map<String, String> p = mode == Mode.ENCRYPT ? StockSasl.encryptionProperties(conf)
        : StockSasl.protectionProperties(conf, peer, server);
    if (p == null) {
      throw new IllegalStateException(PROTECTION_KEY + " is not set");
    }
    return p;
  }

  /** Whether {@code qop} (negotiated) is among the QOPs {@code props} asked for. */
  static boolean requested(Map<String, String> props, String qop) {
    String asked = props.get(Sasl.QOP);
    if (asked == null) {
      return "auth".equals(qop);
    }
    for (String q : asked.split(",")) {
      if (q.trim().equals(qop)) {
        return true;
      }
    }
    return false;
  }

  @Override
  public String toString() {
    return mode + (mode == Mode.NONE ? "" : " (" + cipher + ", " + keyBits() + "-bit)");
  }
}
