package org.hdfsrdma.datanode.disk;

import org.hdfsrdma.datanode.disk.SchedulerCore.Choice;
import org.hdfsrdma.datanode.disk.SchedulerCore.Stream;

/** The scheduling policies; {@link DiskSettings#policyFor} chooses one per volume. */
public final class Policies {
  private Policies() {}

  /**
   * Rotational disks (concurrent streams cost seeks): one request in flight; one
   * stream at a time for up to {@code sliceBytes}, then the next stream
   * round-robin, so the head sees long sequential runs. A stream whose queue
   * runs dry in mid-slice keeps its turn for {@code lingerNanos} after its
   * last completion (anticipation: a writer or reader that issues one
   * request at a time will send its next one shortly).
   */
  public static final class Rotational implements Policy {
    private final long sliceBytes;
    private final long lingerNanos;
    private final int requestBytes;

    public Rotational(long sliceBytes, long lingerNanos, int requestBytes) {
      if (sliceBytes < 1 || lingerNanos < 0 || requestBytes < 1) {
        throw new IllegalArgumentException("bad rotational policy: slice " + sliceBytes + " bytes, linger "
            + lingerNanos + " ns, request " + requestBytes + " bytes");
      }
      this.sliceBytes = sliceBytes;
      this.lingerNanos = lingerNanos;
      this.requestBytes = requestBytes;
    }

    @Override
    public String name() {
      return "rotational";
    }

    @Override
    public int depth() {
      return 1;
    }

    @Override
    public int maxDepth() {
      return 1;
    }

    @Override
    public int requestBytes() {
      return requestBytes;
    }

    @Override
    public Choice pick(SchedulerCore core, long now) {
      Stream cur = core.current();
      if (cur != null && cur.sliceBytes < sliceBytes) {
        if (cur.hasQueued()) {
          return Choice.serve(cur);
        }
        if (!cur.closed && cur.inFlight == 0 && lingerNanos > 0 && cur.lastCompletionNanos != Long.MIN_VALUE) {
          long until = cur.lastCompletionNanos + lingerNanos;
          if (now < until) {
            return Choice.waitUntil(until);
          }
        }
      }
      Stream next = core.nextWithQueued(cur);
      if (next == null) {
        return Choice.IDLE;
      }
      if (next == cur) {
        cur.sliceBytes = 0; // nobody else waits: a new turn for the same stream
      }
      return Choice.serve(next);
    }
  }

  /** A policy whose depth and request size never change. */
  private abstract static class FixedShape implements Policy {
    private final String name;
    private final int depth;
    private final int requestBytes;

    FixedShape(String name, int depth, int requestBytes) {
      if (depth < 1 || requestBytes < 1) {
        throw new IllegalArgumentException("bad " + name + " policy: depth " + depth + ", request " + requestBytes
            + " bytes");
      }
      this.name = name;
      this.depth = depth;
      this.requestBytes = requestBytes;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public int depth() {
      return depth;
    }

    @Override
    public int maxDepth() {
      return depth;
    }

    @Override
    public int requestBytes() {
      return requestBytes;
    }
  }

  /** SSDs at a fixed depth: up to {@code depth} requests in flight, streams served round-robin. */
  public static final class RoundRobin extends FixedShape {
    public RoundRobin(String name, int depth, int requestBytes) {
      super(name, depth, requestBytes);
    }

    @Override
    public Choice pick(SchedulerCore core, long now) {
      Stream next = core.nextWithQueued(core.current());
      return next == null ? Choice.IDLE : Choice.serve(next);
    }
  }

  /** The scheduler off: arrival order, up to {@code depth} in flight (what a plain thread pool does). */
  public static final class Fifo extends FixedShape {
    private final boolean inline;

    public Fifo(int depth, int requestBytes, boolean inline) {
      super(inline ? "inline" : "fifo", depth, requestBytes);
      this.inline = inline;
    }

    @Override
    public boolean inline() {
      return inline;
    }

    @Override
    public Choice pick(SchedulerCore core, long now) {
      Stream s = core.oldestHead();
      return s == null ? Choice.IDLE : Choice.serve(s);
    }
  }

  /**
   * SSDs whose speed varies: round-robin like
   * {@link RoundRobin}, and every {@code windowRequests} completions the
   * volume's throughput over that window is compared with its recent best
   * (a baseline that decays slowly), and each stream's with its own. When
   * either falls by more than {@code dropFraction}, depth and request size
   * double (up to their maxima); if the next window does not gain at least
   * {@code gainFraction} the raise is undone. After {@code calmWindows}
   * windows without a fall, depth and size are halved as a probe; the probe
   * stays if throughput holds (the extra depth had stopped paying) and is
   * undone if it falls.
   */
  public static final class Adaptive implements Policy {
    private static final double BASELINE_DECAY = 0.98;

