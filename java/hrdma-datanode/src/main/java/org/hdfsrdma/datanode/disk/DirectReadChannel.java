package org.hdfsrdma.datanode.disk;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ReadableByteChannel;
import java.util.function.Supplier;
import org.hdfsrdma.nativelib.Jni;
import org.hdfsrdma.nativelib.NativeDisk;
import org.hdfsrdma.nativelib.NativeException;

/**
 * A block file read sequentially with O_DIRECT through an io_uring: each
 * refill puts several large requests in flight at once ({@code depth} x
 * {@code requestBytes}, as the volume's policy says at that moment, within a
 * read-ahead window) into an aligned buffer, and reads are served from it.
 * The page cache is bypassed, so a stream neither pollutes nor depends on it.
 *
 * <p>Each refill is one request of the volume's scheduler (stream
 * {@code streamKey}) and runs on its I/O worker, with that worker's ring;
 * reads served from the window touch no disk and stay on the caller's
 * thread. Not thread-safe. Closing closes the O_DIRECT file and the wrapped
 * channel.
 */
final class DirectReadChannel implements ReadableByteChannel {
  private final NativeDisk.File file;
  private final ReadableByteChannel wrapped;
  private final Supplier<NativeDisk.Ring> ring;
  private final Supplier<int[]> shape; // {depth, requestBytes}
  private final VolumeStats stats;
  private final VolumeScheduler sched;
  private final Object streamKey;
  private final int align;
  private final long limit;
  private final java.util.function.Consumer<ByteBuffer> giveBack;
  private final ByteBuffer window;
  private final long windowAddr;
  private long pos;
  private long bufStart;
  private int bufLen;
  private boolean eof;
  private boolean open = true;
  private final long[] cookies;
  private final long[] results;

  /**
   * @param file     the block file opened with {@link NativeDisk#DIRECT}
   * @param wrapped  the dataset's channel on the same file (closed with this one)
   * @param start    the block offset of the first byte to read
   * @param limit    the block offset after the last byte the reader will want (no read-ahead past it)
   * @param window   the read-ahead buffer, aligned, a multiple of the alignment long; handed to
   *                 {@code giveBack} at close
   */
  DirectReadChannel(NativeDisk.File file, ReadableByteChannel wrapped, long start, long limit, ByteBuffer window,
      java.util.function.Consumer<ByteBuffer> giveBack, Supplier<NativeDisk.Ring> ring, VolumeScheduler sched,
      Object streamKey) throws NativeException {
    this.stats = sched.stats();
    this.sched = sched;
    this.streamKey = streamKey;
    this.shape = () -> new int[] {sched.policy().depth(), sched.requestBytes()};
    this.file = file;
    this.wrapped = wrapped;
    this.ring = ring;
    this.align = file.directAlignment();
    if (window.capacity() % align != 0 || Jni.bufferAddress0(window) % align != 0) {
      throw new NativeException("read-ahead window not aligned to " + align, NativeException.ERR_INVALID);
    }
    this.limit = limit;
    this.giveBack = giveBack;
    this.window = window;
    this.windowAddr = Jni.bufferAddress0(window);
    this.pos = start;
    this.cookies = new long[window.capacity() / align];
    this.results = new long[window.capacity() / align];
  }

  @Override
  public int read(ByteBuffer dst) throws IOException {
    if (!open) {
      throw new ClosedChannelException();
    }
    if (pos < bufStart || pos >= bufStart + bufLen) {
      if (eof && pos >= bufStart + bufLen) {
        return -1;
      }
      long at = pos - pos % align;
      sched.call(streamKey, false, at, (int) Math.min(window.capacity(), Math.max(0, limit - at)), () -> {
        refill();
        return null;
      });
      if (pos >= bufStart + bufLen) {
        return -1;
      }
    }
    int off = (int) (pos - bufStart);
    int n = Math.min(dst.remaining(), bufLen - off);
    dst.put(window.duplicate().position(off).limit(off + n));
    pos += n;
    return n;
  }

  private void refill() throws IOException {
    int[] s = shape.get();
    long start = pos - pos % align;
    // up to depth x requestBytes, within the window, and not past what the reader asked for
    long want = Math.max(align, limit - start);
    want = Math.min(window.capacity(), want + (align - want % align) % align);
    int chunk = (int) Math.min(want, Math.max(align, s[1] - s[1] % align));
    NativeDisk.Ring r = ring.get();
    int k = (int) Math.max(1, Math.min(Math.min(s[0], r.depth()), (want + chunk - 1) / chunk));
    for (int i = 0; i < k; i++) {
      int len = (int) Math.min(chunk, want - (long) i * chunk);
      r.read(file, windowAddr + (long) i * chunk, len, start + (long) i * chunk, i);
    }
    long[] got = new long[k];
    int done = 0;
    while (done < k) {
      int n = r.reap(cookies, results, 1);
      for (int i = 0; i < n; i++) {
        got[(int) cookies[i]] = results[i];
      }
      done += n;
    }
    int valid = 0;
    for (int i = 0; i < k; i++) {
      if (got[i] < 0) {
        throw new NativeException("O_DIRECT read of " + file + " at " + (start + (long) i * chunk) + ": "
            + org.hdfsrdma.nativelib.HrdmaNative.statusString((int) got[i]), (int) got[i]);
      }
      valid += (int) got[i];
      if (got[i] < Math.min(chunk, want - (long) i * chunk)) {
        eof = true; // a short read is the end of the file
        break;
      }
    }
    bufStart = start;
    bufLen = valid;
    stats.direct(k, valid);
  }

  @Override
  public boolean isOpen() {
    return open;
  }

  @Override
  public void close() throws IOException {
    if (open) {
      open = false;
      giveBack.accept(window);
      try {
        file.close();
      } finally {
        wrapped.close();
      }
    }
  }
}
