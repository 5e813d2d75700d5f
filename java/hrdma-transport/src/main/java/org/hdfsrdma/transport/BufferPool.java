package org.hdfsrdma.transport;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A pool of registered buffers carved out of large slabs that are registered
 * once. Sizes are rounded up to a power of two between {@link #MIN_CLASS}
 * and the slab size; each size class keeps its own free list and its own
 * slabs. Larger requests get a slab of their own, freed on release.
 *
 * <p>Thread-safe. Slabs stay registered until {@link #close()}; the
 * registered total never exceeds {@code maxRegistered}.
 */
public final class BufferPool implements BufferAllocator, AutoCloseable {
  public static final int MIN_CLASS = 4096;
  private static final int PAGE = 4096;

  private final SlabAllocator slabs;
  private final int slabSize;
  private final long maxRegistered;
  private final SizeClass[] classes;
  private final List<Slab> allSlabs = new ArrayList<>();
  private final AtomicLong registered = new AtomicLong();
  private final AtomicLong outstanding = new AtomicLong();
  /** Buffers of every pool in this process not released yet. */
  private static final AtomicLong PROCESS_OUTSTANDING = new AtomicLong();
  private volatile boolean closed;

  /**
   * @param slabSize bytes per slab, a power of two of at least {@link #MIN_CLASS}
   * @param maxRegistered upper bound on bytes registered by this pool
   */
  public BufferPool(SlabAllocator slabs, int slabSize, long maxRegistered) {
    if (slabSize < MIN_CLASS || Integer.bitCount(slabSize) != 1) {
      throw new IllegalArgumentException("slab size must be a power of two >= 4096: " + slabSize);
    }
    this.slabs = slabs;
    this.slabSize = slabSize;
    this.maxRegistered = maxRegistered;
    int n = Integer.numberOfTrailingZeros(slabSize) - Integer.numberOfTrailingZeros(MIN_CLASS) + 1;
    classes = new SizeClass[n];
    for (int i = 0; i < n; i++) {
      classes[i] = new SizeClass(MIN_CLASS << i);
    }
  }

  @Override
  public RegisteredBuffer allocate(int size) throws TransportException {
    if (size < 0) {
      throw new IllegalArgumentException("negative size " + size);
    }
    if (closed) {
      throw new TransportException.Closed("buffer pool closed");
    }
    RegisteredBuffer b;
    if (size > slabSize) {
      Slab own = reserveSlab(size);
      b = new Pooled(own.buffer().slice(0, size), own.address(), own, null);
    } else {
      int cls = classIndex(size);
      b = classes[cls].take(size);
    }
    outstanding.incrementAndGet();
    PROCESS_OUTSTANDING.incrementAndGet();
    return b;
  }

  /** The size class of {@code size}; past the slab size, the whole pages of a slab of its own. */
  @Override
  public long footprint(int size) {
    if (size > slabSize) {
      return ((long) size + PAGE - 1) & -PAGE;
    }
    return (long) MIN_CLASS << classIndex(Math.max(0, size));
  }

  private int classIndex(int size) {
    int rounded = size <= MIN_CLASS ? MIN_CLASS : Integer.highestOneBit(size - 1) << 1;
    return Integer.numberOfTrailingZeros(rounded) - Integer.numberOfTrailingZeros(MIN_CLASS);
  }

  private Slab reserveSlab(int requested) throws TransportException {
    // Slabs are whole pages (both allocators round up); count what is really held.
    int size = (int) Math.min(Integer.MAX_VALUE & -PAGE, ((long) requested + PAGE - 1) & -PAGE);
    long after = registered.addAndGet(size);
    if (after > maxRegistered) {
      registered.addAndGet(-size);
      throw new TransportException("registered memory limit reached: " + (after - size)
          + " of " + maxRegistered + " bytes in use, " + size + " more asked");
    }
    Slab s;
    try {
      s = slabs.allocate(size);
    } catch (TransportException | RuntimeException e) {
      registered.addAndGet(-size);
      throw e;
    }
    synchronized (this) {
      if (closed) {
        s.close();
        registered.addAndGet(-size);
        throw new TransportException.Closed("buffer pool closed");
      }
      allSlabs.add(s);
    }
    return s;
  }

  private synchronized void freeOwnSlab(Slab s) {
    if (allSlabs.remove(s)) {
      s.close();
      registered.addAndGet(-s.buffer().capacity());
    }
  }

  @Override
  public long bytesRegistered() {
    return registered.get();
  }

  @Override
  public long buffersOutstanding() {
    return outstanding.get();
  }

  /** Buffers of every pool of this process not released yet (a leak check for a whole suite). */
  public static long processBuffersOutstanding() {
    return PROCESS_OUTSTANDING.get();
  }

  /**
   * Deregisters every slab; later allocations fail with
   * {@link TransportException.Closed} (a thread of another component may
   * still try: a DataNode write answering upstream while its plugin stops).
   * Buffers still outstanding become invalid: callers check
   * {@link #buffersOutstanding()} first (tests assert it is zero).
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (SizeClass c : classes) {
      synchronized (c) { // a take() in progress finishes first; later ones see closed
        c.free.clear();
      }
    }
    for (Slab s : allSlabs) {
      s.close();
    }
    allSlabs.clear();
    registered.set(0);
  }

  private final class SizeClass {
    private final int size;
    private final ArrayDeque<long[]> free = new ArrayDeque<>(); // {slab index, offset}
    private final List<Slab> mine = new ArrayList<>();

    SizeClass(int size) {
      this.size = size;
    }

    RegisteredBuffer take(int requested) throws TransportException {
      long[] chunk;
      synchronized (this) {
        if (closed) { // its slabs are deregistered: a chunk of them is freed memory
          throw new TransportException.Closed("buffer pool closed");
        }
        chunk = free.pollFirst();
      }
      if (chunk == null) {
        Slab s = reserveSlab(slabSize);
        synchronized (this) {
          int idx = mine.size();
          mine.add(s);
          for (int off = size; off + size <= slabSize; off += size) {
            free.addLast(new long[] {idx, off});
          }
          chunk = new long[] {idx, 0};
        }
      }
      Slab s;
      synchronized (this) {
        s = mine.get((int) chunk[0]);
      }
      int off = (int) chunk[1];
      ByteBuffer view = s.buffer().slice(off, size);
      view.limit(requested);
      return new Pooled(view, s.address() + off, s, this::give, chunk);
    }

    private synchronized void give(long[] chunk) {
      free.addFirst(chunk);
    }
  }

  private interface Recycler {
    void give(long[] chunk);
  }

  private final class Pooled extends RegisteredBuffer {
    private final Slab slab;
    private final Recycler recycler;
    private final long[] chunk;

    Pooled(ByteBuffer nio, long address, Slab slab, Recycler recycler) {
      this(nio, address, slab, recycler, null);
    }

    Pooled(ByteBuffer nio, long address, Slab slab, Recycler recycler, long[] chunk) {
      super(nio, address);
      this.slab = slab;
      this.recycler = recycler;
      this.chunk = chunk;
    }

    @Override
    public long memoryHandle() {
      return slab.memoryHandle();
    }

    @Override
    public Slab slab() {
      return slab;
    }

    @Override
    protected void recycle() {
      outstanding.decrementAndGet();
      PROCESS_OUTSTANDING.decrementAndGet();
      if (recycler != null) {
        recycler.give(chunk);
      } else {
        freeOwnSlab(slab);
      }
    }
  }
}
