package org.hdfsrdma.transport;

import java.nio.ByteBuffer;

/** Slabs of page-aligned direct memory with no registration (tcp, tests). */
final class DirectSlabAllocator implements SlabAllocator {
  private static final int PAGE = 4096;

  @Override
  public Slab allocate(int size) {
    int pages = (int) (((long) size + PAGE - 1) / PAGE);
    ByteBuffer raw = ByteBuffer.allocateDirect((pages + 1) * PAGE);
    ByteBuffer slab = raw.alignedSlice(PAGE).slice(0, pages * PAGE);
    long address = NioAddress.of(slab);
    return new Slab() {
      @Override
      public ByteBuffer buffer() {
        return slab;
      }

      @Override
      public long address() {
        return address;
      }

      @Override
      public long memoryHandle() {
        return 0;
      }

      @Override
      public byte[] packedRkey() {
        return null;
      }

      @Override
      public void close() {
        // garbage collected with the buffer
      }
    };
  }
}
