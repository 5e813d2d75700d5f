package org.hdfsrdma.datanode.disk;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ReadableByteChannel;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.Jni;
import org.hdfsrdma.nativelib.NativeDisk;
import org.hdfsrdma.nativelib.NativeException;

/**
 * A block file read sequentially with O_DIRECT through io_uring, with the
 * device kept busy: the read-ahead window is a circular buffer, and as long
 * as it has room, requests of the policy's current size are kept in flight
 * ahead of the reader, up to the policy's current depth. Each request is one
 * request of the volume's scheduler (stream {@code streamKey}), so the depth
 * the policy sets is the depth the device sees and every completion feeds
 * the policy's measurements; it runs on an I/O worker with that worker's
 * ring. When the reader has copied a request's bytes out, its part of the
 * window is read again further on, at once: the reads of what comes next
 * overlap the reader's work (packets being built and sent). A request that
 * completes also issues the next one from its I/O worker when the window has
 * room, so the depth holds while the reader is away (waiting for the
 * transport to take its packets); that refill never waits for room in the
 * scheduler's queue. Never past {@code limit} (rounded up to the alignment).
 * The page cache is bypassed.
 *
 * <p>To keep {@code depth} requests in flight while the reader holds the
 * request it copies from, the window needs {@code (depth + 1) x requestBytes};
 * in a smaller window the requests are made smaller (window / (depth + 1),
 * aligned), so the depth holds (the adaptive policy raises depth and size
 * together, beyond any window the size alone would fit).
 *
 * <p>One reader thread; the I/O workers' refills share the request
 * bookkeeping with it under this object's lock, which is never held while
 * waiting (for the disk, for room in the queue, or for the reader's copy:
 * the bytes the reader copies are below {@code pos}'s request, which no
 * refill touches). Closing waits for the requests in flight (the ring writes
 * into the window until they are reaped), then closes the O_DIRECT file and
 * the wrapped channel and gives the window back.
 */
final class DirectReadChannel implements ReadableByteChannel {
  /** One request: [offset, offset + length) of the file, at windowOffset in the window. */
  private static final class Req {
    final long offset;
    final int length;
    final int windowOffset;
    final CompletableFuture<Integer> done = new CompletableFuture<>(); // the bytes read
    volatile CompletableFuture<Integer> counted; // the scheduler's: done and counted by the scheduler
    int valid = -1; // bytes read, once awaited (the reader's)

    Req(long offset, int length, int windowOffset) {
      this.offset = offset;
      this.length = length;
      this.windowOffset = windowOffset;
    }
  }

  private final NativeDisk.File file;
  private final ReadableByteChannel wrapped;
  private final Supplier<NativeDisk.Ring> ring;
  private final VolumeScheduler sched;
  private final Object streamKey;
  private final int align;
  private final long end; // limit rounded up to the alignment: no request goes past it
  private final long limit;
  private final Consumer<ByteBuffer> giveBack;
  private final ByteBuffer window;
  private final ByteBuffer view; // a duplicate of the window the copies go through
  private final long windowAddr;
  private final int windowBytes;
  private final long base;       // the aligned offset the window's byte 0 maps to (mod windowBytes)
  // guarded by this
  private final ArrayDeque<Req> pending = new ArrayDeque<>(); // issued, in file order
  private long issuedTo;         // requests are issued up to here
  private long eofAt = Long.MAX_VALUE;
  private long pos;
  private IOException failure;   // a request failed: every later read fails
  private boolean open = true;

