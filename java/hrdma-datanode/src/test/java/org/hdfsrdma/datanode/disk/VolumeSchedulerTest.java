package org.hdfsrdma.datanode.disk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.StorageType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The threaded shell around {@link SchedulerCore}: workers, backpressure, isolation, close; and the settings. */
@Timeout(60)
class VolumeSchedulerTest {
  private static final long SEC = TimeUnit.SECONDS.toNanos(1);

  private static void await(CountDownLatch l) throws IOException {
    try {
      l.await();
    } catch (InterruptedException e) {
      throw new java.io.InterruptedIOException();
    }
  }

  /**
   * A caller interrupted while its request runs does not return before the request has ended:
   * the request writes into the caller's buffer, which the caller gives back (or a segment
   * unmaps) as soon as it returns.
   */
  @Test
  void anInterruptedCallReturnsOnlyOnceItsRequestHasEnded() throws Exception {
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch gate = new CountDownLatch(1);
    AtomicInteger ended = new AtomicInteger();
    java.util.concurrent.atomic.AtomicReference<Throwable> thrown = new java.util.concurrent.atomic.AtomicReference<>();
    try (VolumeScheduler s = new VolumeScheduler("v", new Policies.RoundRobin("ssd", 1, 4096), 4, 4, 10 * SEC,
        30 * SEC)) {
      Thread caller = new Thread(() -> {
        try {
          s.call("s", false, 0, 1, () -> {
            running.countDown();
            try {
              gate.await(); // the worker's wait: not the caller's interrupt
            } catch (InterruptedException e) {
              throw new java.io.InterruptedIOException();
            }
            return ended.incrementAndGet();
          });
        } catch (IOException e) {
          thrown.set(e);
        }
      });
      caller.start();
      running.await();
      caller.interrupt();
      caller.join(300);
      assertTrue(caller.isAlive(), "returned while its request still runs");
      assertEquals(0, ended.get());
      gate.countDown();
      caller.join(10_000);
      assertFalse(caller.isAlive());
      assertEquals(1, ended.get());
      assertTrue(thrown.get() instanceof java.io.InterruptedIOException, String.valueOf(thrown.get()));
    }
  }

  /**
   * A write on an idle volume runs on its caller's thread (no hand-off to a worker and back),
   * counted as any request; the caller gets its result when the write has ended.
   */
  @Test
  void callHereRunsOnTheCallersThreadWhenTheVolumeIsIdle() throws Exception {
    try (VolumeScheduler s = new VolumeScheduler("v", new Policies.RoundRobin("ssd", 1, 4096), 4, 4, 10 * SEC,
        30 * SEC)) {
      Thread caller = Thread.currentThread();
      for (int i = 0; i < 3; i++) {
        Thread ran = s.callHere("w", true, i * 4096L, 4096, Thread::currentThread);
        assertEquals(caller, ran);
      }
      VolumeStats.Snapshot snap = s.stats().snapshot();
      assertEquals(3, snap.requests());
      assertEquals(3 * 4096, snap.bytesWritten());
      assertEquals(0, snap.inFlight());
    }
  }

  /**
   * An interrupt pending on the caller when its write runs here does not reach the write (a
   * FileChannel would close on it, the replica's channel mid-packet); the caller has it back after.
   */
  @Test
  void callHereHoldsACallersPendingInterruptUntilTheWriteEnds(@org.junit.jupiter.api.io.TempDir
      java.nio.file.Path dir) throws Exception {
    try (VolumeScheduler s = new VolumeScheduler("v", new Policies.RoundRobin("ssd", 1, 4096), 4, 4, 10 * SEC,
        30 * SEC);
        java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(dir.resolve("blk"),
            java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.WRITE)) {
      Thread.currentThread().interrupt();
      try {
        int n = s.callHere("w", true, 0, 4096, () -> ch.write(java.nio.ByteBuffer.allocate(4096), 0));
        assertEquals(4096, n);
        assertTrue(Thread.currentThread().isInterrupted(), "the caller's interrupt was lost");
      } finally {
        Thread.interrupted();
      }
      assertTrue(ch.isOpen(), "the write closed the channel");
    }
  }

  /** On a busy volume a write waits its turn and runs on a worker, as any request. */
  @Test
  void callHereOnABusyVolumeQueuesForAWorker() throws Exception {
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch gate = new CountDownLatch(1);
    ExecutorService callers = Executors.newFixedThreadPool(2);
    try (VolumeScheduler s = new VolumeScheduler("v", new Policies.RoundRobin("ssd", 1, 4096), 4, 4, 10 * SEC,
        30 * SEC)) {
      Future<String> first = callers.submit(() -> s.call("r", false, 0, 1, () -> {
        running.countDown();
        await(gate);
        return Thread.currentThread().getName();
      }));
      running.await();
      Thread[] caller = new Thread[1];
      Future<Thread> second = callers.submit(() -> {
        caller[0] = Thread.currentThread();
        return s.callHere("w", true, 0, 4096, Thread::currentThread);
      });
      Thread.sleep(200);
      assertFalse(second.isDone(), "ran beside a request in flight, past the policy's depth of 1");
      gate.countDown();
      assertTrue(first.get().startsWith("hrdma-disk-v-"));
      Thread ran = second.get();
      assertTrue(ran.getName().startsWith("hrdma-disk-v-"), ran.getName());
      assertFalse(ran == caller[0]);
    } finally {
      callers.shutdownNow();
    }
  }

