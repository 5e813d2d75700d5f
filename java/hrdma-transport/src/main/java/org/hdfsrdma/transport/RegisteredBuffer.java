package org.hdfsrdma.transport;

import io.netty.util.AbstractReferenceCounted;
import java.nio.ByteBuffer;

/**
 * Direct memory a transport can send from and receive into, registered with
 * the fabric where the transport has one. Reference counted with Netty's
 * {@link io.netty.util.ReferenceCounted} rules: whoever holds a reference
 * releases it once; the last release returns the memory to its owner.
 *
 * <p>The message or data is {@link #nio()} from position to limit. The
 * {@code ByteBuffer} is the buffer's own view: not thread-safe, and not to be
 * used after the last release.
 */
public abstract class RegisteredBuffer extends AbstractReferenceCounted {
  private final ByteBuffer nio;
  private final long address;
  private volatile Runnable releaseHook;

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
   * Runs {@code hook} after the last release (transports return credits this
   * way). One hook per buffer.
   */
  public final void onRelease(Runnable hook) {
    this.releaseHook = hook;
  }

  @Override
  protected final void deallocate() {
    Runnable hook = releaseHook;
    releaseHook = null;
    recycle();
    if (hook != null) {
      hook.run();
    }
  }

  /** Gives the memory back to its owner. */
  protected abstract void recycle();

  @Override
  public RegisteredBuffer touch(Object hint) {
    return this;
  }

  @Override
  public RegisteredBuffer retain() {
    super.retain();
    return this;
  }

  @Override
  public String toString() {
    return getClass().getSimpleName() + "[pos=" + nio.position() + ", lim=" + nio.limit()
        + ", cap=" + nio.capacity() + ", refCnt=" + refCnt() + "]";
  }
}
