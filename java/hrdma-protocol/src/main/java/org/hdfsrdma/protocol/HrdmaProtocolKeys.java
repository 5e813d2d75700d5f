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
}
