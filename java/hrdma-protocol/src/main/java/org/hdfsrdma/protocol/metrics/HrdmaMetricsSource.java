package org.hdfsrdma.protocol.metrics;

import org.apache.hadoop.metrics2.MetricsException;
import org.apache.hadoop.metrics2.MetricsInfo;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.metrics2.lib.Interns;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every metrics2 source of ours shares: a name (the JMX bean's), registration with
 * the process's metrics system that logs a failure instead of throwing it (metrics must
 * never stop a client or a DataNode), and an idempotent unregister. Subclasses only say
 * what they collect. Thread-safe.
 */
public abstract class HrdmaMetricsSource implements MetricsSource {
  private static final Logger LOG = LoggerFactory.getLogger(HrdmaMetricsSource.class);

  private final String name;
  private volatile boolean registered;

  protected HrdmaMetricsSource(String name) {
    this.name = name;
  }

  /** Registers this source as {@code name()} with {@code description}; false (logged) when that failed. */
  protected final boolean register(String description) {
    try {
      DefaultMetricsSystem.instance().register(name, description, this);
      registered = true;
    } catch (MetricsException e) {
      LOG.warn("hrdma: cannot register metrics source {}: {}", name, e.toString());
    }
    return registered;
  }

  /** The source's name, and so its JMX bean's {@code name=}. */
  public final String name() {
    return name;
  }

  /** Removes the source from the metrics system; does nothing when it is not registered. */
  public final void unregister() {
    if (registered) {
      registered = false;
      DefaultMetricsSystem.instance().unregisterSource(name);
    }
  }

  protected static MetricsInfo info(String n, String description) {
    return Interns.info(n, description);
  }
}
