package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The write set-up executor: each set-up on a thread of its own, so one blocked (a replica
 * creation hung on its volume) holds up no other; at the bound one more is refused at once,
 * never queued behind the blocked ones; a finished set-up's thread serves the next.
 */
class SetupExecutorTest {
  /** Executes {@code r}, trying again while the last task's thread is on its way back to idle. */
  private static void executeSoon(ThreadPoolExecutor e, Runnable r) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (true) {
      try {
        e.execute(r);
        return;
      } catch (RejectedExecutionException busy) {
        assertTrue(System.nanoTime() < deadline, "refused for 10 s with a thread free");
        Thread.sleep(5);
      }
    }
  }

  @Test
  @Timeout(30)
  void aBlockedSetUpHoldsUpNoOtherAndTheBoundRefuses() throws Exception {
    ThreadPoolExecutor e = RdmaDataNodePlugin.newSetupExecutor(3, "test-setup-");
    CountDownLatch hung = new CountDownLatch(1);
    CountDownLatch started = new CountDownLatch(2);
    try {
      for (int i = 0; i < 2; i++) { // two set-ups hang on their volume
        e.execute(() -> {
          started.countDown();
          try {
            hung.await();
          } catch (InterruptedException x) {
            Thread.currentThread().interrupt();
          }
        });
      }
      assertTrue(started.await(10, TimeUnit.SECONDS), "both hung set-ups run at once");
      // a third runs at once beside them, and its thread is reused by the next ones
      for (int i = 0; i < 5; i++) {
        CountDownLatch ran = new CountDownLatch(1);
        executeSoon(e, ran::countDown);
        assertTrue(ran.await(10, TimeUnit.SECONDS), "set-up " + i + " ran while two were hung");
      }
      assertEquals(3, e.getLargestPoolSize(), "threads made: the two hung and one reused");
      // at the bound (three running), one more is refused, not queued
      CountDownLatch third = new CountDownLatch(1);
      executeSoon(e, () -> {
        try {
          third.await();
        } catch (InterruptedException x) {
          Thread.currentThread().interrupt();
        }
      });
      assertThrows(RejectedExecutionException.class, () -> e.execute(() -> { }));
      assertEquals(0, e.getQueue().size());
      hung.countDown();
      third.countDown();
      CountDownLatch after = new CountDownLatch(1);
      executeSoon(e, after::countDown); // once the volume is back, set-ups are taken again
      assertTrue(after.await(10, TimeUnit.SECONDS));
    } finally {
      hung.countDown();
      e.shutdownNow();
      assertTrue(e.awaitTermination(10, TimeUnit.SECONDS));
    }
  }
}
