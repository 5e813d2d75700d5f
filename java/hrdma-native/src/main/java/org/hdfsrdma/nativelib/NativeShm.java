package org.hdfsrdma.nativelib;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Shared-memory segments of libhrdma (native/src/shm) for same-host reads:
 * the DataNode {@linkplain #create creates} a segment file in a tmpfs
 * (/dev/shm) and reads block data into it, a client on the same host
 * {@linkplain #open opens} the same file, mapped read-only, and copies
 * packets out of it. Failures are {@link NativeException}s whose message
 * names the path, the length and the system's reason ("File exists", "No
 * space left on device", ...).
 *
 * <p><b>A closed segment's buffers must never be touched again.</b> Every
 * {@link ByteBuffer} from {@link Segment#buffer()} (and its duplicates and
 * slices) points straight at the mapping; {@link Segment#close()} unmaps it,
 * and any later access through such a buffer, or through
 * {@link Segment#address()} taken before, is a SIGSEGV that kills the JVM,
 * not an exception. Callers reference-count a segment and close it only
 * once no buffer of it is in use by any thread.
 */
public final class NativeShm {
  private NativeShm() {}

  /**
   * Creates {@code path} (it must not exist; mode 0600), reserves all
   * {@code bytes} (a multiple of the page size) so that a full tmpfs fails
   * here and not with SIGBUS at a later store, and maps it read-write. The
   * file stays when the segment is closed: removing it is the creator's
   * business (mappings elsewhere outlive the name).
   * {@link NativeException#ERR_BUSY} when the path exists (it is left
   * alone), {@link NativeException#ERR_NOMEM} when the tmpfs is full.
   */
  public static Segment create(Path path, long bytes) throws NativeException {
    HrdmaNative.ensureAvailable();
    checkBytes("create", path, bytes);
    return new Segment(path, Jni.shmCreate0(path.toString(), bytes), bytes, true);
  }

  /**
   * Maps the first {@code bytes} (a multiple of the page size) of an
   * existing segment file read-only; its buffers are read-only.
   * {@link NativeException#ERR_INVALID} when the file is shorter or not a
   * regular file, {@link NativeException#ERR_IO} when it cannot be opened.
   */
  public static Segment open(Path path, long bytes) throws NativeException {
    HrdmaNative.ensureAvailable();
    checkBytes("open", path, bytes);
    long address;
    try {
      address = Jni.shmOpen0(path.toString(), bytes);
    } catch (NativeException e) {
      throw explainInvalid(e, path, bytes);
    }
    return new Segment(path, address, bytes, false);
  }

  /**
   * An anonymous segment of {@code bytes} (a multiple of the page size) to
   * hand to another process by its descriptor (same-host writes by
   * reference): a memfd, all of it reserved, sealed so that no holder of the
   * descriptor can shrink or grow it (a shrunk file would make this
   * process's loads fault with SIGBUS), mapped read-write. It has no path;
   * {@link Segment#takeDescriptor()} hands the descriptor over once, else
   * {@link Segment#close()} closes it.
   */
  public static Segment createSealed(long bytes) throws NativeException {
    HrdmaNative.ensureAvailable();
    checkBytes("create", null, bytes);
    int[] fd = {-1};
    long address = Jni.shmCreateSealed0(bytes, fd);
    Segment s;
    try {
      s = new Segment(null, address, bytes, true);
    } catch (NativeException | RuntimeException e) {
      Jni.shmCloseFd0(fd[0]);
      throw e;
    }
    s.fd.set(fd[0]);
    return s;
  }

  /** The system says only "Invalid argument" for a file that is too short or not a file. */
  private static NativeException explainInvalid(NativeException e, Path path, long bytes) {
    String why = null;
    if (e.status() == NativeException.ERR_INVALID && bytes > 0) {
      try {
        if (!Files.isRegularFile(path, LinkOption.NOFOLLOW_LINKS)) {
          why = "not a regular file";
        } else if (Files.size(path) < bytes) {
          why = "the file has " + Files.size(path) + " bytes";
        }
      } catch (IOException | RuntimeException gone) {
        // changed meanwhile: the message stays as it is
      }
    }
    if (why == null) {
      return e;
    }
    NativeException x = new NativeException(e.getMessage() + ": " + why, e.status());
    x.initCause(e);
    return x;
  }

  /**
   * Bytes mapped by segments of this process not closed yet; a leak check.
   * 0 when the library is not available (nothing is mapped then).
   */
  public static long mappedBytes() {
    return HrdmaNative.isAvailable() ? Jni.shmMappedBytes0() : 0;
  }

  private static void checkBytes(String verb, Path path, long bytes) throws NativeException {
    if (bytes > Integer.MAX_VALUE) {
      throw new NativeException(verb + " shared memory segment " + path + " (" + bytes
          + " bytes): larger than a ByteBuffer can cover", NativeException.ERR_INVALID);
    }
  }

  /**
   * A mapped segment. {@link #close()} is idempotent and thread-safe; after
   * it {@link #buffer()} and {@link #address()} throw
   * {@link IllegalStateException}, but buffers obtained before must not be
   * used any more (see {@link NativeShm}: that crashes the JVM).
   */
  public static final class Segment implements AutoCloseable {
    private final Path path;
    private final long address;
    private final long bytes;
    /** Over the whole mapping; only duplicated, never moved. */
    private final ByteBuffer buffer;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** The descriptor of a {@link NativeShm#createSealed} segment until handed over; else -1. */
    private final java.util.concurrent.atomic.AtomicInteger fd = new java.util.concurrent.atomic.AtomicInteger(-1);

    private Segment(Path path, long address, long bytes, boolean writable)
        throws NativeException {
      ByteBuffer b = null;
      try {
        b = Jni.directBuffer0(address, bytes);
      } finally {
        if (b == null) { // an exception is on its way, or JNI has no direct buffers
          Jni.shmUnmap0(address, bytes);
        }
      }
      if (b == null) {
        throw new NativeException("no direct buffer over shared memory segment " + path,
            NativeException.ERR_UNSUPPORTED);
      }
      this.path = path;
      this.address = address;
      this.bytes = bytes;
      this.buffer = writable ? b : b.asReadOnlyBuffer();
    }

    /**
     * A new buffer over the whole segment: position 0, limit
     * {@link #bytes()}, big-endian, read-only for a segment from
     * {@link NativeShm#open}. Must not be touched after {@link #close()}.
     */
    public ByteBuffer buffer() {
      checkOpen();
      return buffer.duplicate();
    }

    /** Address of the mapping (page aligned); read-only memory for an opened segment. */
    public long address() {
      checkOpen();
      return address;
    }

    public long bytes() {
      return bytes;
    }

    /** The file; null for a {@link NativeShm#createSealed} segment. */
    public Path path() {
      return path;
    }

    /**
     * The descriptor of a {@link NativeShm#createSealed} segment, once: from
     * now on the caller closes it (after passing it); -1 when there is none
     * (another segment, handed over already, or closed).
     */
    public int takeDescriptor() {
      return fd.getAndSet(-1);
    }

    /**
     * Frees the memory of a {@link NativeShm#createSealed} segment (holes punched over all of
     * it) before it is closed: a peer that still holds its descriptor or a mapping keeps none
     * of this process's memory (it reads zeros). The mapping stays valid.
     */
    public void discard() throws NativeException {
      checkOpen();
      if (buffer.isReadOnly()) {
        throw new NativeException("discard a read-only segment " + this, NativeException.ERR_INVALID);
      }
      int st = Jni.shmDiscard0(address, bytes);
      if (st < 0) {
        throw new NativeException("discard shared memory segment " + this + ": " + HrdmaNative.statusString(st), st);
      }
    }

    /** Closes a descriptor {@link #takeDescriptor()} handed out and that could not be passed on. */
    public static void closeDescriptor(int descriptor) {
      if (descriptor >= 0) {
        Jni.shmCloseFd0(descriptor);
      }
    }

    private void checkOpen() {
      if (closed.get()) {
        throw new IllegalStateException("shared memory segment " + path + " is closed");
      }
    }

    /**
     * Unmaps the segment, once; every buffer of it is then dead memory. No
     * checked exception: munmap of a mapping made here fails only on a bug.
     */
    @Override
    public void close() {
      if (closed.compareAndSet(false, true)) {
        closeDescriptor(fd.getAndSet(-1));
        int st = Jni.shmUnmap0(address, bytes);
        if (st < 0) {
          throw new IllegalStateException("unmap shared memory segment " + path + ": "
              + HrdmaNative.statusString(st));
        }
      }
    }

    @Override
    public String toString() {
      return (path == null ? "sealed segment" : path.toString()) + " (" + bytes + " bytes" + (buffer.isReadOnly() ? ", read-only)" : ")");
    }
  }
}
