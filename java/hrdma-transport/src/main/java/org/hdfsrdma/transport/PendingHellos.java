package org.hdfsrdma.transport;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * The accepted connections of one transport that have not said HELLO yet. A silent peer may hold
 * such a connection for the whole hello timeout (a minute by default, as stock's DataXceiver waits
 * for a first op), so their number is bounded: past {@code max}, the oldest is closed to make room.
 * Closing the oldest rather than refusing the newest keeps a flood of silent connections from
 * locking honest peers out, since an honest peer says HELLO within moments of connecting and is
 * out of this set long before it would be the oldest.
 *
 * <p>Thread-safe; the eviction callbacks run on the thread that added the connection that made
 * the set too large, outside this object's lock.
 */
public final class PendingHellos {
  private record Entry(BooleanSupplier stillWaiting, Runnable evict) {}

  private final int max;
  private final ArrayDeque<Entry> waiting = new ArrayDeque<>(); // oldest first; guarded by this
  private final AtomicLong evicted = new AtomicLong();

  public PendingHellos(int max) {
    if (max <= 0) {
      throw new IllegalArgumentException(TransportConf.MAX_PENDING_HELLOS_KEY + " must be positive, not " + max);
    }
    this.max = max;
  }

  /**
   * Adds a connection just accepted. {@code stillWaiting}: true until it said HELLO or closed;
   * {@code evict}: closes it (called at most once, only while it is still waiting).
   */
  public void add(BooleanSupplier stillWaiting, Runnable evict) {
    List<Entry> out = new ArrayList<>(1);
    synchronized (this) {
      for (Iterator<Entry> it = waiting.iterator(); it.hasNext();) {
        if (!it.next().stillWaiting.getAsBoolean()) {
          it.remove();
        }
      }
      waiting.addLast(new Entry(stillWaiting, evict));
      while (waiting.size() > max) {
        out.add(waiting.pollFirst());
      }
    }
    for (Entry e : out) {
      if (e.stillWaiting.getAsBoolean()) {
        evicted.incrementAndGet();
        e.evict.run();
      }
    }
  }

  /** Connections closed to make room for newer ones. */
  public long evicted() {
    return evicted.get();
  }

  /** Connections counted as waiting (some may have said HELLO or closed since the last add). */
  public synchronized int size() {
    return waiting.size();
  }
}
