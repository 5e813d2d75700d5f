package org.hdfsrdma.datanode.disk;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ReadableByteChannel;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.Jni;
import org.hdfsrdma.nativelib.NativeDisk;
import org.hdfsrdma.nativelib.NativeException;

/**
 * A block file read sequentially with O_DIRECT through an io_uring, double
 * buffered: the read-ahead window is two halves; while the reader is served
 * from one, the next range is read into the other. Each fill puts several
 * large requests in flight at once ({@code depth} x {@code requestBytes}, as
 * the volume's policy says at that moment, within the half, never past
 * {@code limit}). The page cache is bypassed.
 *
 * <p>Each fill is one request of the volume's scheduler (stream
 * {@code streamKey}) and runs on its I/O worker, with that worker's ring;
 * reads served from a half touch no disk and stay on the caller's thread.
 * Not thread-safe (one reader). Closing waits for a fill in flight, then
 * closes the O_DIRECT file and the wrapped channel and gives the window back.
 */
final class DirectReadChannel implements ReadableByteChannel {
  /** One half of the window and what it holds. */
  private static final class Half {
    final ByteBuffer buf;
    final long addr;
    long start;
    int len;
    boolean eof;

    Half(ByteBuffer buf) {
      this.buf = buf;
      this.addr = Jni.bufferAddress0(buf);
    }

    boolean holds(long pos) {
      return pos >= start && pos < start + len;
    }
  }

  private final NativeDisk.File file;
  private final ReadableByteChannel wrapped;
  private final Supplier<NativeDisk.Ring> ring;
  private final VolumeScheduler sched;
  private final Object streamKey;
  private final int align;
  private final long limit;
  private final Consumer<ByteBuffer> giveBack;
  private final ByteBuffer window;
  private Half cur;
  private Half spare;
  private CompletableFuture<Void> ahead; // filling `spare`
  private long pos;
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
    int half = window.capacity() / 2;
    half -= half % align;
    if (half < align || Jni.bufferAddress0(window) % align != 0) {
      throw new NativeException("read-ahead window of " + window.capacity() + " bytes not aligned to " + align,
          NativeException.ERR_INVALID);
    }
    this.limit = limit;
    this.giveBack = giveBack;
    this.window = window;
    this.cur = new Half(window.duplicate().position(0).limit(half).slice());
    this.spare = new Half(window.duplicate().position(half).limit(2 * half).slice());
    this.pos = start;
  }

  @Override
  public int read(ByteBuffer dst) throws IOException {
    if (!open) {
      throw new ClosedChannelException();
    }
    if (pos >= limit) {
      return -1;
    }
    if (!cur.holds(pos)) {
      if (ahead != null) {
        CompletableFuture<Void> a = ahead;
        ahead = null;
        sched.await(a);
        Half t = cur;
        cur = spare;
        spare = t;
      }
      if (!cur.holds(pos)) { // the first read, or the reader moved
        long at = pos - pos % align;
        sched.call(streamKey, false, at, fillLength(cur, at), () -> {
          fill(cur, at);
          return null;
        });
        if (!cur.holds(pos)) {
          return -1;
        }
      }
      long next = cur.start + cur.len;
      if (!cur.eof && next < limit) {
        Half h = spare;
        ahead = sched.submit(streamKey, false, next, fillLength(h, next), () -> {
          fill(h, next);
          return null;
        });
      }
    }
    int off = (int) (pos - cur.start);
    int n = Math.min(dst.remaining(), cur.len - off);
    dst.put(cur.buf.duplicate().position(off).limit(off + n));
    pos += n;
    return n;
  }

  /** What a fill of {@code h} from {@code start} reads: the half, not past the limit (rounded up to the alignment). */
  private int fillLength(Half h, long start) {
    long want = Math.max(align, limit - start);
    want += (align - want % align) % align;
    return (int) Math.min(h.buf.capacity(), want);
  }

  /** Reads [start, start + fillLength) into {@code h} with up to depth requests in flight (on an I/O worker). */
  private void fill(Half h, long start) throws IOException {
    int want = fillLength(h, start);
    int requestBytes = sched.requestBytes();
    int chunk = Math.min(want, Math.max(align, requestBytes - requestBytes % align));
    NativeDisk.Ring r = ring.get();
    int k = (int) Math.max(1, Math.min(Math.min(sched.policy().depth(), r.depth()), (want + chunk - 1) / chunk));
    long[] cookies = new long[k];
    long[] results = new long[k];
    int issued = 0;
    int valid = 0;
    boolean eof = false;
    // k requests in flight at a time until the half is filled or the file ends
    int completed = 0;
    int total = (want + chunk - 1) / chunk;
    long[] byIndex = new long[total];
    while (completed < total) {
      while (issued < total && issued - completed < k) {
        int len = (int) Math.min(chunk, want - (long) issued * chunk);
        r.read(file, h.addr + (long) issued * chunk, len, start + (long) issued * chunk, issued);
        issued++;
      }
      int n = r.reap(cookies, results, 1);
      for (int i = 0; i < n; i++) {
        byIndex[(int) cookies[i]] = results[i];
      }
      completed += n;
    }
    for (int i = 0; i < total; i++) {
      long res = byIndex[i];
      if (res < 0) {
        throw new NativeException("O_DIRECT read of " + file + " at " + (start + (long) i * chunk) + ": "
            + HrdmaNative.statusString((int) res), (int) res);
      }
      valid += (int) res;
      if (res < Math.min(chunk, want - (long) i * chunk)) {
        eof = true; // a short read is the end of the file
        break;
      }
    }
    h.start = start;
    h.len = valid;
    h.eof = eof;
    sched.stats().direct(total, valid);
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
      if (ahead != null) {
        try {
          sched.await(ahead); // the ring writes into the window until then
        } catch (IOException | RuntimeException e) {
          // closing anyway
        }
        ahead = null;
      }
      giveBack.accept(window);
      file.close();
    } finally {
      wrapped.close();
    }
  }
}
