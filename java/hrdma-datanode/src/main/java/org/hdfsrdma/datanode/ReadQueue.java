package org.hdfsrdma.datanode;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;

/**
 * One connection's reads: served one after the other in arrival order (a
 * client's read-ahead requests queue behind the current one and the next
 * starts without a round trip). A read whose last packet has been handed to
 * the transport {@link #handOn hands on} its turn: the next one starts (opens
 * its files, starts its disk reads) while the packets of the one before are
 * still in flight, so the disk works while the transport drains. Earlier
 * still, a read that has {@link #ahead issued all its disk reads} lets the
 * next one {@link Read#prepare prepare}: open its files and start its disk
 * reads, sending nothing, so the device's queue does not drain at the
 * boundary between two requests. Messages keep their order: the next
 * read's first message is sent after the last packet of the one before.
 * Thread-safe.
 */
final class ReadQueue {
  /** What the queue does with a read. */
  interface Read {
    long requestId();

    /** Its turn: start serving. */
    void start();

    /**
     * Its turn is near: open and start reading ahead, but send nothing before {@link #start}.
     * Called at most once, before {@link #start}; a prepared read that never starts is
     * {@link #abandon}ed, which must then undo the preparation.
     */
    void prepare();

    /** Stop early (the client cancelled or the connection closed). */
    void cancel();

    /** Never started, never will. */
    void abandon();

    /** Never started: answered with an error. */
    void refuse(Status status, String message);
  }

  private final int maxQueued;
  private final ArrayDeque<Read> queue = new ArrayDeque<>(); // guarded by this
  private final List<Read> draining = new ArrayList<>();     // handed on, not done; guarded by this
  private Read active;                                       // guarded by this
  private boolean activeAhead;                               // active has issued all its disk reads
  private Read prepared;                                     // the queue's head, prepared; guarded by this
  private boolean closed;                                    // guarded by this

  ReadQueue(int maxQueued) {
    this.maxQueued = maxQueued;
  }

  synchronized void submit(Read t) {
    if (closed) {
      t.abandon();
    } else if (queue.size() >= maxQueued) {
      t.refuse(Status.ERROR, "too many read requests queued on this connection (" + maxQueued + ", "
          + ReadSettings.MAX_QUEUED_KEY + ")");
    } else {
      queue.add(t);
      if (active == null) {
        startNext();
      } else if (activeAhead) {
        prepareNext();
      }
    }
  }

  /** {@code t}, being served, has issued all its disk reads: the next read may prepare. */
  synchronized void ahead(Read t) {
    if (active == t && !closed) {
      activeAhead = true;
      prepareNext();
    }
  }

  private void prepareNext() {
    Read next = queue.peek();
    if (next != null && prepared != next) {
      prepared = next;
      next.prepare();
    }
  }

  /** {@code t} has sent its last message, its packets may still be in flight: the next read may start. */
  synchronized void handOn(Read t) {
    if (active == t) {
      active = null;
      draining.add(t);
      if (!closed) {
        startNext();
      }
    }
  }

  /** {@code t} is finished (everything sent or failed, files closed). */
  synchronized void done(Read t) {
    if (draining.remove(t)) {
      return;
    }
    if (active == t) {
      active = null;
      if (!closed) {
        startNext();
      }
    }
  }

  private void startNext() {
    activeAhead = false;
    active = queue.poll();
    if (active != null) {
      active.start();
    }
  }

  /** The client's READ_STATUS other than success for request {@code id}: cancel it, wherever it is. */
  synchronized void cancel(long id) {
    if (active != null && active.requestId() == id) {
      active.cancel();
      return;
    }
    for (Read t : draining) {
      if (t.requestId() == id) {
        t.cancel();
        return;
      }
    }
    for (Iterator<Read> it = queue.iterator(); it.hasNext(); ) {
      Read t = it.next();
      if (t.requestId() == id) {
        it.remove();
        t.abandon();
        if (activeAhead && !closed) {
          prepareNext();
        }
        return;
      }
    }
  }

  synchronized void close() {
    closed = true;
    for (Read t : queue) {
      t.abandon();
    }
    queue.clear();
    if (active != null) {
      active.cancel();
    }
    for (Read t : new ArrayList<>(draining)) {
      t.cancel();
    }
  }

  /** The read prepared ahead of its turn and not started yet, or null (tests). */
  synchronized Read prepared() {
    return prepared != null && queue.peek() == prepared ? prepared : null;
  }

  /** Whether any read is queued, being served or draining (the idle timeout leaves such a connection). */
  synchronized boolean busy() {
    return active != null || !draining.isEmpty() || !queue.isEmpty();
  }

  /** Reads started and not done (the one being served and those draining). */
  synchronized int running() {
    return draining.size() + (active == null ? 0 : 1);
  }
}