  /**
   * A request that comes while one runs on its caller's thread (depth 1) waits for it, and a
   * worker serves it as soon as it ends: the end of a request run here wakes the workers.
   */
  @Test
  void aRequestQueuedBehindOneRunHereIsServedWhenItEnds() throws Exception {
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch gate = new CountDownLatch(1);
    AtomicInteger order = new AtomicInteger();
    ExecutorService callers = Executors.newFixedThreadPool(2);
    try (VolumeScheduler s = new VolumeScheduler("v", new Policies.RoundRobin("ssd", 1, 4096), 4, 4, 10 * SEC,
        30 * SEC)) {
      Future<Integer> here = callers.submit(() -> s.callHere("w", true, 0, 4096, () -> {
        running.countDown();
        await(gate);
        return order.incrementAndGet();
      }));
      running.await();
      Future<Integer> queued = callers.submit(() -> s.call("r", false, 0, 1, order::incrementAndGet));
      long end = System.nanoTime() + 10 * SEC;
      while (s.stats().snapshot().queued() < 1 && System.nanoTime() < end) {
        Thread.sleep(5);
      }
      Thread.sleep(100);
      assertEquals(1, s.stats().snapshot().queued(), "waits behind the request run here");
      assertEquals(1, s.stats().snapshot().inFlight());
      assertFalse(queued.isDone());
      gate.countDown();
      assertEquals(1, here.get());
      assertEquals(2, queued.get(10, TimeUnit.SECONDS));
    } finally {
      callers.shutdownNow();
    }
  }

