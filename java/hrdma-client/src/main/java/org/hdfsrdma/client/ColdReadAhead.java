package org.hdfsrdma.client;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import org.hdfsrdma.nativelib.DirectAddress;
import org.hdfsrdma.nativelib.NativeDisk;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.nativelib.NativeFiles;

/**
 * O_DIRECT reads ahead of a short-circuit reader of a replica that is not in the page cache
 * ({@code hrdma.client.read.local.cold-direct}): the block file is read as fio reads a disk,
 * {@link Settings#depth} requests of {@link Settings#requestBytes} in flight through an io_uring,
 * on a descriptor of the block file opened anew with O_DIRECT ({@link NativeFiles.Fd#openDirect}),
 * into aligned private buffers that the reader verifies and copies out of. The page cache is
 * neither filled nor copied from (on the test machine that fill alone cost 0.25-0.4 s of system
 * CPU per GiB), and the kernel's read-ahead does not decide the depth. What the reader reads this
 * way is not left in the page cache.
 *
 * <p>Requests start at the first offset at or before the reader's position that O_DIRECT and the
 * checksum chunks both allow, follow each other without a gap and end at the range's end (the last
 * one rounded up to the alignment); the buffers are {@code depth + 1}, so {@code depth} stay in
 * flight while the reader copies out of one. One thread at a time (the reader's); {@link #close()}
 * waits for the requests in flight before the buffers go back to the pool, so nothing of the kernel
 * writes into memory that is no longer the reader's.
 */
final class ColdReadAhead implements AutoCloseable {
  /** Requests in flight and their size. */
  record Settings(int depth, int requestBytes) {
    Settings {
      if (depth < 1 || depth > 64 || requestBytes < 4096) {
        throw new IllegalArgumentException("cold O_DIRECT reads: depth " + depth + " (1-64), request-bytes "
            + requestBytes + " (at least 4096)");
      }
    }
  }

  /** Bytes read with O_DIRECT and handed to readers (process-wide; tests and benchmarks). */
  private static final LongAdder BYTES = new LongAdder();
  /** Readers that read with O_DIRECT from some point on. */
  private static final LongAdder STARTED = new LongAdder();
  /** Readers that could not (no O_DIRECT, a request failed) and read through the page cache instead. */
  private static final LongAdder FALLBACKS = new LongAdder();
  /** Buffers a failed reap left to the kernel: never given back or freed. */
  private static final List<ByteBuffer> ABANDONED = new ArrayList<>();

  static long bytes() {
    return BYTES.sum();
  }

  static long started() {
    return STARTED.sum();
  }

  static long fallbacks() {
    return FALLBACKS.sum();
  }

  /** Counts a reader that went back to the page cache. */
  static void countFallback() {
    FALLBACKS.increment();
  }

  private final NativeDisk.File file;
  private final NativeDisk.Ring ring;
  private final String name;
  private final int request;
  private final int align;
  private final long first;      // block offset of the first request
  private final long to;         // block offset after the last byte wanted
  private final long requests;   // how many requests cover [first, to)
  private final ByteBuffer[] raw;  // pooled, as taken
  private final ByteBuffer[] bufs; // aligned slices of raw, one request each
  private final boolean[] done;    // buffer holds its request's completion
  private final long[] result;     // bytes read, or a negative status
  private final long[] cookies;
  private final long[] results;
  private long issued;   // requests issued
  private long handed;   // requests handed out (the last one is the reader's until the next call)
  private int inFlight;
  private boolean closed;
  private IOException failure; // what a request ended with: every later call's

  private ColdReadAhead(NativeDisk.File file, NativeDisk.Ring ring, String name, int request, int align,
      long first, long to, int depth) {
    this.file = file;
    this.ring = ring;
    this.name = name;
    this.request = request;
    this.align = align;
    this.first = first;
    this.to = to;
    this.requests = (to - first + request - 1) / request;
    int n = depth + 1;
    this.raw = new ByteBuffer[n];
    this.bufs = new ByteBuffer[n];
    this.done = new boolean[n];
    this.result = new long[n];
    this.cookies = new long[depth];
    this.results = new long[depth];
    for (int i = 0; i < n; i++) {
      raw[i] = WindowBuffers.take(request + align);
      bufs[i] = raw[i].clear().alignedSlice(align).limit(request);
    }
  }

