package org.hdfsrdma.datanode.disk;

/**
 * How a volume's queued requests reach its device: which stream goes next,
 * how many requests may be in flight, how large a request should be.
 * Called only by {@link SchedulerCore}, under its caller's lock; never blocks.
 */
public interface Policy {
  /** The policy's configuration name (rotational, ssd, adaptive, ram, fifo). */
  String name();

  /** Requests that may be in flight on the device now. */
  int depth();

  /** The most requests that may ever be in flight (the volume's worker count). */
  int maxDepth();

  /** The size a producer that can choose (read-ahead) should ask for now. */
  int requestBytes();

  /** Served on the caller's thread, without queueing (RAM_DISK). */
  default boolean inline() {
    return false;
  }

  /**
   * Picks the stream whose head request goes next, or null to keep the
   * device idle until {@link SchedulerCore.Choice#wakeNanos} (anticipation).
   */
  SchedulerCore.Choice pick(SchedulerCore core, long now);

  /** A request of {@code s} completed; {@code now} is the completion time. */
  default void completed(SchedulerCore core, SchedulerCore.Stream s, DiskRequest r, long now) {}
}
