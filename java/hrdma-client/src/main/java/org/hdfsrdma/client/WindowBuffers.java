package org.hdfsrdma.client;

import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;

/**
 * Direct buffers short-circuit readers read windows of a replica (and its
 * range's sums) into, kept for the next reader: a reader needs a few windows'
 * worth per block, and allocating (and zeroing) them per block would cost as
 * much as a copy.
 * Process-wide, by capacity; at most {@value #KEPT} buffers of a capacity
 * are kept, the rest left to the collector. Thread-safe.
 */
final class WindowBuffers {
  /** Buffers kept per capacity: a few readers' worth of windows (verify-ahead plus two each). */
  static final int KEPT = 64;

  private static final ConcurrentHashMap<Integer, ConcurrentLinkedDeque<ByteBuffer>> FREE =
      new ConcurrentHashMap<>();

  private WindowBuffers() {}

  /** A buffer of {@code capacity} bytes, cleared. */
  static ByteBuffer take(int capacity) {
    ConcurrentLinkedDeque<ByteBuffer> q = FREE.get(capacity);
    ByteBuffer b = q == null ? null : q.pollFirst();
    return b != null ? b.clear() : ByteBuffer.allocateDirect(capacity);
  }

  /** Gives {@code b} (from {@link #take}; null: nothing) back; its holder no longer uses it. */
  static void give(ByteBuffer b) {
    give(b, KEPT);
  }

  /** As {@link #give(ByteBuffer)}, keeping at most {@code kept} buffers of its capacity. */
  static void give(ByteBuffer b, int kept) {
    if (b == null) {
      return;
    }
    ConcurrentLinkedDeque<ByteBuffer> q = FREE.computeIfAbsent(b.capacity(), c -> new ConcurrentLinkedDeque<>());
    if (q.size() < kept) {
      q.addFirst(b); // the most recently used first: still in the cache
    }
  }
}