  /**
   * @param file     the block file opened with {@link NativeDisk#DIRECT}
   * @param wrapped  the dataset's channel on the same file (closed with this one)
   * @param start    the block offset of the first byte to read
   * @param limit    the block offset after the last byte the reader will want (no read-ahead past it)
   * @param window   the read-ahead buffer, aligned; handed to {@code giveBack} at close
   */
  DirectReadChannel(NativeDisk.File file, ReadableByteChannel wrapped, long start, long limit, ByteBuffer window,
      Consumer<ByteBuffer> giveBack, Supplier<NativeDisk.Ring> ring, VolumeScheduler sched, Object streamKey)
      throws NativeException {
    this.file = file;
    this.wrapped = wrapped;
    this.ring = ring;
    this.sched = sched;
    this.streamKey = streamKey;
    this.align = file.directAlignment();
    int w = window.capacity() - window.capacity() % align;
    this.windowAddr = Jni.bufferAddress0(window);
    if (w < align || windowAddr % align != 0) {
      throw new NativeException("read-ahead window of " + window.capacity() + " bytes not aligned to " + align,
          NativeException.ERR_INVALID);
    }
    this.windowBytes = w;
    this.limit = limit;
    this.end = limit + (align - limit % align) % align;
    this.giveBack = giveBack;
    this.window = window;
    this.view = window.duplicate();
    this.pos = start;
    this.base = start - start % align;
    this.issuedTo = base;
  }

  @Override
  public int read(ByteBuffer dst) throws IOException {
    Req head;
    synchronized (this) {
      if (!open) {
        throw new ClosedChannelException();
      }
      if (failure != null) {
        throw failure;
      }
      if (pos >= limit || pos >= eofAt) {
        return -1;
      }
      if (!dst.hasRemaining()) {
        return 0;
      }
    }
    topUp();
    synchronized (this) {
      head = pending.peekFirst();
    }
    if (head == null) {
      return -1;
    }
    if (head.valid < 0) {
      int valid;
      try {
        valid = sched.await(head.done);
      } catch (IOException e) {
        synchronized (this) {
          failure = e;
        }
        throw e;
      }
      head.valid = valid;
      if (valid < head.length) {
        synchronized (this) {
          eofAt = Math.min(eofAt, head.offset + valid); // a short read is the end of the file
        }
      }
      topUp(); // its slot on the device is free: the next request goes now, before the copy
    }
    long at;
    synchronized (this) {
      at = pos;
      if (at >= Math.min(Math.min(limit, eofAt), head.offset + head.valid)) {
        return -1;
      }
    }
    long stop = Math.min(limit, head.offset + head.valid); // eofAt is at or past it
    int off = head.windowOffset + (int) (at - head.offset);
    int n = (int) Math.min(dst.remaining(), stop - at);
    view.limit(off + n).position(off);
    dst.put(view); // below pos's request: no refill reads into it
    boolean freed;
    synchronized (this) {
      pos = at + n;
      freed = pos >= head.offset + head.length;
      if (freed) {
        pending.pollFirst(); // its part of the window is free: read further on into it
      }
    }
    if (freed) {
      topUp();
    }
    return n;
  }

  /**
   * The reader: issues requests while the window has room and fewer than the policy's depth
   * are in flight; may wait for room in the scheduler's queue (never holding this lock).
   */
  private void topUp() throws IOException {
    Req r;
    while ((r = reserve()) != null) {
      try {
        r.counted = sched.submit(streamKey, false, r.offset, r.length, io(r));
      } catch (IOException | RuntimeException e) {
        r.done.completeExceptionally(e);
        throw e;
      }
      failWith(r);
    }
  }

  /**
   * An I/O worker, after a request completed: issues what {@link #topUp} would, without
   * waiting; where the queue is full the reader's next top-up issues it instead.
   */
  private void refill() {
    synchronized (this) {
      Req r;
      while ((r = reserve()) != null) {
        boolean queued = false;
        try {
          r.counted = sched.trySubmit(streamKey, false, r.offset, r.length, io(r));
          queued = r.counted != null;
          if (queued) {
            failWith(r);
          }
        } catch (IOException | RuntimeException e) {
          // closed: the reader meets it on its next submit
        }
        if (!queued) {
          pending.pollLast(); // r, just added: nothing of it was issued
          issuedTo -= r.length;
          return;
        }
      }
    }
  }

