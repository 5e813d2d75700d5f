package org.hdfsrdma.datanode.disk;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * A discrete-event simulation of one volume: a device model driven by a
 * {@link SchedulerCore}, with closed-loop streams. No threads, no wall clock:
 * the same inputs give the same outputs.
 *
 * <p>Device: {@code channels} requests can be in service at once; each
 * spends {@code latencyNanos} (injected, can change mid-run) plus a seek
 * when it does not continue where the device's previous request ended, then
 * transfers its bytes over one shared bus of {@code bytesPerSec}.
 *
 * <p>Stream: moves {@code totalBytes} in requests of the policy's current
 * {@link Policy#requestBytes()} (or a fixed size), keeps up to
 * {@code outstanding} requests queued or in flight, and issues the next one
 * {@code thinkNanos} after a completion (the network delivering the next packet).
 */
final class SimulatedDevice {
  final int channels;
  final long seekNanos;
  final double bytesPerSec;
  long latencyNanos;
  private final long[] channelFree;
  private long busFree;
  private Object lastStream;
  private long lastEnd = -1;

  SimulatedDevice(int channels, long seekNanos, double bytesPerSec, long latencyNanos) {
    this.channels = channels;
    this.seekNanos = seekNanos;
    this.bytesPerSec = bytesPerSec;
    this.latencyNanos = latencyNanos;
    this.channelFree = new long[channels];
  }

  /** When a request dispatched at {@code now} completes. */
  long serve(DiskRequest r, long now) {
    int ch = 0;
    for (int i = 1; i < channels; i++) {
      if (channelFree[i] < channelFree[ch]) {
        ch = i;
      }
    }
    long start = Math.max(now, channelFree[ch]);
    boolean sequential = r.stream() == lastStream && r.offset() == lastEnd;
    long ready = start + latencyNanos + (sequential ? 0 : seekNanos);
    long busStart = Math.max(ready, busFree);
    long end = busStart + (long) (r.length() * 1e9 / bytesPerSec);
    busFree = end;
    channelFree[ch] = end;
    lastStream = r.stream();
    lastEnd = r.offset() + r.length();
    return end;
  }

  /** One stream's workload and what happened to it. */
  static final class Load {
    final String name;
    final long totalBytes;
    final int fixedBytes;  // 0: the policy's requestBytes()
    final int outstanding;
    final long thinkNanos;
    final long startNanos;
    long issued;
    long done;
    int pending;
    long finishNanos = -1;
    long maxLatencyNanos;
    final List<Long> completions = new ArrayList<>();

    Load(String name, long totalBytes, int fixedBytes, int outstanding, long thinkNanos, long startNanos) {
      this.name = name;
      this.totalBytes = totalBytes;
      this.fixedBytes = fixedBytes;
      this.outstanding = outstanding;
      this.thinkNanos = thinkNanos;
      this.startNanos = startNanos;
    }

    @Override
    public String toString() {
      return name;
    }
  }

  /** Something that changes the device at a time (injected latency). */
  record Change(long atNanos, long latencyNanos) {}

  private record Event(long at, long seq, int kind, Object what) {}

  private static final int ISSUE = 0;
  private static final int COMPLETE = 1;
  private static final int WAKE = 2;
  private static final int CHANGE = 3;

  /** Depth after each change window, sampled for the tests: (time, depth, requestBytes). */
  final List<long[]> shape = new ArrayList<>();

  /** Runs the loads to completion; returns the end time. */
  long run(SchedulerCore core, List<Load> loads, List<Change> changes, long sampleEveryNanos) {
    return run(core, loads, changes, sampleEveryNanos, Long.MAX_VALUE);
  }

  /** As above, stopping at {@code stopNanos} of simulated time. */
  long run(SchedulerCore core, List<Load> loads, List<Change> changes, long sampleEveryNanos, long stopNanos) {
    PriorityQueue<Event> events = new PriorityQueue<>((a, b) -> a.at != b.at ? Long.compare(a.at, b.at)
        : Long.compare(a.seq, b.seq));
    long[] seq = {0};
    java.util.function.BiConsumer<Long, Object[]> add = (t, kw) -> events.add(new Event(t, seq[0]++,
        (Integer) kw[0], kw[1]));
    for (Load l : loads) {
      add.accept(l.startNanos, new Object[] {ISSUE, l});
    }
    for (Change c : changes) {
      add.accept(c.atNanos(), new Object[] {CHANGE, c});
    }
    Map<DiskRequest, Load> owner = new HashMap<>();
    long now = 0;
    long wakeAt = Long.MAX_VALUE;
    long nextSample = 0;
    int running = loads.size();
    while (!events.isEmpty() && running > 0 && events.peek().at <= stopNanos) {
      Event e = events.poll();
      now = e.at;
      while (sampleEveryNanos > 0 && now >= nextSample) {
        shape.add(new long[] {nextSample, core.policy().depth(), core.policy().requestBytes()});
        nextSample += sampleEveryNanos;
      }
      switch (e.kind) {
        case ISSUE -> {
          Load l = (Load) e.what;
          while (l.pending < l.outstanding && l.issued < l.totalBytes) {
            int size = (int) Math.min(l.fixedBytes > 0 ? l.fixedBytes : core.policy().requestBytes(),
                l.totalBytes - l.issued);
            DiskRequest r = new DiskRequest(l, false, l.issued, size);
            if (!core.offer(r, now)) {
              break; // backpressure: try again after the next completion
            }
            owner.put(r, l);
            l.issued += size;
            l.pending++;
          }
        }
        case COMPLETE -> {
          DiskRequest r = (DiskRequest) e.what;
          Load l = owner.remove(r);
          core.complete(r, r.length(), now);
          l.pending--;
          l.done += r.length();
          l.completions.add(now);
          l.maxLatencyNanos = Math.max(l.maxLatencyNanos, now - r.submittedNanos);
          if (l.done >= l.totalBytes) {
            l.finishNanos = now;
            core.close(l);
            running--;
          } else if (l.issued < l.totalBytes) {
            add.accept(now + l.thinkNanos, new Object[] {ISSUE, l});
          }
          for (Load o : loads) { // room in the queue again for loads that backpressure stopped
            if (o != l && o.pending == 0 && o.issued < o.totalBytes && o.issued > 0) {
              add.accept(now, new Object[] {ISSUE, o});
            }
          }
        }
        case WAKE -> {
          if (e.at == wakeAt) {
            wakeAt = Long.MAX_VALUE;
          }
        }
        case CHANGE -> latencyNanos = ((Change) e.what).latencyNanos();
        default -> throw new AssertionError();
      }
      DiskRequest r;
      while ((r = core.poll(now)) != null) {
        add.accept(serve(r, now), new Object[] {COMPLETE, r});
      }
      long w = core.wakeNanos();
      if (w != Long.MAX_VALUE && w != wakeAt) {
        wakeAt = w;
        add.accept(w, new Object[] {WAKE, null});
      }
    }
    return now;
  }
}
