package org.hdfsrdma.transport;

/** Hands out {@link RegisteredBuffer}s. Thread-safe. */
public interface BufferAllocator {
  /**
   * A buffer of at least {@code size} bytes, position 0 and limit {@code size}.
   *
   * @throws TransportException when the pool's registered-memory limit is reached
   */
  RegisteredBuffer allocate(int size) throws TransportException;

  /**
   * The registered memory a buffer of {@code size} bytes takes: its size class in a pool
   * (callers size what they ask for to fill it, not to spill into the next class).
   */
  default long footprint(int size) {
    return size;
  }

  /** Bytes of memory currently registered (held in slabs). */
  long bytesRegistered();

  /** Buffers handed out and not yet released. */
  long buffersOutstanding();
}
