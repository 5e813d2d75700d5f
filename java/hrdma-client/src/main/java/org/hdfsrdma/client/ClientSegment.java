package org.hdfsrdma.client;

import java.net.ProtocolException;
import java.nio.ByteBuffer;
import java.util.function.LongConsumer;
import org.hdfsrdma.nativelib.NativeShm;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.transport.RegisteredBuffer;

/**
 * The client's read-only mapping of a connection's shared-memory segment
 * (same-host reads by reference): a DATA_REF names a packet message in it,
 * which the reader reads in place, through a {@link #view} that, once
 * released, gives the packet's slot back to the DataNode (SHM_RELEASE).
 *
 * <p>Reference counted: the connection holds one reference until it closes,
 * every view one until its release; the mapping goes with the last, so no
 * packet a reader still holds is ever unmapped under it. Thread-safe.
 */
final class ClientSegment {
  private final NativeShm.Segment mem;
  private int refs = 1;     // guarded by this: the connection's, and one per view
  private boolean closed;   // guarded by this: the connection's reference is gone

  ClientSegment(NativeShm.Segment mem) {
    this.mem = mem;
  }

  /**
   * The message at {@code [offset, offset + length)}; its last release runs
   * {@code release} with the offset (which tells the DataNode).
   *
   * @throws ProtocolException the range is not inside the segment, or the connection has closed
   */
  RegisteredBuffer view(long offset, int length, LongConsumer release) throws ProtocolException {
    if (offset < 0 || length < MessageCodec.FIXED_BYTES || offset > mem.bytes() - length) {
      throw new ProtocolException("DATA_REF of " + length + " bytes at offset " + offset
          + " is not inside the shared-memory segment of " + mem.bytes() + " bytes");
    }
    synchronized (this) {
      if (closed) {
        throw new ProtocolException("DATA_REF after the connection's segment closed");
      }
      refs++;
    }
    ByteBuffer b = mem.buffer().slice((int) offset, length);
    return new View(b, mem.address() + offset, offset, release);
  }

  /** The connection's reference: the mapping goes now, or with the last view. Idempotent. */
  void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    unref();
  }

  private void unref() {
    synchronized (this) {
      if (--refs > 0) {
        return;
      }
    }
    mem.close();
  }

  /** A packet message in the segment. */
  private final class View extends RegisteredBuffer {
    private final long offset;
    private final LongConsumer release;

    View(ByteBuffer nio, long address, long offset, LongConsumer release) {
      super(nio, address);
      this.offset = offset;
      this.release = release;
    }

    @Override
    public long memoryHandle() {
      return 0;
    }

    @Override
    protected void recycle() {
      try {
        release.accept(offset);
      } finally {
        unref();
      }
    }
  }
}
