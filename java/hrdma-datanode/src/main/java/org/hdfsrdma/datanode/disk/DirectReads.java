package org.hdfsrdma.datanode.disk;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Supplier;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeDisk;
import org.hdfsrdma.nativelib.NativeException;

/**
 * A block file read sequentially with O_DIRECT through io_uring, with the
 * device kept busy: as long as the subclass has room for them, requests of
 * the policy's current size are kept in flight ahead of the reader, up to
 * the policy's current depth. Each request is one request of the volume's
 * scheduler (stream {@code streamKey}), so the depth the policy sets is the
 * depth the device sees and every completion feeds the policy's
 * measurements; it runs on an I/O worker with that worker's ring. A request
 * that completes also issues the next one from its I/O worker when there is
 * room, so the depth holds while the reader is away (waiting for the
 * transport to take its packets); that refill never waits for room in the
 * scheduler's queue. Never past {@code limit} (rounded up to the alignment).
 * The page cache is bypassed.
 *
 * <p>Where the bytes land is the subclass's: a circular read-ahead window
 * the reader copies out of ({@link DirectReadChannel}), or the registered
 * packets that go to the transport as they are ({@link DirectPacketReader}).
 * A request reads into one or more segments (aligned addresses and lengths),
 * contiguous in the file, all submitted to the worker's ring at once.
 *
 * <p>One reader thread; the I/O workers' refills share the request
 * bookkeeping with it under this object's lock, which is never held while
 * waiting (for the disk, or for room in the queue). Closing waits for the
 * requests in flight (the ring writes into their memory until they are
 * reaped), hands what the reader did not take back to the subclass, then
 * closes the O_DIRECT file.
 */
abstract class DirectReads implements AutoCloseable {
  /** Segments one request may have: the most reads a worker's ring holds. */
  static final int MAX_SEGMENTS = 16;

  /** One request: [offset, offset + length) of the file, read into its segments in order. */
  static class Req {
    final long offset;
    final int length;
    final long[] addrs;
    final int[] lens;
    final CompletableFuture<Integer> done = new CompletableFuture<>(); // the bytes read
    volatile CompletableFuture<Integer> counted; // the scheduler's: done and counted by the scheduler
    int valid = -1; // bytes read, once awaited (the reader's)

    Req(long offset, long[] addrs, int[] lens) {
      if (addrs.length != lens.length || addrs.length < 1 || addrs.length > MAX_SEGMENTS) {
        throw new IllegalArgumentException("a request has 1.." + MAX_SEGMENTS + " segments, not " + addrs.length);
      }
      long n = 0;
      for (int l : lens) {
        n += l;
      }
      this.offset = offset;
      this.length = (int) n;
      this.addrs = addrs;
      this.lens = lens;
    }
  }

  final NativeDisk.File file;
  private final Supplier<NativeDisk.Ring> ring;
  final VolumeScheduler sched;
  private final Object streamKey;
  final int align;
  final long limit;
  final long end; // limit rounded up to the alignment: no request goes past it
  // guarded by this
  final ArrayDeque<Req> pending = new ArrayDeque<>(); // issued, in file order
  long issuedTo;         // requests are issued up to here
  long eofAt = Long.MAX_VALUE;
  IOException failure;   // a request failed: every later read fails
  boolean open = true;
  private Runnable allIssued; // told once every request is issued

  /**
   * @param file  the block file opened with {@link NativeDisk#DIRECT}
   * @param first the aligned block offset of the first request
   * @param limit the block offset after the last byte the reader will want (no read-ahead past it)
   */
  DirectReads(NativeDisk.File file, long first, long limit, Supplier<NativeDisk.Ring> ring, VolumeScheduler sched,
      Object streamKey) throws NativeException {
    this.file = file;
    this.ring = ring;
    this.sched = sched;
    this.streamKey = streamKey;
    this.align = file.directAlignment();
    if (align < 1 || first % align != 0) {
      throw new NativeException("direct reads of " + file + " from offset " + first + " with alignment " + align,
          NativeException.ERR_INVALID);
    }
    this.limit = limit;
    this.end = limit + (align - limit % align) % align;
    this.issuedTo = first;
  }

