package org.hdfsrdma.datanode.disk;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The decisions of one volume's scheduler, without threads or clocks: per
 * stream FIFO queues, bounded; a {@link Policy} picks the stream served next;
 * at most {@link Policy#depth()} requests in flight. Time is passed in, so a
 * simulated device drives it deterministically (the tests) and
 * {@link VolumeScheduler} drives it with real threads.
 *
 * <p>Fairness: streams are served round-robin by the policies, and a request
 * that has waited longer than {@code maxWaitNanos} is served next whatever
 * the policy prefers, so no stream starves.
 *
 * <p>Not thread-safe: the caller serializes every call.
 */
public final class SchedulerCore {
  /** What the policy chose: a stream to serve now, or a time to look again (or neither: idle). */
  public record Choice(Stream stream, long wakeNanos) {
    static final Choice IDLE = new Choice(null, Long.MAX_VALUE);

    static Choice serve(Stream s) {
      return new Choice(s, 0);
    }

    static Choice waitUntil(long t) {
      return new Choice(null, t);
    }
  }

  /** One stream's queue and the state policies keep about it. */
  public static final class Stream {
    final Object key;
    final ArrayDeque<DiskRequest> queue = new ArrayDeque<>();
    int inFlight;
    long nextOffset = -1;       // end of the last dispatched request
    long sliceBytes;            // bytes served in its current turn (rotational)
    long lastCompletionNanos = Long.MIN_VALUE;
    boolean closed;
    // throughput of this stream (adaptive)
    long windowBytes;
    long windowStartNanos = Long.MIN_VALUE;
    double baseline;            // bytes per second, recent best
    double recent;              // bytes per second, last window

    Stream(Object key) {
      this.key = key;
    }

    public Object key() {
      return key;
    }

    boolean hasQueued() {
      return !queue.isEmpty();
    }
  }

  private final Policy policy;
  private final int maxQueued;
  private final int maxQueuedPerStream;
  private final long maxWaitNanos;
  private final Map<Object, Stream> streams = new HashMap<>();
  private final List<Stream> ring = new ArrayList<>(); // streams with queued or in-flight work, in turn order
  private final VolumeStats stats;
  private Stream current;   // the stream whose turn it is (last dispatched)
  private Object runKey;    // the stream of the current sequential run
  private long runEnd = -1; // where it continues
  private long runBytes;
  private int queued;
  private int inFlight;
  private long seq;

  public SchedulerCore(Policy policy, int maxQueued, int maxQueuedPerStream, long maxWaitNanos, VolumeStats stats) {
    if (maxQueued < 1 || maxQueuedPerStream < 1 || maxWaitNanos < 1) {
      throw new IllegalArgumentException("bad scheduler limits: " + maxQueued + " queued, " + maxQueuedPerStream
          + " per stream, max wait " + maxWaitNanos + " ns");
    }
    this.policy = policy;
    this.maxQueued = maxQueued;
    this.maxQueuedPerStream = maxQueuedPerStream;
    this.maxWaitNanos = maxWaitNanos;
    this.stats = stats;
  }

  public Policy policy() {
    return policy;
  }

  public VolumeStats stats() {
    return stats;
  }

  /** Queues a request; false (nothing queued) when the volume's or the stream's queue is full. */
  public boolean offer(DiskRequest r, long now) {
    Stream s = streams.get(r.stream);
    if (queued >= maxQueued || (s != null && s.queue.size() >= maxQueuedPerStream)) {
      return false;
    }
    s = admit(s, r, now);
    s.queue.add(r);
    queued++;
    stats.queued(queued, inFlight);
    return true;
  }

  /**
   * The next request to dispatch now, or null: the depth is reached, nothing
   * is queued, or the policy waits for the current stream (see {@link #wakeNanos}).
   */
  public DiskRequest poll(long now) {
    wake = Long.MAX_VALUE;
    if (queued == 0 || inFlight >= policy.depth()) {
      return null;
    }
    Stream s = starving(now);
    if (s == null) {
      Choice c = policy.pick(this, now);
      if (c.stream() == null) {
        wake = c.wakeNanos();
        return null;
      }
      s = c.stream();
    }
    DiskRequest r = s.queue.poll();
    queued--;
    start(s, r, now);
    return r;
  }

  /** {@code r}'s stream ({@code s}, or a new one), in the ring when it was idle; numbers {@code r}. */
  private Stream admit(Stream s, DiskRequest r, long now) {
    if (s == null) {
      s = new Stream(r.stream);
      streams.put(r.stream, s);
    }
    if (!s.hasQueued() && s.inFlight == 0) {
      ring.add(s);
    }
    r.seq = seq++;
    r.submittedNanos = now;
    return s;
  }

  /** Counts {@code r}, of stream {@code s}, as dispatched now. */
  private void start(Stream s, DiskRequest r, long now) {
    if (s != current) {
      current = s;
      s.sliceBytes = 0;
    }
    s.sliceBytes += r.length;
    s.inFlight++;
    inFlight++;
    r.startedNanos = now;
    noteRun(s.key, r.offset, r.length);
    s.nextOffset = r.offset + r.length;
    stats.dispatched(queued, inFlight, now);
  }

  /**
   * Dispatches {@code r} to run on its caller's thread, as {@link #poll} would dispatch it
   * to a worker, when the volume is idle (nothing queued, nothing in flight); the caller
   * then runs it and calls {@link #complete}. False, nothing changed, when the volume is busy:
   * the request is to be queued as any other. Requests that come meanwhile queue behind it
   * and the workers serve them up to the policy's depth, this one counted in it.
   */
  public boolean dispatchHere(DiskRequest r, long now) {
    if (queued > 0 || inFlight > 0) {
      return false;
    }
    start(admit(streams.get(r.stream), r, now), r, now);
    return true;
  }

  private long wake = Long.MAX_VALUE;

  /** After a null {@link #poll}: when to poll again without a new event (Long.MAX_VALUE: only on an event). */
  public long wakeNanos() {
    return wake;
  }

  /** A dispatched request finished (with {@code bytes} moved, 0 on failure). */
  public void complete(DiskRequest r, long bytes, long now) {
    Stream s = streams.get(r.stream);
    if (s == null || s.inFlight == 0) {
      throw new IllegalStateException("completing a request that is not in flight: " + r);
    }
    s.inFlight--;
    inFlight--;
    s.lastCompletionNanos = now;
    stats.completed(r.write, bytes, now - r.submittedNanos, now - r.startedNanos, inFlight, now);
    policy.completed(this, s, r, now);
    retireIfIdle(s);
  }

  /** The stream will send nothing more (its file is closed): no policy waits for it. */
  public void close(Object stream) {
    if (runKey == stream && runBytes > 0) {
      stats.run(runBytes); // its last run ends with it
      runBytes = 0;
      runKey = null;
    }
    Stream s = streams.get(stream);
    if (s != null) {
      s.closed = true;
      retireIfIdle(s);
    }
  }

  private void retireIfIdle(Stream s) {
    if (!s.hasQueued() && s.inFlight == 0) {
      ring.remove(s);
      if (s.closed) {
        streams.remove(s.key);
        if (current == s) {
          current = null;
        }
      }
    }
  }

  /** The stream whose head has waited longest, when that is longer than the limit. */
  private Stream starving(long now) {
    Stream oldest = null;
    for (Stream s : ring) {
      if (s.hasQueued() && (oldest == null || s.queue.peek().seq < oldest.queue.peek().seq)) {
        oldest = s;
      }
    }
    if (oldest != null && now - oldest.queue.peek().submittedNanos > maxWaitNanos) {
      stats.starvationGuard();
      return oldest;
    }
    return null;
  }

  /**
   * Counts a request reaching the device for the sequential-run statistics:
   * it continues the run when it is the same stream's and starts where the
   * last one ended. Also for requests served without queueing (inline).
   */
  public void noteRun(Object stream, long offset, int length) {
    if (runKey == stream && offset == runEnd) {
      runBytes += length;
    } else {
      if (runBytes > 0) {
        stats.run(runBytes);
      }
      runKey = stream;
      runBytes = length;
    }
    runEnd = offset + length;
  }

  /** Removes and returns any queued request (closing: the caller fails it), or null. */
  public DiskRequest drainOne() {
    for (Stream s : ring) {
      DiskRequest r = s.queue.poll();
      if (r != null) {
        queued--;
        return r;
      }
    }
    return null;
  }

  // ---------------------------------------------------------------- for policies

  /** The stream whose turn it is, or null. */
  Stream current() {
    return current;
  }

  /** The next stream after {@code after} in turn order that has a queued request (possibly itself), or null. */
  Stream nextWithQueued(Stream after) {
    int n = ring.size();
    int start = after == null ? -1 : ring.indexOf(after);
    for (int i = 1; i <= n; i++) {
      Stream s = ring.get(Math.floorMod(start + i, n));
      if (s.hasQueued()) {
        return s;
      }
    }
    return null;
  }

  /** The stream whose head request arrived first, or null. */
  Stream oldestHead() {
    Stream best = null;
    for (Stream s : ring) {
      if (s.hasQueued() && (best == null || s.queue.peek().seq < best.queue.peek().seq)) {
        best = s;
      }
    }
    return best;
  }

  /** Streams with queued or in-flight work, in turn order (do not modify). */
  List<Stream> active() {
    return ring;
  }

  public int queued() {
    return queued;
  }

  public int inFlight() {
    return inFlight;
  }
}
