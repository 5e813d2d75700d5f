package org.hdfsrdma.transport.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.Jni;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A task handed to a UCX I/O thread while it stops is either refused (the caller then fails
 * its own future) or run before the worker goes: never accepted and dropped, which would
 * leave a send's buffer and completion unreported.
 */
@Timeout(120)
class UcxWorkerLoopStopTest {
  @Test
  void everyAcceptedTaskRunsWhenTheLoopStopsUnderConcurrentSubmission() throws Exception {
    HrdmaNative.ensureAvailable();
    long ctx = Jni.ctxCreate0("");
    try {
      long accepted = 0;
      long ran = 0;
      long refused = 0;
      for (int round = 0; round < 150; round++) {
        UcxWorkerLoop loop = new UcxWorkerLoop(ctx, "stop-test-" + round, 10);
        AtomicLong runs = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        CountDownLatch started = new CountDownLatch(3);
        List<Thread> submitters = new ArrayList<>();
        long[] acceptedBy = new long[3];
        long[] refusedBy = new long[3];
        for (int t = 0; t < 3; t++) {
          int me = t;
          Thread th = new Thread(() -> {
            started.countDown();
            while (!stop.get()) {
              try {
                loop.execute(runs::incrementAndGet);
                acceptedBy[me]++;
              } catch (RejectedExecutionException e) {
                refusedBy[me]++;
                return;
              }
            }
          });
          th.start();
          submitters.add(th);
        }
        started.await();
        Thread.sleep(round % 3);
        loop.shutdown();
        stop.set(true);
        for (Thread th : submitters) {
          th.join(10_000);
        }
        for (int t = 0; t < 3; t++) {
          accepted += acceptedBy[t];
          refused += refusedBy[t];
        }
        ran += runs.get();
        assertEquals(accepted, ran, "round " + round + ": tasks accepted and never run: "
            + (accepted - ran));
      }
      assertTrue(refused > 0, "no submission met the stopped loop");
    } finally {
      Jni.ctxDestroy0(ctx);
    }
  }
}