    private enum Probe { NONE, RAISED, LOWERED }

    private final int minDepth;
    private final int maxDepth;
    private final int minBytes;
    private final int maxBytes;
    private final int windowRequests;
    private final double dropFraction;
    private final double gainFraction;
    private final int calmWindows;
    private VolumeStats stats;
    private int depth;
    private int requestBytes;
    private long windowStart = Long.MIN_VALUE;
    private long windowBytes;
    private int windowCount;
    private double baseline;
    private Probe probe = Probe.NONE;
    private double before;
    private int prevDepth;
    private int prevBytes;
    private int calm;

    public Adaptive(int minDepth, int maxDepth, int minBytes, int maxBytes, int windowRequests, double dropFraction,
        double gainFraction, int calmWindows) {
      if (minDepth < 1 || maxDepth < minDepth || minBytes < 1 || maxBytes < minBytes || windowRequests < 1
          || !(dropFraction > 0 && dropFraction < 1) || !(gainFraction >= 0 && gainFraction < 1) || calmWindows < 1) {
        throw new IllegalArgumentException("bad adaptive policy: depth " + minDepth + ".." + maxDepth
            + ", request " + minBytes + ".." + maxBytes + " bytes, window " + windowRequests + " requests, drop "
            + dropFraction + ", gain " + gainFraction + ", calm " + calmWindows + " windows");
      }
      this.minDepth = minDepth;
      this.maxDepth = maxDepth;
      this.minBytes = minBytes;
      this.maxBytes = maxBytes;
      this.windowRequests = windowRequests;
      this.dropFraction = dropFraction;
      this.gainFraction = gainFraction;
      this.calmWindows = calmWindows;
      this.depth = minDepth;
      this.requestBytes = minBytes;
    }

    @Override
    public String name() {
      return "adaptive";
    }

    @Override
    public int depth() {
      return depth;
    }

    @Override
    public int maxDepth() {
      return maxDepth;
    }

    @Override
    public int requestBytes() {
      return requestBytes;
    }

    @Override
    public Choice pick(SchedulerCore core, long now) {
      Stream next = core.nextWithQueued(core.current());
      return next == null ? Choice.IDLE : Choice.serve(next);
    }

    @Override
    public void completed(SchedulerCore core, Stream s, DiskRequest r, long now) {
      stats = core.stats();
      if (windowStart == Long.MIN_VALUE) {
        windowStart = r.startedNanos;
        stats.setShape(depth, requestBytes);
      }
      if (s.windowStartNanos == Long.MIN_VALUE) {
        s.windowStartNanos = r.startedNanos;
      }
      s.windowBytes += r.length;
      windowBytes += r.length;
      if (++windowCount >= windowRequests && now > windowStart) {
        evaluate(core, now);
      }
    }

    private void evaluate(SchedulerCore core, long now) {
      double t = windowBytes * 1e9 / (now - windowStart);
      boolean streamFell = false;
      for (Stream s : core.active()) {
        if (s.windowBytes > 0 && now > s.windowStartNanos) {
          s.recent = s.windowBytes * 1e9 / (now - s.windowStartNanos);
          streamFell |= s.baseline > 0 && s.recent < s.baseline * (1 - dropFraction);
          s.baseline = Math.max(s.recent, s.baseline * BASELINE_DECAY);
        }
        s.windowBytes = 0;
        s.windowStartNanos = now;
      }
      boolean fell = baseline > 0 && t < baseline * (1 - dropFraction);
      switch (probe) {
        case RAISED -> {
          probe = Probe.NONE;
          if (t < before * (1 + gainFraction)) {
            set(prevDepth, prevBytes, false); // the extra depth did not pay
          }
        }
        case LOWERED -> {
          probe = Probe.NONE;
          if (t < before * (1 - dropFraction)) {
            set(prevDepth, prevBytes, true); // it was still needed
          }
        }
        case NONE -> {
          if ((fell || streamFell) && (depth < maxDepth || requestBytes < maxBytes)) {
            probe = Probe.RAISED;
            before = t;
            calm = 0;
            set(Math.min(maxDepth, depth * 2), Math.min(maxBytes, requestBytes * 2), true);
          } else if (!fell && (depth > minDepth || requestBytes > minBytes) && ++calm >= calmWindows) {
            probe = Probe.LOWERED;
            before = t;
            calm = 0;
            set(Math.max(minDepth, depth / 2), Math.max(minBytes, requestBytes / 2), false);
          }
        }
      }
      baseline = Math.max(t, baseline * BASELINE_DECAY);
      windowStart = now;
      windowBytes = 0;
      windowCount = 0;
    }

    private void set(int d, int bytes, boolean raised) {
      prevDepth = depth;
      prevBytes = requestBytes;
      depth = d;
      requestBytes = bytes;
      stats.adapted(raised, d, bytes);
    }
  }
}
