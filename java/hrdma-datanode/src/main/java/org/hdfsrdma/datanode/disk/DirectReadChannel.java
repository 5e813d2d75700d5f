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
 * overlap the reader's work (packets being built and sent). Never past
 * {@code limit} (rounded up to the alignment). The page cache is bypassed.
 *
 * <p>To keep {@code depth} requests in flight while the reader holds the
 * request it copies from, the window needs {@code (depth + 1) x requestBytes};
 * in a smaller window the requests are made smaller (window / (depth + 1),
 * aligned), so the depth holds (the adaptive policy raises depth and size
 * together, beyond any window the size alone would fit).
 *
 * <p>Not thread-safe (one reader). Closing waits for the requests in flight
 * (the ring writes into the window until they are reaped), then closes the
 * O_DIRECT file and the wrapped channel and gives the window back.
 */
final class DirectReadChannel implements ReadableByteChannel {
  /** One request: [offset, offset + length) of the file, at windowOffset in the window. */
  private static final class Req {
    final long offset;
    final int length;
    final int windowOffset;
    final CompletableFuture<Integer> done;
    int valid = -1; // bytes read, once awaited

    Req(long offset, int length, int windowOffset, CompletableFuture<Integer> done) {
      this.offset = offset;
      this.length = length;
      this.windowOffset = windowOffset;
      this.done = done;
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
    topUp();
    Req head = pending.peekFirst();
    if (head == null) {
      return -1;
    }
    if (head.valid < 0) {
      try {
        head.valid = sched.await(head.done);
      } catch (IOException e) {
        failure = e;
        throw e;
      }
      if (head.valid < head.length) {
        eofAt = Math.min(eofAt, head.offset + head.valid); // a short read is the end of the file
      }
      topUp(); // its slot on the device is free: the next request goes now, before the copy
    }
    long stop = Math.min(Math.min(limit, eofAt), head.offset + head.valid);
    if (pos >= stop) {
      return -1;
    }
    int off = head.windowOffset + (int) (pos - head.offset);
    int n = (int) Math.min(dst.remaining(), stop - pos);
    view.limit(off + n).position(off);
    dst.put(view);
    pos += n;
    if (pos >= head.offset + head.length) {
      pending.pollFirst(); // its part of the window is free: read further on into it
      topUp();
    }
    return n;
  }

  /** Issues requests while the window has room and fewer than the policy's depth are in flight. */
  private void topUp() throws IOException {
    int depth = Math.max(1, sched.policy().depth());
    // depth requests ahead plus the one being copied out must fit the window: where the
    // policy's size would not let them, the requests get smaller, not fewer
    int requestBytes = (int) Math.min(sched.requestBytes(), windowBytes / (depth + 1L));
    int chunk = Math.max(align, requestBytes - requestBytes % align);
    int inFlight = 0;
    for (Req r : pending) {
      if (!r.done.isDone()) {
        inFlight++;
      }
    }
    long consumed = pos - pos % align; // the window below this is free again
    while (inFlight < depth && issuedTo < end && issuedTo < eofAt) {
      int at = (int) Math.floorMod(issuedTo - base, (long) windowBytes);
      long len = Math.min(Math.min(chunk, windowBytes - at), end - issuedTo);
      if (issuedTo + len > consumed + windowBytes) {
        return; // the window is full: the reader has not copied out what is there yet
      }
      long offset = issuedTo;
      int length = (int) len;
      long addr = windowAddr + at;
      CompletableFuture<Integer> f = sched.submit(streamKey, false, offset, length, () -> readOne(addr, length,
          offset));
      pending.addLast(new Req(offset, length, at, f));
      issuedTo += length;
      inFlight++;
    }
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
  int pendingRequests() {
    return pending.size();
  }

  @Override
  public boolean isOpen() {
    return open;
  }

  @Override
  public void close() throws IOException {
    if (!open) {
      return;
    }
    open = false;
    try {
      for (Req r : pending) {
        try {
          sched.await(r.done); // the ring writes into the window until then
        } catch (IOException | RuntimeException e) {
          // closing anyway
        }
      }
      pending.clear();
      giveBack.accept(window);
      file.close();
    } finally {
      wrapped.close();
    }
  }
}
