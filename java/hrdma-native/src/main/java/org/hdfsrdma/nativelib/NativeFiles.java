package org.hdfsrdma.nativelib;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Files received as open descriptors from another process (libhrdma's
 * native/src/fdmap): the short-circuit reader gets a replica's block and
 * .meta files from the DataNode over a Unix domain socket and reads them
 * through read-only mappings, with no permission of its own on the files.
 * {@link #adopt} takes a descriptor over, {@link Fd#map} maps a range of it;
 * a mapping outlives its descriptor. Descriptors held and bytes mapped are
 * counted process-wide ({@link #fdsHeld()}, {@link #mappedBytes()}: leak checks).
 *
 * <p><b>An unmapped range's buffers must never be touched again</b>: as with
 * {@link NativeShm}, any access through a buffer of a closed {@link Mapping}
 * is a SIGSEGV that kills the JVM. Callers close a mapping only once no
 * thread uses a buffer of it.
 */
public final class NativeFiles {
  private NativeFiles() {}

  /**
   * Takes {@code fd} over: from now on only {@link Fd#close()} closes it.
   * It must be a regular file; anything else is closed at once and refused
   * ({@link NativeException#ERR_INVALID}).
   */
  public static Fd adopt(int fd) throws NativeException {
    HrdmaNative.ensureAvailable();
    long size = Jni.fdAdopt0(fd);
    return new Fd(fd, size);
  }

  /**
   * Opens the regular file at {@code path} read-only (close-on-exec) and
   * returns the bare descriptor, for passing to another process (SCM_RIGHTS):
   * the caller closes it once sent. Not counted in {@link #fdsHeld()}.
   * {@link NativeException#ERR_INVALID} when it is not a regular file.
   */
  public static int openForPassing(String path) throws NativeException {
    HrdmaNative.ensureAvailable();
    return Jni.fdOpenRead0(path);
  }

  /** Bytes mapped by {@link Fd#map} and not unmapped yet, process-wide; 0 without the library. */
  public static long mappedBytes() {
    return HrdmaNative.isAvailable() ? Jni.fdMappedBytes0() : 0;
  }

  /** Descriptors adopted and not closed yet, process-wide; 0 without the library. */
  public static long fdsHeld() {
    return HrdmaNative.isAvailable() ? Jni.fdsHeld0() : 0;
  }

  /** An adopted descriptor. {@link #close()} is idempotent and thread-safe. */
  public static final class Fd implements AutoCloseable {
    private final int fd;
    private final long size;
    private final AtomicBoolean closed = new AtomicBoolean();

    private Fd(int fd, long size) {
      this.fd = fd;
      this.size = size;
    }

    /** The file's size when it was adopted. */
    public long size() {
      return size;
    }

    /**
     * A read-only mapping of {@code [offset, offset + length)}; {@code length}
     * at least 1, at most Integer.MAX_VALUE, and the range within the file's
     * size now ({@link NativeException#ERR_INVALID} otherwise).
     */
    public Mapping map(long offset, long length) throws NativeException {
      if (closed.get()) {
        throw new NativeException("descriptor " + fd + " is closed", NativeException.ERR_CLOSED);
      }
      if (length < 1 || length > Integer.MAX_VALUE || offset < 0) {
        throw new NativeException("map [" + offset + ", " + (offset + length) + ") of descriptor " + fd
            + ": bad range", NativeException.ERR_INVALID);
      }
      long address = Jni.fdMap0(fd, offset, length);
      ByteBuffer b = null;
      try {
        b = Jni.directBuffer0(address, length);
      } finally {
        if (b == null) {
          Jni.fdUnmap0(address, length);
        }
      }
      if (b == null) {
        throw new NativeException("no direct buffer over a mapped file", NativeException.ERR_UNSUPPORTED);
      }
      return new Mapping(address, length, b.asReadOnlyBuffer());
    }

    /**
     * A read-write mapping of the first {@code length} bytes (a multiple of
     * the page size) of a received segment made by another process's
     * {@link NativeShm#createSealed}: refused ({@link NativeException#ERR_INVALID})
     * when the file is shorter or not sealed against shrinking.
     */
    public Mapping mapShared(long length) throws NativeException {
      if (closed.get()) {
        throw new NativeException("descriptor " + fd + " is closed", NativeException.ERR_CLOSED);
      }
      if (length < 1 || length > Integer.MAX_VALUE) {
        throw new NativeException("map " + length + " bytes of descriptor " + fd + ": bad length",
            NativeException.ERR_INVALID);
      }
      long address = Jni.fdMapShared0(fd, length);
      ByteBuffer b = null;
      try {
        b = Jni.directBuffer0(address, length);
      } finally {
        if (b == null) {
          Jni.fdUnmap0(address, length);
        }
      }
      if (b == null) {
        throw new NativeException("no direct buffer over a mapped segment", NativeException.ERR_UNSUPPORTED);
      }
      return new Mapping(address, length, b);
    }

    /**
     * Reads into {@code dst} (direct) from its position to its limit, from
     * {@code offset} of the file, and moves its position past the bytes read:
     * fewer than asked only where the file ends now. Copies out of the page
     * cache with pread(2), so a file truncated under the read shortens the
     * count where a mapping would fault (SIGBUS).
     */
    public int read(long offset, ByteBuffer dst) throws NativeException {
      if (!dst.isDirect() || dst.isReadOnly()) {
        throw new IllegalArgumentException("reads need a writable direct buffer");
      }
      if (closed.get()) {
        throw new NativeException("descriptor " + fd + " is closed", NativeException.ERR_CLOSED);
      }
      if (offset < 0) {
        throw new NativeException("read at " + offset + " of descriptor " + fd, NativeException.ERR_INVALID);
      }
      int n = (int) Jni.fdPread0(fd, DirectAddress.of(dst) + dst.position(), dst.remaining(), offset);
      dst.position(dst.position() + n);
      return n;
    }

    /** Most bytes {@link #readVerified} takes at a time (the time a caller's array stays pinned). */
    public static final int READ_VERIFIED_MAX = 1 << 20;

    /**
     * Reads {@code [off, off + len)} of {@code dst} from {@code offset} of the file (on a chunk
     * boundary) with pread, only what the page cache holds now (preadv2 RWF_NOWAIT: the array is
     * pinned for the call, never across disk I/O), and verifies the CRC32C chunks ({@code bpc}
     * bytes each) of what was read against {@code sums} (direct, from its position: the first
     * chunk's sum on; null: nothing verified), all in one native call (ISA-L): the whole range (its
     * last chunk may be short: the file's last) when all of it was read, else the whole chunks read.
     *
     * @return the bytes read ({@code len}, or fewer where the page cache or the file ends), or
     *     {@code -2 - o} when the chunk at offset {@code o} of the range does not match its sum
     */
    public long readVerified(long offset, byte[] dst, int off, int len, int bpc, ByteBuffer sums)
        throws NativeException {
      checkReadVerified(offset, len, bpc, sums);
      java.util.Objects.checkFromIndexSize(off, len, dst.length);
      return Jni.fdPreadVerifyArray0(fd, dst, off, len, offset, true, bpc, sums == null ? 0
          : DirectAddress.of(sums) + sums.position(), sums == null ? 0 : sums.remaining());
    }

    /**
     * {@link #readVerified(long, byte[], int, int, int, ByteBuffer)} into {@code dst} (direct,
     * writable) from its position to its limit; its position is not moved.
     */
    public long readVerified(long offset, ByteBuffer dst, int bpc, ByteBuffer sums) throws NativeException {
      if (!dst.isDirect() || dst.isReadOnly()) {
        throw new IllegalArgumentException("reads need a writable direct buffer");
      }
      checkReadVerified(offset, dst.remaining(), bpc, sums);
      return Jni.fdPreadVerify0(fd, DirectAddress.of(dst) + dst.position(), dst.remaining(), offset, true, bpc,
          sums == null ? 0 : DirectAddress.of(sums) + sums.position(), sums == null ? 0 : sums.remaining());
    }

    private void checkReadVerified(long offset, int len, int bpc, ByteBuffer sums) throws NativeException {
      if (sums != null && !sums.isDirect()) {
        throw new IllegalArgumentException("sums need a direct buffer");
      }
      if (len > READ_VERIFIED_MAX || bpc <= 0) {
        throw new IllegalArgumentException(len + " bytes of chunks of " + bpc + ": at most " + READ_VERIFIED_MAX);
      }
      HrdmaNative.ensureAvailable();
      if (closed.get()) {
        throw new NativeException("descriptor " + fd + " is closed", NativeException.ERR_CLOSED);
      }
      if (offset < 0) {
        throw new NativeException("read at " + offset + " of descriptor " + fd, NativeException.ERR_INVALID);
      }
    }

    /** Asks the kernel to read {@code [offset, offset + len)} into the page cache (advisory). */
    public void willNeed(long offset, long len) throws NativeException {
      if (closed.get()) {
        throw new NativeException("descriptor " + fd + " is closed", NativeException.ERR_CLOSED);
      }
      int st = Jni.fdFadviseWillNeed0(fd, offset, len);
      if (st < 0) {
        throw new NativeException("fadvise [" + offset + ", " + (offset + len) + ") of descriptor " + fd + ": "
            + HrdmaNative.statusString(st), st);
      }
    }

    /**
     * The same file opened anew with O_DIRECT (through /proc/self/fd: a file description of its
     * own, so this descriptor's flags and whoever else holds the file are untouched; the file's
     * own permissions are checked, not its directories'). The caller closes it.
     * {@link NativeException#ERR_UNSUPPORTED}: the filesystem takes no O_DIRECT.
     */
    public NativeDisk.File openDirect() throws NativeException {
      if (closed.get()) {
        throw new NativeException("descriptor " + fd + " is closed", NativeException.ERR_CLOSED);
      }
      return NativeDisk.File.open(java.nio.file.Path.of("/proc/self/fd/" + fd), NativeDisk.DIRECT);
    }

    @Override
    public void close() {
      if (closed.compareAndSet(false, true)) {
        Jni.fdClose0(fd); // the descriptor is gone whatever close says
      }
    }

    @Override
    public String toString() {
      return "fd " + fd + " (" + size + " bytes)";
    }
  }

  /** A mapping (read-only but for {@link Fd#mapShared}). {@link #close()} is idempotent and thread-safe. */
  public static final class Mapping implements AutoCloseable {
    private final long address;
    private final long length;
    private final ByteBuffer buffer; // never moved, only duplicated
    private final AtomicBoolean closed = new AtomicBoolean();

    private Mapping(long address, long length, ByteBuffer buffer) {
      this.address = address;
      this.length = length;
      this.buffer = buffer;
    }

    /** Address of the range's first byte; dead memory after {@link #close()}. */
    public long address() {
      return address;
    }

    /**
     * A new buffer over the range (position 0, big-endian; read-only but for
     * {@link Fd#mapShared}); dead after {@link #close()}.
     */
    public ByteBuffer buffer() {
      if (closed.get()) {
        throw new IllegalStateException("the mapping is closed");
      }
      return buffer.duplicate();
    }

    public long length() {
      return length;
    }

    /**
     * Asks the kernel to read {@code [offset, offset + len)} of the mapping in
     * now, in large requests (after {@link #adviseRandom()} a fault reads one page).
     */
    public void willNeed(long offset, long len) throws NativeException {
      if (closed.get()) {
        throw new NativeException("the mapping is closed", NativeException.ERR_CLOSED);
      }
      if (offset < 0 || len < 1 || offset + len > length) {
        throw new NativeException("willNeed [" + offset + ", " + (offset + len) + ") of a mapping of " + length
            + " bytes", NativeException.ERR_INVALID);
      }
      int st = Jni.fdAdviseWillNeed0(address + offset, len);
      if (st < 0) {
        throw new NativeException("madvise(MADV_WILLNEED) of a received file's range: "
            + HrdmaNative.statusString(st), st);
      }
    }

    /**
     * Tells the kernel this mapping is read at random: a page fault then reads
     * that page only, not the device's read-ahead window around it (8 MB on
     * some virtual disks), which random small reads of a cold file would pay.
     */
    public void adviseRandom() throws NativeException {
      if (closed.get()) {
        throw new NativeException("the mapping is closed", NativeException.ERR_CLOSED);
      }
      int st = Jni.fdAdviseRandom0(address, length);
      if (st < 0) {
        throw new NativeException("madvise(MADV_RANDOM) of a received file's range: " + HrdmaNative.statusString(st),
            st);
      }
    }

    /** Unmaps, once; every buffer of it is dead memory afterwards. */
    @Override
    public void close() {
      if (closed.compareAndSet(false, true)) {
        int st = Jni.fdUnmap0(address, length);
        if (st < 0) {
          throw new IllegalStateException("unmap a received file's range: " + HrdmaNative.statusString(st));
        }
      }
    }
  }
}
