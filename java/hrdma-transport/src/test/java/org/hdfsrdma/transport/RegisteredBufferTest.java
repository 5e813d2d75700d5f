package org.hdfsrdma.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** RegisteredBuffer's own reference counting: Netty's ReferenceCounted rules, without Netty. */
class RegisteredBufferTest {

  @Test
  void theLastReleaseReturnsTheMemoryOnceAndThenRunsTheHook() throws Exception {
    try (BufferPool pool = new BufferPool(SlabAllocator.DIRECT, 1 << 16, 1 << 20)) {
      RegisteredBuffer b = pool.allocate(100);
      AtomicInteger hooks = new AtomicInteger();
      b.onRelease(() -> {
        assertEquals(0, pool.buffersOutstanding(), "the memory is back before the hook runs");
        hooks.incrementAndGet();
      });
      assertEquals(1, b.refCnt());
      assertSame(b, b.retain());
      assertSame(b, b.retain(2));
      assertEquals(4, b.refCnt());
      assertFalse(b.release());
      assertFalse(b.release(2));
      assertEquals(1, pool.buffersOutstanding());
      assertEquals(0, hooks.get());
      assertTrue(b.release());
      assertEquals(0, b.refCnt());
      assertEquals(0, pool.buffersOutstanding());
      assertEquals(1, hooks.get());
    }
  }

  @Test
  void pastTheLastReleaseEveryCountChangeThrows() throws Exception {
    try (BufferPool pool = new BufferPool(SlabAllocator.DIRECT, 1 << 16, 1 << 20)) {
      RegisteredBuffer b = pool.allocate(100);
      b.retain();
      IllegalReferenceCountException tooMany = assertThrows(IllegalReferenceCountException.class,
          () -> b.release(3));
      assertEquals("refCnt: 2, decrement: 3", tooMany.getMessage());
      assertEquals(2, b.refCnt(), "a refused release changes nothing");
      assertTrue(b.release(2));
      assertEquals("refCnt: 0, decrement: 1",
          assertThrows(IllegalReferenceCountException.class, b::release).getMessage());
      assertEquals("refCnt: 0, increment: 1",
          assertThrows(IllegalReferenceCountException.class, b::retain).getMessage());
      assertThrows(IllegalArgumentException.class, () -> b.retain(0));
      assertThrows(IllegalArgumentException.class, () -> b.release(-1));
      assertEquals(0, pool.buffersOutstanding(), "recycled once");
    }
  }

  @Test
  void anOverflowingRetainThrows() throws Exception {
    try (BufferPool pool = new BufferPool(SlabAllocator.DIRECT, 1 << 16, 1 << 20)) {
      RegisteredBuffer b = pool.allocate(100);
      b.retain(Integer.MAX_VALUE - 1);
      assertThrows(IllegalReferenceCountException.class, b::retain);
      assertTrue(b.release(Integer.MAX_VALUE));
    }
  }

  /** Threads retaining and releasing at once: the count ends where it began, recycled exactly once. */
  @Test
  void concurrentRetainsAndReleasesKeepCount() throws Exception {
    try (BufferPool pool = new BufferPool(SlabAllocator.DIRECT, 1 << 16, 1 << 20)) {
      RegisteredBuffer b = pool.allocate(100);
      AtomicInteger hooks = new AtomicInteger();
      b.onRelease(hooks::incrementAndGet);
      int threads = 4;
      int rounds = 20_000;
      CountDownLatch start = new CountDownLatch(1);
      Thread[] ts = new Thread[threads];
      for (int i = 0; i < threads; i++) {
        ts[i] = new Thread(() -> {
          try {
            start.await();
          } catch (InterruptedException e) {
            return;
          }
          for (int r = 0; r < rounds; r++) {
            b.retain();
            b.release();
          }
        });
        ts[i].start();
      }
      start.countDown();
      for (Thread t : ts) {
        t.join();
      }
      assertEquals(1, b.refCnt());
      assertEquals(0, hooks.get());
      assertTrue(b.release());
      assertEquals(1, hooks.get());
      assertEquals(0, pool.buffersOutstanding());
    }
  }
}
