package org.hdfsrdma.transport;

/** Source of slabs: registered with a fabric, or plain direct memory. Thread-safe. */
public interface SlabAllocator {
  /** A page-aligned slab of at least {@code size} bytes. */
  Slab allocate(int size) throws TransportException;

  /** Plain page-aligned direct memory, not registered anywhere. */
  SlabAllocator DIRECT = new DirectSlabAllocator();
}