  /**
   * The next request at {@code issuedTo} for a policy of {@code depth} requests of
   * {@code requestBytes}, with the memory it reads into, if there is room for it now;
   * else null. Called under this object's lock; never waits. The caller adds it to
   * {@code pending} and moves {@code issuedTo} past it.
   */
  abstract Req place(int depth, int requestBytes) throws IOException;

  /** At close: {@code r}'s read is over (or never ran) and the reader will not take its memory. */
  void discard(Req r) {
    // nothing by default
  }

  /** At close, after every request is over: gives back what the reader's side held (nothing by default). */
  void closed() throws IOException {
    // nothing by default
  }

  /**
   * The oldest request not yet consumed, once its read has completed (its
   * {@code valid} set), or null when none is left to issue. Issues the next
   * requests before and after waiting.
   */
  final Req head() throws IOException {
    synchronized (this) {
      if (!open) {
        throw new java.nio.channels.ClosedChannelException();
      }
      if (failure != null) {
        throw failure;
      }
    }
    topUp();
    Req head;
    synchronized (this) {
      head = pending.peekFirst();
    }
    if (head == null || head.valid >= 0) {
      return head;
    }
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
    topUp(); // its slot on the device is free: the next request goes now, before the reader's work
    return head;
  }

  /**
   * The reader is done with the head request: its memory may be read into again (or is the
   * reader's). Issues the next requests; a failure to do so is not the caller's (it has its
   * bytes): the reader meets it at its next {@link #head}, which tries again.
   */
  final void consumed(Req head) {
    synchronized (this) {
      if (pending.peekFirst() == head) {
        pending.pollFirst();
      }
    }
    try {
      topUp();
    } catch (IOException | RuntimeException e) {
      // a request that failed to go is in pending, failed: the next head() throws its error;
      // no memory for packets: the next head() tries again
    }
  }

  /**
   * The reader: issues requests while there is room and fewer than the policy's depth
   * are in flight; may wait for room in the scheduler's queue (never holding this lock).
   */
  final void topUp() throws IOException {
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
    announceAllIssued();
  }

  /**
   * {@code r} runs once, on the thread that issues the last request (the reader's or an I/O
   * worker's, holding no lock of this object), when every request is issued; at once if that
   * has happened already.
   */
  public final void whenAllIssued(Runnable r) {
    synchronized (this) {
      allIssued = r;
    }
    announceAllIssued();
  }

  private void announceAllIssued() {
    Runnable r;
    synchronized (this) {
      if (allIssued == null || !open || !issuedAll()) {
        return;
      }
      r = allIssued;
      allIssued = null;
    }
    r.run();
  }

  /**
   * An I/O worker, after a request completed: issues what {@link #topUp} would, without
   * waiting; where the queue is full the reader's next top-up issues it instead.
   */
  private void refill() {
    issueWithoutWaiting();
    announceAllIssued();
  }

