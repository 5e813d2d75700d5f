package org.hdfsrdma.protocol;

import org.apache.hadoop.conf.Configuration;

/**
 * Adds hrdma-default.xml (every {@code hrdma.*} key with its default, shipped in this jar) to
 * Hadoop's default resources, as HdfsConfiguration does for hdfs-default.xml: every
 * Configuration that loads defaults then lists our keys, and core-site.xml / hdfs-site.xml
 * still override them. Thread-safe; idempotent.
 */
public final class HrdmaConfiguration {
  /** The defaults resource on the class path. */
  public static final String DEFAULT_RESOURCE = "hrdma-default.xml";

  static {
    Configuration.addDefaultResource(DEFAULT_RESOURCE);
  }

  private HrdmaConfiguration() {}

  /** Loads the defaults resource (once per class loader); call before reading configuration. */
  public static void init() {
    // the static initializer does the work
  }
}
