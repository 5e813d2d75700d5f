package org.hdfsrdma.transport.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.transport.TransportException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A UCX context creation that does not return (UCX's device query waiting on a netlink reply
 * that never comes, seen on a loaded host) costs its caller the timeout, not forever; later
 * creations fail at once until it returns, and the context it makes then is destroyed.
 */
@Timeout(60)
class UcxContextTimeoutTest {
  @Test
  void aStuckCreationFailsAfterTheTimeoutAndUcxIsRefusedUntilItReturns() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    AtomicLong destroyed = new AtomicLong();
    CountDownLatch destroyedLatch = new CountDownLatch(1);
    long t0 = System.nanoTime();
    TransportException e = assertThrows(TransportException.class,
        () -> AbstractUcxTransport.createContext(() -> {
          try {
            release.await();
          } catch (InterruptedException x) {
            Thread.currentThread().interrupt();
          }
          return 42L;
        }, ctx -> {
          destroyed.set(ctx);
          destroyedLatch.countDown();
        }, 300));
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    assertTrue(ms >= 300 && ms < 10_000, "waited " + ms + " ms");
    assertTrue(e.getMessage().contains("did not finish within 300 ms"), e.getMessage());

    TransportException refused = assertThrows(TransportException.class,
        () -> AbstractUcxTransport.createContext(() -> 7L, ctx -> { }, 10_000));
    assertTrue(refused.getMessage().contains("not usable in this process"), refused.getMessage());

    release.countDown();
    assertTrue(destroyedLatch.await(10, TimeUnit.SECONDS), "the late context destroyed");
    assertEquals(42L, destroyed.get());
    // the refusal ends right after the late context is destroyed (on the creating thread)
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (AbstractUcxTransport.stuckCreation() != null && System.nanoTime() < end) {
      Thread.sleep(5);
    }
    assertNull(AbstractUcxTransport.stuckCreation(), "still refused");
    assertEquals(7L, AbstractUcxTransport.createContext(() -> 7L, ctx -> { }, 10_000), "usable again");
  }

  @Test
  void aNativeFailureIsTheCallersAsItWas() {
    NativeException ne = new NativeException("no device", NativeException.ERR_IO);
    NativeException got = assertThrows(NativeException.class,
        () -> AbstractUcxTransport.createContext(() -> {
          throw ne;
        }, ctx -> { }, 10_000));
    assertEquals(ne, got);
  }
}
