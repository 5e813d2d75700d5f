package org.hdfsrdma.datanode.disk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.hdfsrdma.datanode.disk.SimulatedDevice.Change;
import org.hdfsrdma.datanode.disk.SimulatedDevice.Load;
import org.junit.jupiter.api.Test;

/**
 * The scheduling policies against a simulated device (deterministic: no
 * threads, simulated time). There is no rotational disk on the machines we
 * test on, so the rotational policy's value is shown with the seek model here.
 */
class DiskSchedulerSimTest {
  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);
  private static final long US = TimeUnit.MICROSECONDS.toNanos(1);
  private static final int KB = 1 << 10;
  private static final int MB = 1 << 20;

  /** A 150 MB/s disk with an 8 ms seek (a rotational disk). */
  private static SimulatedDevice hdd() {
    return new SimulatedDevice(1, 8 * MS, 150e6, 0);
  }

  private static SchedulerCore core(Policy p) {
    return new SchedulerCore(p, 256, 64, 2_000 * MS, new VolumeStats());
  }

  private static List<Load> writers(int n, long bytesEach, int outstanding) {
    List<Load> l = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      // 64 KB packets, one at a time, the next arriving 20 us after the last is on disk
      l.add(new Load("w" + i, bytesEach, 64 * KB, outstanding, 20 * US, 0));
    }
    return l;
  }

  private static double bandwidth(List<Load> loads, long end) {
    long bytes = loads.stream().mapToLong(l -> l.done).sum();
    return bytes * 1e9 / end;
  }

  @Test
  void rotationalKeepsLongRunsAndBandwidthUnderFourStreams() {
    Policy rot = new Policies.Rotational(16 * MB, MS, 64 * KB);
    List<Load> one = writers(1, 512L * MB, 1);
    SchedulerCore c1 = core(rot);
    double bw1 = bandwidth(one, hdd().run(c1, one, List.of(), 0));

    List<Load> four = writers(4, 128L * MB, 1);
    SchedulerCore c4 = core(new Policies.Rotational(16 * MB, MS, 64 * KB));
    double bw4 = bandwidth(four, hdd().run(c4, four, List.of(), 0));

    List<Load> fourFifo = writers(4, 128L * MB, 1);
    SchedulerCore cf = core(new Policies.Fifo(1, 64 * KB, false));
    double bwFifo = bandwidth(fourFifo, hdd().run(cf, fourFifo, List.of(), 0));

    VolumeStats.Snapshot s4 = c4.stats().snapshot();
    VolumeStats.Snapshot sf = cf.stats().snapshot();
    System.out.printf("sim hdd: 1 stream %.1f MB/s; 4 streams rotational %.1f MB/s (%.0f%%, runs %.1f MB), "
        + "fifo %.1f MB/s (%.0f%%, runs %.0f KB)%n", bw1 / 1e6, bw4 / 1e6, 100 * bw4 / bw1,
        s4.avgRunBytes() / MB, bwFifo / 1e6, 100 * bwFifo / bw1, sf.avgRunBytes() / KB);
    assertTrue(bw4 >= 0.9 * bw1, "4 streams keep 90% of one: " + bw4 + " vs " + bw1);
    assertTrue(s4.avgRunBytes() >= 8.0 * MB, "long runs: " + s4.avgRunBytes());
    // the model itself: interleaving at packet granularity seeks on every request
    assertEquals(64.0 * KB, sf.avgRunBytes(), 1.0);
    assertTrue(bwFifo < 0.5 * bw1, "fifo loses to seeks: " + bwFifo + " vs " + bw1);
    for (Load l : four) {
      assertEquals(128L * MB, l.done, l + " finished");
    }
  }

  @Test
  void rotationalWithoutLingerGetsShortRunsFromOneAtATimeStreams() {
    // why the policy anticipates: a stream with one request at a time loses its turn at once otherwise
    List<Load> four = writers(4, 32L * MB, 1);
    SchedulerCore c = core(new Policies.Rotational(16 * MB, 0, 64 * KB));
    hdd().run(c, four, List.of(), 0);
    assertTrue(c.stats().snapshot().avgRunBytes() < 2.0 * 64 * KB, "runs " + c.stats().snapshot().avgRunBytes());
  }

  private static Policies.Adaptive adaptive() {
    return new Policies.Adaptive(1, 16, 128 * KB, 1 * MB, 32, 0.10, 0.05, 4);
  }

  /** Flash: 32 channels behind a 1 GB/s bus, 10 us per request, 1 ms while the injected slowdown lasts. */
  private static SimulatedDevice flash() {
    return new SimulatedDevice(32, 0, 1e9, 10 * US);
  }

  private static List<Load> readers(int n, int outstanding) {
    List<Load> l = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      l.add(new Load("r" + i, 1L << 40, 0, outstanding, 0, 0));
    }
    return l;
  }

  private static int maxDepth(SimulatedDevice d, long from, long to) {
    return d.shape.stream().filter(s -> s[0] >= from && s[0] < to).mapToInt(s -> (int) s[1]).max().orElse(-1);
  }

  private static int depthAt(SimulatedDevice d, long t) {
    return d.shape.stream().filter(s -> s[0] <= t).reduce((a, b) -> b).map(s -> (int) s[1]).orElse(-1);
  }

  @Test
  void adaptiveRaisesDepthWhenLatencyRisesAndLowersItWhenItFalls() {
    SimulatedDevice d = flash();
    Policies.Adaptive p = adaptive();
    SchedulerCore c = core(p);
    List<Load> loads = readers(4, 16);
    List<Change> changes = List.of(new Change(1_000 * MS, MS), new Change(2_000 * MS, 10 * US));
    d.run(c, loads, changes, 10 * MS, 3_000 * MS);
    VolumeStats.Snapshot s = c.stats().snapshot();
    int calm = maxDepth(d, 0, 1_000 * MS);
    int slow = maxDepth(d, 1_000 * MS, 2_000 * MS);
    int slowEnd = depthAt(d, 1_990 * MS);
    int after = depthAt(d, 2_990 * MS);
    System.out.printf("sim flash adaptive: depth <= %d before the slowdown, up to %d during it (%d at its end), "
        + "%d after; %d raises, %d lowers%n", calm, slow, slowEnd, after, s.depthRaises(), s.depthLowers());
    assertEquals(1, calm, "no reason to raise while the device is steady");
    assertTrue(slow >= 8, "depth raised while latency is high: " + slow);
    // 4 x 512 KB in flight already fill the bus at 1 ms: the probe down to 4 holds, to 2 does not
    assertTrue(slowEnd >= 4, "depth kept up while latency is high: " + slowEnd);
    assertTrue(after <= 2, "depth lowered once latency fell: " + after);
    assertTrue(s.depthRaises() > 0 && s.depthLowers() > 0);

    // and the raise is what kept throughput up: the same run at a fixed depth of 1
    SimulatedDevice d1 = flash();
    SchedulerCore c1 = core(new Policies.RoundRobin("ssd", 1, 128 * KB));
    List<Load> l1 = readers(4, 16);
    d1.run(c1, l1, changes, 0, 2_000 * MS);
    SimulatedDevice da = flash();
    SchedulerCore ca = core(adaptive());
    List<Load> la = readers(4, 16);
    da.run(ca, la, changes, 0, 2_000 * MS);
    double fixed = l1.stream().mapToLong(l -> l.done).sum();
    double adapt = la.stream().mapToLong(l -> l.done).sum();
    System.out.printf("sim flash, 1 s steady then 1 s at 1 ms latency: fixed depth 1 moved %.0f MB, adaptive %.0f MB%n",
        fixed / 1e6, adapt / 1e6);
    assertTrue(adapt > 1.5 * fixed, "adaptive " + adapt + " vs fixed " + fixed);
  }

  @Test
  void aHogCannotStarveAnotherStream() {
    // one slice never ends for the hog (1 GB); the waiting limit (50 ms) still lets the other in
    SchedulerCore c = new SchedulerCore(new Policies.Rotational(1L << 30, MS, 64 * KB), 256, 64, 50 * MS,
        new VolumeStats());
    Load hog = new Load("hog", 256L * MB, 64 * KB, 8, 0, 0);
    Load other = new Load("other", 4L * MB, 64 * KB, 1, 20 * US, 100 * MS);
    hdd().run(c, List.of(hog, other), List.of(), 0);
    assertTrue(other.finishNanos > 0 && other.finishNanos < hog.finishNanos, "the other stream finished first");
    assertTrue(other.maxLatencyNanos <= 50 * MS + 20 * MS, "waited at most the limit plus a request and a seek: "
        + other.maxLatencyNanos / 1e6 + " ms");
    assertTrue(c.stats().snapshot().starvationGuards() > 0);
  }

  @Test
  void roundRobinSharesTheDeviceEvenly() {
    SimulatedDevice d = flash();
    SchedulerCore c = core(new Policies.RoundRobin("ssd", 4, 128 * KB));
    List<Load> loads = readers(4, 16);
    d.run(c, loads, List.of(), 0, 200 * MS);
    long min = loads.stream().mapToLong(l -> l.done).min().orElseThrow();
    long max = loads.stream().mapToLong(l -> l.done).max().orElseThrow();
    assertTrue(min > 0 && max - min <= 4L * 128 * KB, "evenly served: " + min + ".." + max);
  }

  @Test
  void queuesAreBounded() {
    SchedulerCore c = new SchedulerCore(new Policies.RoundRobin("ssd", 2, 64 * KB), 8, 3, 1_000 * MS,
        new VolumeStats());
    for (int i = 0; i < 3; i++) {
      assertTrue(c.offer(new DiskRequest("a", true, i, 1), 0));
    }
    assertFalse(c.offer(new DiskRequest("a", true, 3, 1), 0), "per-stream limit");
    for (int i = 0; i < 3; i++) {
      assertTrue(c.offer(new DiskRequest("b", true, i, 1), 0));
    }
    assertTrue(c.offer(new DiskRequest("c", true, 0, 1), 0));
    assertTrue(c.offer(new DiskRequest("c", true, 1, 1), 0));
    assertFalse(c.offer(new DiskRequest("d", true, 0, 1), 0), "volume limit");
    assertEquals(8, c.queued());
    DiskRequest r = c.poll(0);
    assertTrue(c.offer(new DiskRequest("d", true, 0, 1), 0), "room after a dispatch");
    c.complete(r, 1, 1);
    // the simulated streams never queue more than the limits either
    SimulatedDevice d = flash();
    SchedulerCore big = new SchedulerCore(adaptive(), 20, 6, 1_000 * MS, new VolumeStats());
    d.run(big, readers(4, 16), List.of(new Change(0, MS)), 0, 200 * MS);
    assertTrue(big.stats().snapshot().maxQueued() <= 20);
  }

  @Test
  void badSettingsAreRefused() {
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> new Policies.Rotational(0, MS, 1));
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> new Policies.Adaptive(4, 2, 1, 1, 1, 0.1, 0.1, 1));
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> new SchedulerCore(new Policies.Fifo(1, 1, false), 0, 1, 1, new VolumeStats()));
  }
}
