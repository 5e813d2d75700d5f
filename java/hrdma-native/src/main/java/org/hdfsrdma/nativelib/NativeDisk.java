package org.hdfsrdma.nativelib;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;

/**
 * Block-file operations of libhrdma (native/src/disk): preallocation, trim,
 * page-cache dropping, extent counting, O_DIRECT, and an io_uring for
 * queued reads and writes. Failures are {@link NativeException}s carrying
 * the status; {@link NativeException#ERR_UNSUPPORTED} means the filesystem
 * cannot do it (the caller falls back).
 */
public final class NativeDisk {
  private NativeDisk() {}

  /** Open for writing. */
  public static final int WRITE = 0x1;
  /** Open with O_DIRECT. */
  public static final int DIRECT = 0x2;

  static void check(long status, String what) throws NativeException {
    if (status < 0) {
      int st = (int) status;
      throw new NativeException(what + ": " + HrdmaNative.statusString(st), st);
    }
  }

  /**
   * How many bytes of {@code [offset, offset + len)} of the open file {@code fd} (cut at its
   * end) are in the page cache now: mincore over a mapping of the range, nothing read. Only
   * for a process that owns the file or may write it (the kernel shows others every page as
   * resident): the DataNode's block files.
   */
  public static long residentBytes(int fd, long offset, long len) throws NativeException {
    HrdmaNative.ensureAvailable();
    long n = Jni.diskResident0(fd, offset, len);
    check(n, "mincore of descriptor " + fd);
    return n;
  }

  /** An open file descriptor. Not thread-safe for close; the other calls are. */
  public static final class File implements AutoCloseable {
    private final int fd;
    private final String path;
    private boolean closed;

    private File(int fd, String path) {
      this.fd = fd;
      this.path = path;
    }

    /** Opens an existing file (flags: {@link #WRITE}, {@link #DIRECT}). */
    public static File open(Path path, int flags) throws NativeException {
      HrdmaNative.ensureAvailable();
      long r = Jni.diskOpen0(path.toString(), flags);
      check(r, "open " + path);
      return new File((int) r, path.toString());
    }

    /** Reserves [offset, offset + len) without changing the length (fallocate KEEP_SIZE). */
    public void preallocate(long offset, long len) throws NativeException {
      check(Jni.diskPreallocate0(fd, offset, len), "fallocate " + path);
    }

    /** Releases what was reserved past the end of the file. */
    public void trim() throws NativeException {
      check(Jni.diskTrim0(fd), "trim " + path);
    }

    /** Drops a range from the page cache; {@code written}: write it back first. */
    public void dropCache(long offset, long len, boolean written) throws NativeException {
      check(Jni.diskDropCache0(fd, offset, len, written), "fadvise " + path);
    }

    /** Starts writing a range back, without waiting (so dropping it later finds it clean). */
    public void writeback(long offset, long len) throws NativeException {
      check(Jni.diskWriteback0(fd, offset, len), "sync_file_range " + path);
    }

    /** The file's extents (FIEMAP). */
    public int extentCount() throws NativeException {
      long n = Jni.diskExtentCount0(fd);
      check(n, "fiemap " + path);
      return (int) n;
    }

    /** Bytes of {@code [offset, offset + len)} in the page cache now (see {@link NativeDisk#residentBytes}). */
    public long residentBytes(long offset, long len) throws NativeException {
      long n = Jni.diskResident0(fd, offset, len);
      check(n, "mincore of " + path);
      return n;
    }

    /** The alignment of offset, length and address that O_DIRECT needs here. */
    public int directAlignment() throws NativeException {
      long n = Jni.diskDirectAlignment0(fd);
      check(n, "alignment of " + path);
      return (int) n;
    }

    @Override
    public void close() throws NativeException {
      if (!closed) {
        closed = true;
        check(Jni.diskClose0(fd), "close " + path);
      }
    }

    @Override
    public String toString() {
      return path;
    }
  }

  /**
   * An io_uring of {@code depth} entries. One thread uses it at a time; the
   * buffers of requests in flight belong to the ring until they are reaped.
   */
  public static final class Ring implements AutoCloseable {
    private final long ring;
    private final int depth;
    private final ByteBuffer out;
    private final long outAddr;
    private boolean closed;

    public Ring(int depth) throws NativeException {
      HrdmaNative.ensureAvailable();
      this.ring = Jni.diskRingCreate0(depth);
      this.depth = depth;
      this.out = ByteBuffer.allocateDirect(16 * depth).order(ByteOrder.nativeOrder());
      this.outAddr = Jni.bufferAddress0(out);
    }

    /** Queues and submits a read of {@code len} bytes at {@code offset} into native memory at {@code addr}. */
    public void read(File f, long addr, long len, long offset, long cookie) throws NativeException {
      check(Jni.diskRingRead0(ring, f.fd, addr, len, offset, cookie), "io_uring read " + f);
    }

    /**
     * Reaps completions, waiting for at least {@code minWait}; stores
     * cookies and results (bytes, or a negative status) in the arrays and
     * returns how many.
     */
    public int reap(long[] cookies, long[] results, int minWait) throws NativeException {
      int max = Math.min(depth, Math.min(cookies.length, results.length));
      int n = Jni.diskRingReap0(ring, outAddr, max, minWait);
      check(n, "io_uring reap");
      for (int i = 0; i < n; i++) {
        cookies[i] = out.getLong(16 * i);
        results[i] = out.getLong(16 * i + 8);
      }
      return n;
    }

    @Override
    public void close() throws NativeException {
      if (!closed) {
        check(Jni.diskRingDestroy0(ring), "destroy io_uring");
        closed = true;
      }
    }
  }
}
