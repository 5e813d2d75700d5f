package org.hdfsrdma.protocol;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import org.hdfsrdma.transport.BufferAllocator;
import org.hdfsrdma.transport.RegisteredBuffer;

/**
 * A mapped shared-memory segment cut into slots of {@code slotBytes}, each holding one message:
 * what the same-host segments of reads (the DataNode's) and writes (the sender's) have in
 * common. A slot is handed out as a {@link RegisteredBuffer} ({@link #takeSlot}); its last
 * release gives it back. Once {@link #markClosed closed} no slot is handed out again, and the
 * memory is unmapped when the last slot is back (never under a message being written or read).
 * Subclasses say when slots may be handed out ({@link #usable}) and what a slot's message is
 * for. Thread-safe; the subclasses' own state is guarded by the same monitor (this).
 */
public abstract class SlottedSegment implements BufferAllocator {
  protected final int slotBytes;
  private final ByteBuffer memory;
  private final long address;
  private final Runnable unmap;
  private final Runnable unmapped;
  private final ArrayDeque<Integer> free = new ArrayDeque<>(); // guarded by this
  private int held;             // guarded by this: slots handed out
  private boolean closed;       // guarded by this
  private boolean unmappedYet;  // guarded by this

  /**
   * @param memory the mapping (position 0, capacity at least {@code bytes})
   * @param address its address
   * @param unmap unmaps it (run once, when closed and every slot is back)
   * @param unmapped run once, after the unmap
   */
  protected SlottedSegment(ByteBuffer memory, long address, long bytes, int slotBytes, Runnable unmap,
      Runnable unmapped) {
    this.memory = memory;
    this.address = address;
    this.slotBytes = slotBytes;
    this.unmap = unmap;
    this.unmapped = unmapped;
    for (int i = 0; i < bytes / slotBytes; i++) {
      free.add(i);
    }
  }

  /** Whether slots may be handed out now (besides not being closed); called under this monitor. */
  protected boolean usable() {
    return true;
  }

  /**
   * A free slot for a message of {@code size} bytes (position 0, limit {@code size}), or null
   * when the segment is closed or not usable, none is free, or the message does not fit one.
   */
  protected final Slot takeSlot(int size) {
    int index;
    synchronized (this) {
      if (closed || !usable() || size > slotBytes || free.isEmpty()) {
        return null;
      }
      index = free.poll();
      held++;
    }
    ByteBuffer b = memory.slice(index * slotBytes, slotBytes);
    b.limit(size);
    return new Slot(b, address + (long) index * slotBytes, index);
  }

  /** Slots handed out now. */
  public final synchronized int slotsHeld() {
    return held;
  }

  public final synchronized boolean isClosed() {
    return closed;
  }

  /** Marks the segment closed (call under this monitor with the subclass's own closing); false if it was. */
  protected final synchronized boolean markClosed() {
    if (closed) {
      return false;
    }
    closed = true;
    return true;
  }

  /** Unmaps once closed with every slot back; at most once. */
  protected final void unmapIfIdle() {
    synchronized (this) {
      if (!closed || held > 0 || unmappedYet) {
        return;
      }
      unmappedYet = true;
    }
    unmap.run();
    unmapped.run();
  }

  /** One slot handed out; its last release gives it back. */
  protected final class Slot extends RegisteredBuffer {
    private final int index;

    Slot(ByteBuffer nio, long address, int index) {
      super(nio, address);
      this.index = index;
    }

    public SlottedSegment owner() {
      return SlottedSegment.this;
    }

    /** The slot's offset in the segment. */
    public long offset() {
      return (long) index * slotBytes;
    }

    @Override
    public long memoryHandle() {
      return 0;
    }

    @Override
    protected void recycle() {
      synchronized (SlottedSegment.this) {
        free.add(index);
        held--;
      }
      unmapIfIdle();
    }
  }
}
