package org.hdfsrdma.transport;

import java.nio.ByteBuffer;

/** Slabs of page-aligned direct memory with no registration (tcp, tests). */
final class DirectSlabAllocator implements SlabAllocator {
  private static final int PAGE = 4096;

  @Override
  public Slab allocate(int size) {
    ByteBuffer raw = ByteBuffer.allocateDirect(size + PAGE);
    ByteBuffer aligned = raw.alignedSlice(PAGE);
    ByteBuffer slab = aligned.slice(0, size);
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
