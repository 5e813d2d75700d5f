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
 * <p>Refills run on the thread that calls {@link #read}, which for the
 * plugin is the volume's I/O worker inside a scheduled request; the ring is
 * that thread's. Not thread-safe. Closing closes the O_DIRECT file and the
 * wrapped channel.
 */
final class DirectReadChannel implements ReadableByteChannel {
  private final NativeDisk.File file;
  private final ReadableByteChannel wrapped;
  private final Supplier<NativeDisk.Ring> ring;
  private final Supplier<int[]> shape; // {depth, requestBytes}
  private final VolumeStats stats;
  private final int align;
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
   */
  DirectReadChannel(NativeDisk.File file, ReadableByteChannel wrapped, long start, int windowBytes,
      Supplier<NativeDisk.Ring> ring, Supplier<int[]> shape, VolumeStats stats) throws NativeException {
    this.stats = stats;
    this.file = file;
    this.wrapped = wrapped;
    this.ring = ring;
    this.shape = shape;
    this.align = file.directAlignment();
    int w = Math.max(align, windowBytes - windowBytes % align);
    this.window = ByteBuffer.allocateDirect(w + align).alignedSlice(align);
    this.windowAddr = Jni.bufferAddress0(window);
    this.pos = start;
    this.cookies = new long[w / align];
    this.results = new long[w / align];
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
      refill();
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
    int cap = window.capacity();
    int chunk = Math.min(cap, Math.max(align, s[1] - s[1] % align));
    int k = Math.max(1, Math.min(s[0], cap / chunk));
    long start = pos - pos % align;
    NativeDisk.Ring r = ring.get();
    k = Math.min(k, r.depth());
    for (int i = 0; i < k; i++) {
      r.read(file, windowAddr + (long) i * chunk, chunk, start + (long) i * chunk, i);
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
      if (got[i] < chunk) {
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
      try {
        file.close();
      } finally {
        wrapped.close();
      }
    }
  }
}
