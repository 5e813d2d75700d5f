package org.hdfsrdma.transport;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * Direct memory a transport can send from and receive into, registered with
 * the fabric where the transport has one. Reference counted with the rules of
 * Netty's {@code ReferenceCounted} (but none of its classes, so that a client on
 * ucx loads no Netty): a new buffer holds one reference; whoever holds a
 * reference releases it once; the last release returns the memory to its
 * owner; {@link #retain} or {@link #release} past the last release throws
 * {@link IllegalReferenceCountException}. The count is thread-safe.
 *
 * <p>The message or data is {@link #nio()} from position to limit. The
 * {@code ByteBuffer} is the buffer's own view: not thread-safe, and not to be
 * used after the last release.
 */
public abstract class RegisteredBuffer {
  /** The alignment {@link #placeAligned} asks for: a page, what O_DIRECT needs (the native core's). */
  public static final int PLACE_PAGE = org.hdfsrdma.nativelib.Jni.PLACE_PAGE;
  private static final AtomicIntegerFieldUpdater<RegisteredBuffer> REF_CNT =
      AtomicIntegerFieldUpdater.newUpdater(RegisteredBuffer.class, "refCnt");
  private volatile int refCnt = 1;
  private final ByteBuffer nio;
  private final long address;
  private volatile Runnable releaseHook;
  private int placeAt = -1;

  protected RegisteredBuffer(ByteBuffer nio, long address) {
    if (!nio.isDirect()) {
      throw new IllegalArgumentException("registered buffers are direct");
    }
    this.nio = nio;
    this.address = address;
  }

  /** The buffer's memory, index 0 at {@link #address()}. */
  public final ByteBuffer nio() {
    return nio;
  }

  /** Native address of index 0. */
  public final long address() {
    return address;
  }

  public final int capacity() {
    return nio.capacity();
  }

  /** Bytes between position and limit. */
  public final int readableBytes() {
    return nio.remaining();
  }

  /** Native handle of the registered region holding this buffer, 0 if none. */
  public abstract long memoryHandle();

  /** The slab holding this buffer, or null when it is not part of one. */
  public Slab slab() {
    return null;
  }

  /**
   * Asks that byte {@code offset} of the message (counted from the position when it is sent)
   * land at a page-aligned (4096) address at the receiver, so that the receiver can hand that
   * part to O_DIRECT without copying it; -1 for no preference. A hint: transports and peers
   * that cannot place a message (sealed connections, peers of older versions) ignore it, and
   * the delivered buffer's position is where the message starts either way. Set it before
   * {@link Endpoint#send}; it is cleared when the buffer goes back to its owner.
   */
  public final void placeAligned(int offset) {
    this.placeAt = Math.max(-1, offset);
  }

  /** The hint of {@link #placeAligned}, or -1. */
  public final int placeAligned() {
    return placeAt;
  }

  /**
   * Runs {@code hook} after the last release (transports return credits this
   * way). One hook per buffer.
   */
  public final void onRelease(Runnable hook) {
    this.releaseHook = hook;
  }

  /** References held now; 0 once the last was released. */
  public final int refCnt() {
    return refCnt;
  }

  /** Adds a reference. */
  public final RegisteredBuffer retain() {
    return retain(1);
  }

  /** Adds {@code increment} references. */
  public final RegisteredBuffer retain(int increment) {
    if (increment <= 0) {
      throw new IllegalArgumentException("increment: " + increment + " (expected: > 0)");
    }
    for (;;) {
      int c = refCnt;
      if (c <= 0 || c + increment < c) { // released already, or the count would overflow
        throw new IllegalReferenceCountException(c, increment);
      }
      if (REF_CNT.compareAndSet(this, c, c + increment)) {
        return this;
      }
    }
  }

  /** Drops a reference; true when it was the last, the memory then back with its owner. */
  public final boolean release() {
    return release(1);
  }

  /** Drops {@code decrement} references; true when they were the last. */
  public final boolean release(int decrement) {
    if (decrement <= 0) {
      throw new IllegalArgumentException("decrement: " + decrement + " (expected: > 0)");
    }
    for (;;) {
      int c = refCnt;
      if (c < decrement) {
        throw new IllegalReferenceCountException(c, -decrement);
      }
      if (REF_CNT.compareAndSet(this, c, c - decrement)) {
        if (c == decrement) {
          deallocate();
          return true;
        }
        return false;
      }
    }
  }

  private void deallocate() {
    Runnable hook = releaseHook;
    releaseHook = null;
    placeAt = -1;
    recycle();
    if (hook != null) {
      hook.run();
    }
  }

  /** Gives the memory back to its owner. */
  protected abstract void recycle();

  @Override
  public String toString() {
    return getClass().getSimpleName() + "[pos=" + nio.position() + ", lim=" + nio.limit()
        + ", cap=" + nio.capacity() + ", refCnt=" + refCnt() + "]";
  }
}
