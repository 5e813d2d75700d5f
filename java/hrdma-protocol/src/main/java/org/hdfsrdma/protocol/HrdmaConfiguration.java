package org.hdfsrdma.protocol;

/**
 * Where the {@code hrdma.*} defaults live: hrdma-default.xml (every key with its default and
 * description, shipped in this jar, the source of docs/configuration.md) and, equal to it
 * (ConfigurationRegistryTest checks), each key's {@code _DEFAULT} constant, which the code
 * passes to every {@code conf.get}. The file is deliberately not a Hadoop default resource:
 * Configuration loads default resources in the order they were added, the last winning, and
 * ours would be added after core-site.xml and hdfs-site.xml (when the plugin or the client
 * class loads), so every {@code hrdma.*} key an operator set there was overridden by its
 * default. Stateless.
 */
public final class HrdmaConfiguration {
  /** The defaults resource on the class path. */
  public static final String DEFAULT_RESOURCE = "hrdma-default.xml";

  private HrdmaConfiguration() {}
}
