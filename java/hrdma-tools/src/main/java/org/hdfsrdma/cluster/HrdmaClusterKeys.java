package org.hdfsrdma.cluster;

/**
 * The configuration keys of the local cluster tool (hrdma.cluster.*),
 * each {@code _KEY} beside its {@code _DEFAULT}. Every key is also in hrdma-default.xml
 * (hrdma-protocol's jar) with its default and a description, and docs/configuration.md is
 * generated from that file; ConfigurationRegistryTest fails when the three disagree or when
 * code uses an {@code "hrdma.*"} name not listed here. Adding a key: one constant pair here,
 * one {@code <property>} in hrdma-default.xml, then {@code make docs}.
 *
 * <p>Constants only; thread-safe.
 */
public final class HrdmaClusterKeys {
  private HrdmaClusterKeys() {}

  /**
   * hrdma cluster: storage types of each DataNode's volumes, comma-separated (DISK, SSD, ARCHIVE,
   * RAM_DISK), one directory each; empty: one untagged (DISK) volume.
   */
  public static final String STORAGE_TYPES_KEY = "hrdma.cluster.storage-types";
  public static final String STORAGE_TYPES_DEFAULT = "";
}
