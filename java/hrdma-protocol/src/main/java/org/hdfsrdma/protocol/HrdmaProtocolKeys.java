package org.hdfsrdma.protocol;

/**
 * The configuration keys both ends of the protocol read (the plugin's port),
 * each {@code _KEY} beside its {@code _DEFAULT}. Every key is also in hrdma-default.xml
 * (hrdma-protocol's jar) with its default and a description, and docs/configuration.md is
 * generated from that file; ConfigurationRegistryTest fails when the three disagree or when
 * code uses an {@code "hrdma.*"} name not listed here. Adding a key: one constant pair here,
 * one {@code <property>} in hrdma-default.xml, then {@code make docs}.
 *
 * <p>Constants only; thread-safe.
 */
public final class HrdmaProtocolKeys {
  private HrdmaProtocolKeys() {}

  /**
   * The plugin's tcp service port; 0 derives it from the DataNode's xfer port plus hrdma.datanode.port-
   * offset.
   */
  public static final String DATANODE_PORT_KEY = "hrdma.datanode.port";
  public static final int DATANODE_PORT_DEFAULT = 0;
  /**
   * Added to the DataNode's xfer port when hrdma.datanode.port is 0; clients derive the port the same
   * way.
   */
  public static final String DATANODE_PORT_OFFSET_KEY = "hrdma.datanode.port-offset";
  public static final int DATANODE_PORT_OFFSET_DEFAULT = 1000;
  /** Unix domain socket of the short-circuit server (_PORT becomes the xfer port). */
  public static final String DOMAIN_SOCKET_PATH_KEY = "hrdma.domain-socket.path";
  public static final String DOMAIN_SOCKET_PATH_DEFAULT = "";
  /**
   * With block tokens on, accept a short-circuit socket in a sticky directory others may write
   * to (/tmp) anyway, on the DataNode and the client: single-user hosts and tests only.
   */
  public static final String DOMAIN_SOCKET_ALLOW_STICKY_DIRS_KEY = "hrdma.domain-socket.allow-sticky-dirs";
  public static final boolean DOMAIN_SOCKET_ALLOW_STICKY_DIRS_DEFAULT = false;
  /** AEAD sealing every message of a protected connection: AES/GCM/NoPadding or ChaCha20-Poly1305. */
  public static final String WIRE_CIPHER_KEY = "hrdma.wire.cipher";
  public static final String WIRE_CIPHER_DEFAULT = "AES/GCM/NoPadding";
  /** AES key size of protected connections, 128 or 256. */
  public static final String WIRE_KEY_BITS_KEY = "hrdma.wire.key-bits";
  public static final int WIRE_KEY_BITS_DEFAULT = 256;
  /** A connection that has not finished its data transfer protection handshake this long after connecting is closed (ms). */
  public static final String WIRE_HANDSHAKE_TIMEOUT_MS_KEY = "hrdma.wire.handshake-timeout-ms";
  public static final long WIRE_HANDSHAKE_TIMEOUT_MS_DEFAULT = 30_000;
  /**
   * Most MB a process puts through the AEAD at start (throw-away messages, its own key) so the
   * JIT has compiled it before the first protected connection; 0: none.
   */
  public static final String WIRE_WARM_UP_MB_KEY = "hrdma.wire.warm-up-mb";
  public static final int WIRE_WARM_UP_MB_DEFAULT = 256;
}