  private synchronized void issueWithoutWaiting() {
    Req r;
    while (true) {
      try {
        r = reserve();
      } catch (IOException | RuntimeException e) {
        return; // no memory for it now: the reader's next top-up meets the error
      }
      if (r == null) {
        return;
      }
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
        discard(r);
        return;
      }
    }
  }

  /**
   * The next request, added to {@code pending}, if the policy's depth and the subclass's
   * room allow one now; else null.
   */
  private synchronized Req reserve() throws IOException {
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
    Req r = place(depth, sched.requestBytes());
    if (r == null) {
      return null;
    }
    pending.addLast(r);
    issuedTo += r.length;
    return r;
  }

  /**
   * A request the scheduler fails without running it (closed with the request still queued)
   * fails {@code r.done} too, which only the request's own action completes otherwise.
   */
  private static void failWith(Req r) {
    r.counted.whenComplete((v, t) -> {
      if (t != null) {
        r.done.completeExceptionally(t instanceof CompletionException c && c.getCause() != null ? c.getCause() : t);
      }
    });
  }

  /** The disk request of {@code r}: reads into its segments, then refills. */
  private VolumeScheduler.IoAction<Integer> io(Req r) {
    return () -> {
      int n;
      try {
        n = readAll(r);
      } catch (IOException | RuntimeException | Error e) {
        r.done.completeExceptionally(e);
        throw e;
      }
      r.done.complete(n);
      refill();
      return n;
    };
  }

  /**
   * The O_DIRECT reads of {@code r}'s segments, all on the calling I/O worker's ring at
   * once; the bytes read, up to the first short segment (the end of the file). Every read
   * submitted is reaped before this returns, failed or not: the ring writes into the
   * segments until then.
   */
  private int readAll(Req r) throws IOException {
    NativeDisk.Ring ring = this.ring.get();
    int segs = r.addrs.length;
    long[] got = new long[segs];
    long[] cookies = new long[segs];
    long[] results = new long[segs];
    int submitted = 0;
    NativeException submitError = null;
    long at = r.offset;
    for (int i = 0; i < segs; i++) {
      try {
        ring.read(file, r.addrs[i], r.lens[i], at, i);
      } catch (NativeException e) {
        submitError = e;
        break;
      }
      submitted++;
      at += r.lens[i];
    }
    int reaped = 0;
    while (reaped < submitted) {
      int n = ring.reap(cookies, results, 1); // waits for one; 0 only when interrupted
      for (int i = 0; i < n; i++) {
        got[(int) cookies[i]] = results[i];
      }
      reaped += n;
    }
    if (submitError != null) {
      throw submitError;
    }
    long total = 0;
    for (int i = 0; i < segs; i++) {
      if (got[i] < 0) {
        throw new NativeException("O_DIRECT read of " + file + " at " + (r.offset + total) + ": "
            + HrdmaNative.statusString((int) got[i]), (int) got[i]);
      }
    }
    for (int i = 0; i < segs; i++) {
      total += got[i];
      if (got[i] < r.lens[i]) {
        break;
      }
    }
    sched.stats().direct(1, total, this instanceof DirectPacketReader);
    return (int) total;
  }

  /**
   * Issues the first requests now, before the reader asks (a read prepared ahead of its
   * turn), as an I/O worker's refill does: never waiting for room in the scheduler's queue
   * and keeping no error (no memory for packets, a full queue): the reader's first
   * {@link #head} issues what did not go, and meets any error then.
   */
  public final void prefetch() {
    refill();
  }

  /** Every request up to the limit (or the end of the file) is issued: nothing more goes to the disk. */
  private synchronized boolean issuedAll() {
    return issuedTo >= end || issuedTo >= eofAt;
  }

  /** Requests issued and not yet consumed by the reader (the one it works on included), for tests. */
  synchronized int pendingRequests() {
    return pending.size();
  }

  public synchronized boolean isOpen() {
    return open;
  }

  @Override
  public void close() throws IOException {
    List<Req> issued;
    synchronized (this) {
      if (!open) {
        return;
      }
      open = false; // no refill issues anything from now on
      issued = new ArrayList<>(pending);
      pending.clear();
    }
    RuntimeException discardFailure = null;
    try {
      for (Req r : issued) {
        // the ring writes into the request's memory until done; the scheduler counts it just
        // after. Not interruptible: memory given back while a read still lands in it would
        // corrupt whoever has it next
        CompletableFuture<Integer> f = r.counted != null ? r.counted : r.done;
        f.handle((v, t) -> null).join();
        try {
          discard(r);
        } catch (RuntimeException e) {
          discardFailure = e; // the others are still waited for and given back
        }
      }
    } finally {
      try {
        file.close();
      } finally {
        closed();
      }
    }
    if (discardFailure != null) {
      throw discardFailure;
    }
  }
}
