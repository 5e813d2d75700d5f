package org.hdfsrdma.transport;

import java.nio.ByteBuffer;

/** A large block of direct memory, registered once, that a pool carves buffers from. */
public interface Slab extends AutoCloseable {
  ByteBuffer buffer();

  long address();

  /** Native registration handle, 0 when the memory is not registered. */
  long memoryHandle();

  /** Packed remote key for one-sided access, or null when not registered. */
  byte[] packedRkey() throws TransportException;

  /** Deregisters and frees the memory. Idempotent. */
  @Override
  void close();
}
