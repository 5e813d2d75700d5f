package org.hdfsrdma.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class BufferPoolTest {
  /**
   * After close the slabs are deregistered (freed, for a UCX pool): a buffer
   * from a free list would be freed memory, so every allocation is refused.
   * A DataNode write answering upstream after its plugin stopped did this
   * and crashed the JVM.
   */
  @Test
  void allocationsAfterCloseAreRefused() throws Exception {
    BufferPool pool = new BufferPool(SlabAllocator.DIRECT, 1 << 16, 1 << 20);
    pool.allocate(5000).release(); // a slab is carved; its chunks sit on the free list
    assertEquals(1 << 16, pool.bytesRegistered());
    pool.close();
    assertEquals(0, pool.bytesRegistered());
    assertThrows(TransportException.Closed.class, () -> pool.allocate(5000));
    assertThrows(TransportException.Closed.class, () -> pool.allocate(1 << 18)); // a slab of its own
    assertEquals(0, pool.buffersOutstanding());
  }
}