  @Test
  void aFullQueuePushesBackOnCallersAndDrainsInOrder() throws Exception {
    CountDownLatch gate = new CountDownLatch(1);
    AtomicInteger ran = new AtomicInteger();
    ExecutorService callers = Executors.newFixedThreadPool(8);
    try (VolumeScheduler s = new VolumeScheduler("v", new Policies.RoundRobin("ssd", 1, 4096), 4, 4, 10 * SEC,
        30 * SEC)) {
      List<Future<Integer>> f = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        String stream = "s" + i;
        f.add(callers.submit(() -> s.call(stream, false, 0, 1, () -> {
          await(gate);
          return ran.incrementAndGet();
        })));
      }
      // one on the device, four queued, three callers held back by the bound
      long end = System.nanoTime() + 10 * SEC;
      while (s.stats().snapshot().queued() < 4 && System.nanoTime() < end) {
        Thread.sleep(5);
      }
      Thread.sleep(100);
      assertEquals(4, s.stats().snapshot().queued());
      assertEquals(1, s.stats().snapshot().inFlight());
      assertEquals(0, ran.get());
      gate.countDown();
      for (Future<Integer> x : f) {
        assertTrue(x.get() >= 1);
      }
      assertEquals(8, ran.get());
      assertTrue(s.stats().snapshot().maxQueued() <= 4);
    } finally {
      callers.shutdownNow();
    }
  }

  @Test
  void requestsSubmittedAtOnceAllReachTheDeviceUpToTheDepth() throws Exception {
    // one caller submits ahead without waiting (the direct read-ahead): every one of them gets a
    // worker, with no completion in between to wake the others
    int depth = 6;
    CountDownLatch started = new CountDownLatch(depth);
    CountDownLatch gate = new CountDownLatch(1);
    AtomicInteger maxRunning = new AtomicInteger();
    AtomicInteger running = new AtomicInteger();
    try (VolumeScheduler s = new VolumeScheduler("v", new Policies.RoundRobin("ssd", depth, 4096), 64, 64,
        10 * SEC, 30 * SEC)) {
      List<java.util.concurrent.CompletableFuture<Integer>> f = new ArrayList<>();
      for (int i = 0; i < depth + 2; i++) {
        f.add(s.submit("one", false, i, 1, () -> {
          maxRunning.accumulateAndGet(running.incrementAndGet(), Math::max);
          started.countDown();
          await(gate);
          running.decrementAndGet();
          return 1;
        }));
      }
      assertTrue(started.await(20, TimeUnit.SECONDS), (depth - started.getCount()) + " of " + depth + " started");
      assertEquals(2, s.stats().snapshot().queued(), "the rest wait for a slot");
      gate.countDown();
      for (var x : f) {
        assertEquals(1, s.await(x));
      }
      assertEquals(depth, maxRunning.get());
      assertEquals(depth + 2, s.stats().snapshot().requests());
    }
  }

  @Test
  void aSlowVolumeDoesNotHoldUpAnother() throws Exception {
    CountDownLatch stuck = new CountDownLatch(1);
    ExecutorService callers = Executors.newFixedThreadPool(2);
    try (VolumeScheduler slow = new VolumeScheduler("slow", new Policies.Rotational(1 << 20, 0, 4096), 8, 8,
            10 * SEC, 30 * SEC);
        VolumeScheduler fast = new VolumeScheduler("fast", new Policies.Rotational(1 << 20, 0, 4096), 8, 8,
            10 * SEC, 30 * SEC)) {
      Future<?> blocked = callers.submit(() -> slow.call("a", true, 0, 1, () -> {
        await(stuck);
        return null;
      }));
      for (int i = 0; i < 100; i++) {
        assertEquals(i, (int) fast.call("b", true, i, 1, () -> 0) + i);
      }
      assertFalse(blocked.isDone());
      stuck.countDown();
      blocked.get();
    } finally {
      callers.shutdownNow();
    }
  }

  @Test
  void failuresReachTheCallerAndCloseFailsWhatIsQueued() throws Exception {
    VolumeScheduler s = new VolumeScheduler("v", new Policies.Fifo(1, 4096, false), 8, 8, 10 * SEC, 30 * SEC);
    IOException e = assertThrows(IOException.class, () -> s.call("a", false, 0, 1, () -> {
      throw new IOException("bad sector");
    }));
    assertEquals("bad sector", e.getMessage());
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch gate = new CountDownLatch(1);
    ExecutorService callers = Executors.newFixedThreadPool(2);
    Future<?> first = callers.submit(() -> s.call("a", false, 0, 1, () -> {
      started.countDown();
      await(gate);
      return null;
    }));
    started.await();
    Future<?> queued = callers.submit(() -> s.call("b", false, 0, 1, () -> null));
    Thread.sleep(100);
    Thread closer = new Thread(s::close);
    closer.start();
    java.util.concurrent.ExecutionException x = assertThrows(java.util.concurrent.ExecutionException.class,
        () -> queued.get(10, TimeUnit.SECONDS));
    assertTrue(x.getCause().getMessage().contains("closed"), x.getCause().toString());
    gate.countDown();
    closer.join();
    first.cancel(true);
    assertThrows(IOException.class, () -> s.call("c", false, 0, 1, () -> null));
    callers.shutdownNow();
  }

  @Test
  void inlineRunsOnTheCallersThread() throws Exception {
    try (VolumeScheduler s = new VolumeScheduler("ram", new Policies.Fifo(1, 4096, true), 8, 8, SEC, SEC)) {
      Thread me = Thread.currentThread();
      assertTrue(s.call("a", true, 0, 10, () -> Thread.currentThread() == me));
      assertEquals(10, s.stats().snapshot().bytesWritten());
    }
  }

  @Test
  void settingsFollowStorageTypesAndOverridesAndRefuseBadValues() {
    Configuration conf = new Configuration(false);
    conf.set(DiskSettings.POLICY_OVERRIDES_KEY, "/data/3/=ssd, file:///data/4=fifo");
    conf.set(DiskSettings.POLICY_KEY_PREFIX + "archive", "inline");
    DiskSettings s = DiskSettings.of(conf);
    assertEquals("rotational", s.policyFor(StorageType.DISK, "/data/1").name());
    assertEquals("adaptive", s.policyFor(StorageType.SSD, "/data/2").name());
    assertEquals("inline", s.policyFor(StorageType.RAM_DISK, "/mnt/ram").name());
    assertEquals("inline", s.policyFor(StorageType.ARCHIVE, "/a").name());
    assertEquals("ssd", s.policyFor(StorageType.DISK, "/data/3").name());
    assertEquals("fifo", s.policyFor(StorageType.SSD, "/data/4/").name());
    conf.setBoolean(DiskSettings.SCHEDULER_KEY, false);
    assertEquals("inline", DiskSettings.of(conf).policyFor(StorageType.DISK, "/data/1").name());

    String[][] bad = {
      {DiskSettings.POLICY_KEY_PREFIX + "ssd", "fastest"},
      {DiskSettings.POLICY_OVERRIDES_KEY, "/data/1"},
      {DiskSettings.SLICE_BYTES_KEY, "0"},
      {DiskSettings.SLICE_BYTES_KEY, "lots"},
      {DiskSettings.SSD_DEPTH_KEY, "0"},
      {DiskSettings.ADAPTIVE_MIN_DEPTH_KEY, "64"},
      {DiskSettings.ADAPTIVE_DROP_KEY, "100"},
      {DiskSettings.MAX_QUEUED_KEY, "-1"},
      {DiskSettings.DROP_BYTES_KEY, "1k"},
    };
    for (String[] kv : bad) {
      Configuration c = new Configuration(false);
      c.set(kv[0], kv[1]);
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DiskSettings.of(c),
          kv[0] + "=" + kv[1]);
      assertTrue(e.getMessage().contains(kv[0].replace("min-queue-depth", "max-queue-depth"))
          || e.getMessage().contains(kv[0]), e.getMessage());
    }
  }
}