  /**
   * The next request, added to {@code pending} and the window accounted for it, if the
   * policy's depth and the window allow one now; else null.
   */
  private synchronized Req reserve() {
    if (!open || failure != null) {
      return null;
    }
    int depth = Math.max(1, sched.policy().depth());
    int inFlight = 0;
    for (Req r : pending) {
      if (!r.done.isDone()) {
        inFlight++;
      }
    }
    if (inFlight >= depth || issuedTo >= end || issuedTo >= eofAt) {
      return null;
    }
    // depth requests ahead plus the one being copied out must fit the window: where the
    // policy's size would not let them, the requests get smaller, not fewer
    int requestBytes = (int) Math.min(sched.requestBytes(), windowBytes / (depth + 1L));
    int chunk = Math.max(align, requestBytes - requestBytes % align);
    long consumed = pos - pos % align; // the window below this is free again
    int at = (int) Math.floorMod(issuedTo - base, (long) windowBytes);
    long len = Math.min(Math.min(chunk, windowBytes - at), end - issuedTo);
    if (issuedTo + len > consumed + windowBytes) {
      return null; // the window is full: the reader has not copied out what is there yet
    }
    Req r = new Req(issuedTo, (int) len, at);
    pending.addLast(r);
    issuedTo += len;
    return r;
  }

  /**
   * A request the scheduler fails without running it (closed with the request still queued)
   * fails {@code r.done} too, which only the request's own action completes otherwise.
   */
  private static void failWith(Req r) {
    r.counted.whenComplete((v, t) -> {
      if (t != null) {
        r.done.completeExceptionally(t instanceof java.util.concurrent.CompletionException c && c.getCause() != null
            ? c.getCause() : t);
      }
    });
  }

  /** The disk request of {@code r}: reads into its part of the window, then refills. */
  private VolumeScheduler.IoAction<Integer> io(Req r) {
    long addr = windowAddr + r.windowOffset;
    return () -> {
      int n;
      try {
        n = readOne(addr, r.length, r.offset);
      } catch (IOException | RuntimeException | Error e) {
        r.done.completeExceptionally(e);
        throw e;
      }
      r.done.complete(n);
      refill();
      return n;
    };
  }

  /** One O_DIRECT read on the calling I/O worker's ring; the bytes read (short at the end of the file). */
  private int readOne(long addr, int length, long offset) throws IOException {
    NativeDisk.Ring r = ring.get();
    long[] cookie = new long[1];
    long[] result = new long[1];
    r.read(file, addr, length, offset, 0);
    while (r.reap(cookie, result, 1) == 0) {
      // reap waits for one; 0 only when interrupted
    }
    if (result[0] < 0) {
      throw new NativeException("O_DIRECT read of " + file + " at " + offset + ": "
          + HrdmaNative.statusString((int) result[0]), (int) result[0]);
    }
    sched.stats().direct(1, result[0]);
    return (int) result[0];
  }

  /** Requests issued and not yet copied out by the reader (the one it copies from included), for tests. */
  synchronized int pendingRequests() {
    return pending.size();
  }

  @Override
  public synchronized boolean isOpen() {
    return open;
  }

  @Override
  public void close() throws IOException {
    java.util.List<Req> issued;
    synchronized (this) {
      if (!open) {
        return;
      }
      open = false; // no refill issues anything from now on
      issued = new java.util.ArrayList<>(pending);
      pending.clear();
    }
    try {
      for (Req r : issued) {
        // the ring writes into the window until done; the scheduler counts it just after. Not
        // interruptible: a window given back while a read still lands in it would corrupt the
        // next reader's bytes
        CompletableFuture<Integer> f = r.counted != null ? r.counted : r.done;
        f.handle((v, t) -> null).join();
      }
      giveBack.accept(window);
      file.close();
    } finally {
      wrapped.close();
    }
  }
}