  /**
   * O_DIRECT reads of {@code data}'s block file from at or before {@code from} (a chunk boundary)
   * to {@code to}, the first {@code depth} requests issued at once; null when this file cannot be
   * read so (the filesystem takes no O_DIRECT, the file's permissions, no io_uring): the reader
   * goes on through the page cache, counted in {@link #fallbacks()}.
   */
  static ColdReadAhead open(NativeFiles.Fd data, long from, long to, int bpc, Settings s, String name) {
    NativeDisk.File f = null;
    NativeDisk.Ring ring = null;
    ColdReadAhead c = null;
    try {
      f = data.openDirect();
      int align = f.directAlignment();
      if (align <= 0 || (align & (align - 1)) != 0) {
        throw new NativeException("alignment " + align, NativeException.ERR_UNSUPPORTED);
      }
      long unit = lcm(align, bpc);
      int request = (int) (s.requestBytes() / unit * unit);
      if (request == 0) {
        throw new NativeException("alignment " + align + ", chunks of " + bpc, NativeException.ERR_UNSUPPORTED);
      }
      ring = new NativeDisk.Ring(s.depth());
      c = new ColdReadAhead(f, ring, name, request, align, from / unit * unit, to, s.depth());
      c.issue(s.depth());
      STARTED.increment();
      return c;
    } catch (NativeException | RuntimeException e) {
      if (c != null) {
        c.close();
      } else {
        closeQuietly(ring, f);
      }
      FALLBACKS.increment();
      return null;
    }
  }

  private static long lcm(long a, long b) {
    long x = a;
    long y = b;
    while (y != 0) {
      long t = x % y;
      x = y;
      y = t;
    }
    return a / x * b;
  }

  /** Block offset of the first byte this reads (the first request's). */
  long first() {
    return first;
  }

  /** Block offset of the window {@link #next()} returned last. */
  long start() {
    return first + (handed - 1) * request;
  }

  /**
   * The next request's bytes (position 0, limit: its bytes up to the range's end), in order, once
   * read: the buffer is the reader's until the next call, which hands it back for a later request.
   * Null after the last.
   *
   * @throws EOFException the file ends before the range (truncated while it was read)
   * @throws IOException the read failed; every later call throws it again
   */
  ByteBuffer next() throws IOException {
    if (closed) {
      throw new IOException("O_DIRECT reads of " + name + " are closed");
    }
    if (failure != null) {
      throw failure;
    }
    if (handed == requests) {
      return null;
    }
    long k = handed;
    int slot = (int) (k % bufs.length);
    issue(k + bufs.length - 1); // k's buffer is in flight or done; the one handed out before is free now
    while (!done[slot]) {
      reap(1);
    }
    done[slot] = false;
    handed++;
    issue(k + bufs.length); // the one before k's is free now too: depth in flight while k is read
    long at = first + k * request;
    long want = Math.min(request, to - at);
    long r = result[slot];
    if (r < 0) {
      failure = new IOException("cannot read [" + at + ", " + (at + want) + ") of the block file of " + name
          + " with O_DIRECT: " + org.hdfsrdma.nativelib.HrdmaNative.statusString((int) r));
      throw failure;
    }
    if (r < want) {
      failure = new EOFException("the block file of " + name + " ends at " + (at + r) + ", before "
          + (at + want) + ": it was truncated while it was read");
      throw failure;
    }
    BYTES.add(want);
    return bufs[slot].duplicate().position(0).limit((int) want);
  }

  /** Issues requests until {@code upTo} (exclusive, at most all of them) are issued. */
  private void issue(long upTo) throws NativeException {
    long last = Math.min(upTo, requests);
    while (issued < last) {
      int slot = (int) (issued % bufs.length);
      long at = first + issued * request;
      long len = Math.min(request, (to - at + align - 1) / align * align);
      done[slot] = false;
      ring.read(file, DirectAddress.of(bufs[slot]), len, at, slot);
      issued++;
      inFlight++;
    }
  }

  private void reap(int minWait) throws NativeException {
    int n = ring.reap(cookies, results, minWait);
    for (int i = 0; i < n; i++) {
      int slot = (int) cookies[i];
      result[slot] = results[i];
      done[slot] = true;
    }
    inFlight -= n;
  }

  /** Waits for the requests in flight, then closes the ring and the descriptor and gives the buffers back. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    boolean drained = true;
    try {
      while (inFlight > 0) {
        reap(1); // O_DIRECT reads are not cancelled: they end with the device's answer
      }
    } catch (NativeException e) {
      drained = false;
    }
    if (drained) {
      closeQuietly(ring, file);
      for (ByteBuffer b : raw) {
        WindowBuffers.give(b);
      }
    } else {
      // the kernel may still write into them: keep them (and the ring) from ever being reused or freed
      synchronized (ABANDONED) {
        ABANDONED.addAll(List.of(raw));
      }
      closeQuietly(null, file);
    }
  }

  private static void closeQuietly(NativeDisk.Ring ring, NativeDisk.File f) {
    try {
      if (ring != null) {
        ring.close();
      }
    } catch (NativeException e) {
      // requests still in flight: close() says when
    }
    try {
      if (f != null) {
        f.close();
      }
    } catch (NativeException e) {
      // nothing was written through it
    }
  }

  @Override
  public String toString() {
    return "ColdReadAhead[" + name + ", " + issued + "/" + requests + " requests of " + request + "]";
  }
}
