package org.hdfsrdma.transport.ucx;

import java.nio.ByteBuffer;
import org.hdfsrdma.nativelib.Jni;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.transport.Slab;
import org.hdfsrdma.transport.SlabAllocator;
import org.hdfsrdma.transport.TransportException;

/** Slabs allocated and registered by libhrdma (ucp_mem_map). Thread-safe. */
final class UcxSlabAllocator implements SlabAllocator {
  private final long ctx;

  UcxSlabAllocator(long ctx) {
    this.ctx = ctx;
  }

  @Override
  public Slab allocate(int size) throws TransportException {
    long mem;
    try {
      mem = Jni.memMap0(ctx, size);
    } catch (NativeException e) {
      throw new TransportException("register " + size + " bytes: " + e.getMessage(),
          e.status(), e);
    }
    return new UcxSlab(mem);
  }

  private static final class UcxSlab implements Slab {
    private final long mem;
    private final ByteBuffer buffer;
    private final long address;
    private byte[] rkey;
    private boolean closed;

    UcxSlab(long mem) {
      this.mem = mem;
      this.buffer = Jni.memBuffer0(mem);
      this.address = Jni.memAddress0(mem);
    }

    @Override
    public ByteBuffer buffer() {
      return buffer;
    }

    @Override
    public long address() {
      return address;
    }

    @Override
    public long memoryHandle() {
      return mem;
    }

    @Override
    public synchronized byte[] packedRkey() throws TransportException {
      if (rkey == null) {
        try {
          rkey = Jni.memPackRkey0(mem);
        } catch (NativeException e) {
          throw new TransportException("pack remote key: " + e.getMessage(), e.status(), e);
        }
      }
      return rkey;
    }

    @Override
    public synchronized void close() {
      if (!closed) {
        closed = true;
        Jni.memUnmap0(mem);
      }
    }
  }
}
