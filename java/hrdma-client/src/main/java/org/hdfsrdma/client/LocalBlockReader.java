package org.hdfsrdma.client;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.server.datanode.BlockMetadataHeader;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeCrc32c;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.nativelib.NativeFiles;
import org.hdfsrdma.protocol.ChunkSums;

/**
 * A short-circuit read: a range of a finalized replica on this host read
 * straight from its block and .meta files, which the DataNode's plugin opened
 * and passed as descriptors over its Unix domain socket after checking the
 * block token ({@link ShortCircuitClient}): the client needs no permission
 * on the data directories and never learns a path. No DataNode thread and no
 * transport touch the bytes: the range's checksums are read from the .meta
 * file at once (its descriptor closed then), the block file is read a window
 * at a time with pread(2) into a private buffer of the reader
 * ({@link NativeFiles.Fd#read}, as stock's short-circuit reads read(2) into
 * their own buffers), its CRC32C chunks are verified there and the verified
 * bytes are copied into the caller's buffer. Not mapped: the DataNode may
 * truncate a finalized replica in place (an HDFS truncate), and a mapping's
 * pages past the new end fault with SIGBUS, which kills the JVM when the
 * checksum code (ISA-L or the JDK's intrinsic) touches them; a pread of a
 * truncated file only comes back short, which is an IOException here.
 *
 * <p>Verifying ahead: when the range spans more than one window and the
 * reader has a verifier (the client's small shared executor), up to
 * {@code ahead} windows beyond the one being read are handed to it, so the
 * mapping's pages are faulted in and checked on the other core while the
 * caller copies an already verified window out of the cache. A window the
 * verifier has not started when the caller reaches it is verified by the
 * caller itself (so a busy or shut-down verifier only costs the overlap);
 * while the verifier is on the window the caller needs, the caller verifies
 * the next one nobody has started, then waits for it: both cores verify when
 * the caller is the faster. No byte is handed out before its
 * window is verified, and the bytes handed out are the ones verified (the
 * private copy): a window that fails is the caller's
 * {@link ChecksumException} (at the bad chunk's position) when the caller
 * reaches it, not before, and again on every later read. {@link #close()}
 * withdraws the windows not started and waits for one being verified (a
 * window's work is bounded), then closes the block file's descriptor, so
 * nothing of the reader is in use afterwards and {@link NativeFiles#fdsHeld()}
 * is back where it was; a closed reader fails every read.
 *
 * <p>Direct reads (asked for by the client: {@code hrdma.client.read.local.direct}, on by
 * default): a read of at least {@link #DIRECT_MIN} at a chunk boundary, with nothing of a
 * window left to hand out, preads straight into the caller's buffer and verifies it there
 * ({@link #readDirect}: one copy instead of two), pieces of it taken by the verifier too;
 * windows are then made only for reads that need them.
 *
 * <p>Cold replicas ({@code hrdma.client.read.local.cold-direct}, off by default; with direct reads):
 * a range of at least depth x request bytes whose first chunk is not in the page cache at open (a
 * one-chunk read with RWF_NOWAIT comes back short), or the rest of a range after a direct read's
 * miss (from past what the kernel was asked to read ahead), is read with O_DIRECT requests kept in
 * flight ({@link ColdReadAhead}); each request's buffer is verified on the caller's thread and
 * copied out as a window is. Without O_DIRECT the windows read it, as before.
 *
 * <p>Reads whole chunks from the chunk holding the range's start, up to one
 * window per call (direct reads: up to the caller's length). Not thread-safe (the verifier only reads what the
 * constructor set up).
 */
final class LocalBlockReader implements BlockReader {
  /**
   * CRC32C chunks verified by libhrdma (ISA-L) where it is loaded: on this
   * chunk size (512 bytes) about a third faster than the JDK's intrinsic
   * called per chunk, on the reader's critical path or its verifier's.
   */
  static final boolean NATIVE_CRC = HrdmaNative.isAvailable();
  private final ExtendedBlock block;
  private final String name;    // for messages: the replica, never a path (the client knows none)
  private final NativeFiles.Fd data; // the block file, read with pread(2); closed by close()
  private final long mapStart;       // block offset of the range's first chunk
  private final ByteBuffer sums;     // the sums of the chunks of [mapStart, fileEnd), direct; never moved
  private ByteBuffer sumsPooled;     // the pooled buffer behind sums, given back by close(); null: none
  private final DataChecksum checksum;
  private final int bpc;
  private final int sumSize;
  private final long headerBytes;
  private final long end;       // block offset after the range
  private final long fileEnd;   // block offset after the last byte that may be read (chunk end or replica end)
  private final int window;
  private final Executor verifier; // null: the caller verifies every window
  private final int ahead;         // windows queued beyond the one being read
  private final boolean verify;    // false: the DataNode caches the replica or the stream skips checksums
  private final boolean direct;    // large aligned reads go straight into the caller's buffer (readDirect)
  private final Executor helper;   // takes half of a direct read (the verifier), or null
  private boolean directOff;       // a direct read met pages not in the page cache: windows from then on
  private final int piece;         // bytes of a direct read per native call (a window, within bounds)
  private final long readAhead;    // bytes the kernel is asked to read ahead of the windows made; 0: none
  private long advised;            // block offset up to which it was asked
  private final ColdReadAhead.Settings coldDirect; // O_DIRECT reads of a replica not in the page cache, or null
  private ColdReadAhead cold;      // reading the rest of the range with O_DIRECT, or null
  private boolean coldTried;       // cold was started (or could not be) once: not again
  private IOException coldFailure; // a cold window that failed verification: every later read's
  /** Windows made, not yet handed to the caller, in block order; the head is the next to read. */
  private final ArrayDeque<Window> queued = new ArrayDeque<>();
  private long nextWindow;      // block offset of the first window not made yet
  private ByteBuffer buf;       // the verified window being read, position = next to deliver
  private ByteBuffer bufOwned;  // the pooled buffer behind buf, given back when the next window is read
  private long pos;             // block offset of the next byte to deliver
  private boolean closed;

  /**
   * Takes {@code data} and {@code metaFd} over (closed here: the .meta file once the range's sums
   * are read, the block file by {@link #close()}; both if this throws).
   *
   * @param visibleLength the replica's length (the DataNode checked the replica has it)
   * @param windowBytes bytes verified (and at most handed out) at a time, rounded down to whole chunks
   * @param verifier where windows are read and verified ahead of the caller, or null
   * @param ahead windows the verifier may be given beyond the one being read (0: none)
   * @param verify whether to verify checksums; false for a replica the DataNode caches (it
   *     verified it when it cached it, and mlocked pages are not read from the disk again) and for
   *     a stream opened with verifyChecksum false (the range's sums are then not even read)
   * @param readAheadBytes how far beyond the windows made the kernel is asked to read the block file
   *     into the page cache (posix_fadvise WILLNEED), in steps of half of it: a cold file's pages are
   *     then on their way before the reader or the verifier reads them, several requests deep; 0: not asked
   * @throws IOException the files are not what they should be (too short, no checksums), or cannot be read
   */
  LocalBlockReader(ExtendedBlock block, NativeFiles.Fd data, NativeFiles.Fd metaFd, long visibleLength,
      long offsetInBlock, long length, int windowBytes, Executor verifier, int ahead, boolean verify,
      long readAheadBytes)
      throws IOException {
    this(block, data, metaFd, visibleLength, offsetInBlock, length, windowBytes, verifier, ahead, verify,
        readAheadBytes, false);
  }

  /**
   * As the constructor above; with {@code direct} (and libhrdma loaded, CRC32C sums or none to
   * verify) a large read at a chunk boundary reads the replica straight into the caller's buffer
   * and verifies it there ({@link #readDirect}), and windows are made only when a read needs them.
   */
  LocalBlockReader(ExtendedBlock block, NativeFiles.Fd data, NativeFiles.Fd metaFd, long visibleLength,
      long offsetInBlock, long length, int windowBytes, Executor verifier, int ahead, boolean verify,
      long readAheadBytes, boolean direct)
      throws IOException {
    this(block, data, metaFd, visibleLength, offsetInBlock, length, windowBytes, verifier, ahead, verify,
        readAheadBytes, direct, null);
  }

  /**
   * As the constructor above; with {@code coldDirect} (and direct reads) a range of at least
   * {@link #coldMin} bytes whose first chunk is not in the page cache, or one a direct read finds
   * not cached further on, is read from there with O_DIRECT ({@link ColdReadAhead}).
   */
  LocalBlockReader(ExtendedBlock block, NativeFiles.Fd data, NativeFiles.Fd metaFd, long visibleLength,
      long offsetInBlock, long length, int windowBytes, Executor verifier, int ahead, boolean verify,
      long readAheadBytes, boolean direct, ColdReadAhead.Settings coldDirect)
      throws IOException {
    try (metaFd) {
      if (offsetInBlock < 0 || length < 0 || offsetInBlock + length > visibleLength) {
        throw new IOException("range [" + offsetInBlock + ", " + (offsetInBlock + length) + ") is not in "
            + block + " of " + visibleLength + " bytes");
      }
      this.block = block;
      this.name = "replica " + block;
      this.headerBytes = BlockMetadataHeader.getHeaderSize();
      if (data.size() < visibleLength) {
        throw new IOException("the block file of " + block + " has " + data.size() + " bytes, " + visibleLength
            + " expected");
      }
      if (metaFd.size() < headerBytes || metaFd.size() > Integer.MAX_VALUE) {
        throw new IOException("the .meta file of " + block + " has " + metaFd.size() + " bytes");
      }
      checksum = checksumOf(metaFd, block);
      this.bpc = checksum.getBytesPerChecksum();
      this.sumSize = checksum.getChecksumSize();
      this.end = offsetInBlock + length;
      this.fileEnd = Math.min(visibleLength, (end + bpc - 1) / bpc * bpc);
      this.window = Math.max(1, windowBytes / bpc) * bpc;
      this.mapStart = offsetInBlock / bpc * bpc;
      if (verify && fileEnd > mapStart) {
        // pooled: a fresh direct buffer (1 MiB for a 128 MiB block) costs its zeroing and page
        // faults, then its freeing, once per block: more than reading the sums into it
        sumsPooled = WindowBuffers.take(sumsCapacity(checksum, mapStart, fileEnd));
        this.sums = sumsOf(metaFd, checksum, mapStart, fileEnd, block, sumsPooled);
      } else {
        this.sums = ByteBuffer.allocate(0);
      }
    } catch (IOException | RuntimeException e) {
      data.close();
      WindowBuffers.give(sumsPooled, SUMS_KEPT); // nothing of it handed out
      sumsPooled = null;
      throw e;
    }
    this.data = data;
    this.nextWindow = mapStart;
    this.advised = mapStart;
    this.readAhead = readAheadBytes;
    this.pos = offsetInBlock;
    // a range of one window is verified by the caller: handing it over would only add a wait
    this.verify = verify;
    // the verifier reads ahead even for a cached replica (no checksums): the copy is the work then
    boolean overlap = verifier != null && ahead > 0 && end - mapStart > window;
    this.verifier = overlap ? verifier : null;
    this.ahead = overlap ? ahead : 0;
    this.buf = ByteBuffer.allocate(0);
    this.direct = direct && NATIVE_CRC && (!verify || checksum.getChecksumType() == DataChecksum.Type.CRC32C);
    this.helper = this.direct ? verifier : null;
    // a window, whole chunks: at least DIRECT_PIECE_MIN (no tiny calls), at most what a call may pin
    this.piece = Math.max(1, Math.min(NativeFiles.Fd.READ_VERIFIED_MAX, Math.max(DIRECT_PIECE_MIN, window)) / bpc)
        * bpc;
    this.coldDirect = this.direct ? coldDirect : null;
    if (this.direct) {
      if (!startColdAtOpen()) {
        adviseAhead(); // the first range at once; the windows wait for a read that needs them
      }
    } else {
      queueWindows();
    }
  }

  /** The checksum a replica's .meta file declares (its header, read with pread). */
  static DataChecksum checksumOf(NativeFiles.Fd meta, ExtendedBlock block) throws IOException {
    ByteBuffer h = ByteBuffer.allocateDirect(BlockMetadataHeader.getHeaderSize());
    readFully(meta, 0, h, "the .meta file", block);
    return checksumOf(h.flip(), block);
  }

  /**
   * The sums of the chunks of {@code [from, to)} (from on a chunk boundary) in {@code meta},
   * read into a direct buffer of their own.
   */
  static ByteBuffer sumsOf(NativeFiles.Fd meta, DataChecksum c, long from, long to, ExtendedBlock block)
      throws IOException {
    return sumsOf(meta, c, from, to, block, null);
  }

  /**
   * As {@link #sumsOf(NativeFiles.Fd, DataChecksum, long, long, ExtendedBlock)}, into {@code into}
   * (direct, of at least {@link #sumsCapacity} bytes; null: a buffer of their own): the sums from
   * its index 0 on, its position 0 and its limit after them.
   */
  static ByteBuffer sumsOf(NativeFiles.Fd meta, DataChecksum c, long from, long to, ExtendedBlock block,
      ByteBuffer into) throws IOException {
    int bpc = c.getBytesPerChecksum();
    long chunks = (to - from + bpc - 1) / bpc;
    long at = BlockMetadataHeader.getHeaderSize() + from / bpc * c.getChecksumSize();
    long n = chunks * c.getChecksumSize();
    if (at + n > meta.size()) {
      throw new EOFException("the .meta file of " + block + " ends at " + meta.size() + ", before the sums of ["
          + from + ", " + to + ")");
    }
    ByteBuffer b = into == null ? ByteBuffer.allocateDirect((int) n) : into.clear().limit((int) n);
    readFully(meta, at, b, "the .meta file", block);
    return b.flip();
  }

  /** Pooled sums buffers kept per capacity ({@link WindowBuffers}): a few readers' worth. */
  static final int SUMS_KEPT = 8;

  /** The capacity of the pooled buffer for the sums of {@code [from, to)}: a power of two, at least 4 KiB. */
  static int sumsCapacity(DataChecksum c, long from, long to) {
    int bpc = c.getBytesPerChecksum();
    long n = (to - from + bpc - 1) / bpc * c.getChecksumSize();
    if (n > 1 << 30) {
      throw new IllegalArgumentException(n + " bytes of sums");
    }
    return Math.max(4096, Integer.highestOneBit((int) Math.max(1, n - 1)) << 1);
  }

  /** Bytes read and verified at a time by {@link #preadVerified} (a pooled buffer's). */
  static final int PIECE = 512 * 1024;

  /** Takes each piece {@link #preadVerified} verified: its bytes from 0 to its limit, at block offset {@code at}. */
  interface PieceSink {
    void take(ByteBuffer piece, long at);
  }

  /**
   * Reads {@code [from, to)} of a block file ({@code from} on a chunk boundary, {@code to} a chunk
   * boundary or the replica's end) with pread, about {@link #PIECE} bytes of whole chunks at a time
   * into a pooled private buffer, verifies each piece there against {@code sums} (whose first sum
   * is the chunk at {@code sumsFrom}) and hands it to {@code sink} (none: verify only). The bytes a
   * sink gets are the bytes verified: a file rewritten or truncated meanwhile changes nothing of them.
   */
  static void preadVerified(NativeFiles.Fd fd, long from, long to, DataChecksum checksum, ByteBuffer sums,
      long sumsFrom, String name, ExtendedBlock block, PieceSink sink) throws IOException {
    preadVerified(fd, from, to, checksum, sums, sumsFrom, name, block, sink, true);
  }

  /**
   * As {@link #preadVerified(NativeFiles.Fd, long, long, DataChecksum, ByteBuffer, long, String,
   * ExtendedBlock, PieceSink)}; with {@code verify} false the pieces are not checked against
   * {@code sums} (a stream opened with verifyChecksum false).
   */
  static void preadVerified(NativeFiles.Fd fd, long from, long to, DataChecksum checksum, ByteBuffer sums,
      long sumsFrom, String name, ExtendedBlock block, PieceSink sink, boolean verify) throws IOException {
    int bpc = checksum.getBytesPerChecksum();
    int sumSize = checksum.getChecksumSize();
    int piece = Math.max(1, PIECE / bpc) * bpc;
    ByteBuffer buf = WindowBuffers.take(piece);
    try {
      for (long at = from; at < to; at += piece) {
        int n = (int) Math.min(piece, to - at);
        ByteBuffer w = buf.clear().limit(n);
        readFully(fd, at, w.duplicate(), "the block file", block);
        if (verify) {
          int s = (int) ((at - sumsFrom) / bpc * sumSize);
          verifyChunks(checksum, sums.slice(s, (n + bpc - 1) / bpc * sumSize), w.duplicate(), at, name, block);
        }
        if (sink != null) {
          sink.take(w, at);
        }
      }
    } finally {
      WindowBuffers.give(buf);
    }
  }

  /**
   * Fills {@code dst} from {@code offset} of {@code fd} with pread: a short read means the file
   * was truncated under the reader (an IOException, never a fault).
   */
  static void readFully(NativeFiles.Fd fd, long offset, ByteBuffer dst, String what, ExtendedBlock block)
      throws IOException {
    int want = dst.remaining();
    int got;
    try {
      got = fd.read(offset, dst);
    } catch (NativeException e) {
      throw new IOException("cannot read [" + offset + ", " + (offset + want) + ") of " + what + " of " + block
          + ": " + e.getMessage(), e);
    }
    if (got < want) {
      throw new EOFException(what + " of " + block + " ends at " + (offset + got) + ", before " + (offset + want)
          + ": it was truncated while it was read");
    }
  }

  /** The checksum a .meta file's header (from its position) declares. */
  static DataChecksum checksumOf(ByteBuffer meta, ExtendedBlock block) throws IOException {
    byte[] h = new byte[BlockMetadataHeader.getHeaderSize()];
    meta.get(meta.position(), h);
    DataChecksum c = BlockMetadataHeader.readHeader(new DataInputStream(new ByteArrayInputStream(h))).getChecksum();
    if (c.getChecksumSize() == 0 || c.getBytesPerChecksum() <= 0) {
      throw new IOException("the .meta file of " + block + " holds no checksums (" + c + ")");
    }
    return c;
  }

  /** Whether this reader verifies checksums (false: the DataNode caches the replica, or the stream skips them). */
  boolean verifies() {
    return verify;
  }

  /** {@code [offset, offset + length)} of a replica file of {@code block}, mapped read-only. */
  static NativeFiles.Mapping mapOf(NativeFiles.Fd fd, long offset, long length, ExtendedBlock block)
      throws IOException {
    try {
      return fd.map(offset, length);
    } catch (NativeException e) {
      throw new IOException("cannot map [" + offset + ", " + (offset + length) + ") of a file of " + block + ": "
          + e.getMessage(), e);
    }
  }

  @Override
  public long remaining() {
    return end - pos;
  }

  /**
   * Makes windows until {@code ahead + 1} are queued (the next to read and
   * the ones beyond it) and hands them to the verifier.
   */
  private void queueWindows() {
    if (cold != null) {
      return; // O_DIRECT reads the rest (fill)
    }
    // in batches of half the lead: a verifier that keeps ahead is woken once per batch, not per window
    if (queued.size() > ahead + 1 - Math.max(1, (ahead + 1) / 2) || nextWindow >= end) {
      return;
    }
    long[] advice = adviseAhead();
    while (queued.size() <= ahead && nextWindow < end) {
      int n = (int) Math.min(window, fileEnd - nextWindow);
      Window w = new Window(nextWindow, n, advice);
      advice = null; // the first window made asks for it: the verifier when it takes the window
      queued.addLast(w);
      nextWindow += n;
      if (verifier != null) {
        try {
          verifier.execute(w);
        } catch (RejectedExecutionException e) {
          // the verifier is full or shut down: the caller verifies this window when it gets there
        }
      }
    }
  }

  /**
   * Keeps the kernel reading up to {@code readAhead} beyond the next window to make: the next
   * half is asked for once the part asked for and not yet reached is down to a half. The first
   * range (the constructor's) is asked for here, at once; later ones, with a verifier, are
   * returned for the first window made to ask for on the thread that verifies it (on warm data
   * the call only walks the page cache, better not on the caller's time). Null: nothing to ask.
   */
  private long[] adviseAhead() {
    if (readAhead <= 0 || advised >= fileEnd) {
      return null;
    }
    long to = Math.min(fileEnd, nextWindow + readAhead);
    if (to - advised >= readAhead / 2 || (to == fileEnd && to > advised)) {
      long from = advised;
      advised = to;
      if (verifier != null && nextWindow > mapStart) {
        return new long[] {from, to - from};
      }
      try {
        data.willNeed(from, to - from);
      } catch (NativeException e) { // advisory: the reader's faults read the file as before
        advised = fileEnd;
      }
    }
    return null;
  }

  /** Makes the next verified window {@link #buf}; false at the end of the range. */
  private boolean fill() throws IOException {
    if (cold != null && queued.isEmpty()) {
      if (nextWindow >= cold.first()) {
        return fillCold();
      }
      // up to where the O_DIRECT reads start: the part the kernel was asked to read ahead, through
      // the page cache on this thread
      int n = (int) Math.min(window, cold.first() - nextWindow);
      queued.addLast(new Window(nextWindow, n, null));
      nextWindow += n;
    }
    if (queued.isEmpty()) {
      queueWindows(); // none made yet, or dropped by a direct read
    }
    Window w = queued.peekFirst();
    if (w == null) {
      return false;
    }
    if (!w.verify() && !w.isVerified()) {
      // the verifier is on it: meanwhile verify the first window it has not started
      for (Window x : queued) {
        if (x.verify()) {
          break;
        }
      }
    }
    w.await();
    w.rethrow(); // it stays at the head: every later read fails the same way
    queued.removeFirst();
    WindowBuffers.give(bufOwned); // the caller has copied all it wanted of the last window
    bufOwned = w.data;
    buf = w.data.duplicate();
    // deliver from the range's start (the first window starts at its chunk) and no further than its end
    buf.limit((int) Math.min(buf.limit(), end - w.start));
    buf.position((int) (pos - w.start));
    queueWindows();
    return true;
  }

  /** Least bytes of a range (from where it is found cold) read with O_DIRECT: a full pipeline of requests. */
  private long coldMin() {
    return (long) coldDirect.depth() * coldDirect.requestBytes();
  }

  /** Chunks of a range looked for in the page cache before it is read with O_DIRECT. */
  static final int COLD_PROBES = 4;

  /**
   * Whether none of {@link #COLD_PROBES} chunks spread evenly over {@code [from, fileEnd)} (the
   * first at {@code from}) is in the page cache: a one-chunk read of each with RWF_NOWAIT comes back
   * short. A replica with some of it cached (read before, partly evicted since) is not cold: the
   * page cache serves what it holds.
   */
  private boolean coldFrom(long from) {
    byte[] one = new byte[bpc];
    long span = fileEnd - from;
    for (int i = 0; i < COLD_PROBES; i++) {
      long at = (from + span * i / COLD_PROBES) / bpc * bpc;
      int n = (int) Math.min(bpc, fileEnd - at);
      try {
        if (n > 0 && data.readVerified(at, one, 0, n, bpc, null) >= n) {
          return false;
        }
      } catch (NativeException | RuntimeException e) {
        return false; // cannot tell: the page cache, as before
      }
    }
    return true;
  }

  /**
   * At open: a range none of whose probed chunks is in the page cache ({@link #coldFrom}) is a
   * cold replica: O_DIRECT from the range's start, and no read-ahead asked of the kernel. False:
   * some of it is cached (or it cannot be told), or O_DIRECT is not to be had.
   */
  private boolean startColdAtOpen() {
    if (coldDirect == null || fileEnd - mapStart < coldMin() || !coldFrom(mapStart)) {
      return false;
    }
    startCold(mapStart);
    if (cold == null) {
      return false;
    }
    directOff = true; // every read copies out of the O_DIRECT windows
    return true;
  }

  /**
   * Starts the O_DIRECT reads of the rest of the range from {@code from} (a chunk boundary) or from
   * where the kernel was asked to read ahead up to, whichever is later, once per reader, where
   * enough is left and none of it is cached ({@link #coldFrom}); no more read-ahead is asked of the
   * kernel then. Without O_DIRECT (counted in {@link ColdReadAhead#fallbacks()}) the windows go on
   * as before.
   */
  private void startCold(long from) {
    if (coldDirect == null || coldTried) {
      return;
    }
    coldTried = true;
    long start = Math.max(from, Math.min(advised, fileEnd));
    if (fileEnd - start < coldMin() || (start > mapStart && !coldFrom(start))) {
      return;
    }
    cold = ColdReadAhead.open(data, start, fileEnd, bpc, coldDirect, name);
    if (cold != null) {
      advised = fileEnd;
    }
  }

  /**
   * Makes the next O_DIRECT window {@link #buf}, verified; false at the end of the range. A window
   * that fails verification is this and every later read's ChecksumException (nothing of it handed
   * out); a request that fails sends the reader back to the page cache from where it is (counted as
   * a fallback), where the failure shows again if it is the file's.
   */
  private boolean fillCold() throws IOException {
    if (coldFailure != null) {
      throw coldFailure;
    }
    ByteBuffer w;
    try {
      w = cold.next();
    } catch (EOFException e) {
      throw e; // truncated under the reader: as the windows say it
    } catch (IOException e) {
      cold.close();
      cold = null;
      ColdReadAhead.countFallback();
      advised = nextWindow;
      return fill();
    }
    long start = cold.start();
    if (w == null || start >= end) {
      return false;
    }
    if (verify) {
      long from = Math.max(start, mapStart); // a chunk boundary: the O_DIRECT reads start on one
      int skip = (int) (from - start);
      ByteBuffer v = w.duplicate().position(skip);
      if (v.hasRemaining()) {
        int s = (int) ((from - mapStart) / bpc * sumSize);
        try {
          verifyChunks(checksum, sums.slice(s, (v.remaining() + bpc - 1) / bpc * sumSize), v, from, name, block);
        } catch (IOException e) {
          coldFailure = e;
          throw e;
        }
      }
    }
    WindowBuffers.give(bufOwned); // the caller has copied all it wanted of the last window
    bufOwned = null;
    nextWindow = start + w.limit();
    buf = w;
    buf.limit((int) Math.min(buf.limit(), end - start));
    buf.position((int) (pos - start));
    return true;
  }

  private void checkOpen() throws IOException {
    if (closed) {
      throw new IOException(this + " is closed");
    }
  }

  /** A window of the range: read and its chunks verified by whichever thread runs it first. */
  final class Window extends VerifyOnce {
    final long start;
    final int length;
    final ByteBuffer data; // private (pooled) and direct: the bytes read and verified, never moved
    private final long[] advice; // {file offset, length} to ask the kernel to read first, or null

    Window(long start, int length, long[] advice) {
      this.start = start;
      this.length = length;
      this.data = WindowBuffers.take(window).limit(length);
      this.advice = advice;
    }

    @Override
    protected void check() throws IOException {
      if (advice != null) {
        try {
          LocalBlockReader.this.data.willNeed(advice[0], advice[1]);
        } catch (NativeException e) {
          // advisory: reads fetch the file as before
        }
      }
      readFully(LocalBlockReader.this.data, start, data.duplicate(), "the block file", block);
      if (verify) {
        int s = (int) ((start - mapStart) / bpc * sumSize);
        verifyChunks(checksum, sums.slice(s, (length + bpc - 1) / bpc * sumSize), data.duplicate(), start, name,
            block);
      }
    }
  }

  /**
   * Verifies {@code w} (whole chunks from block offset {@code at}, the
   * replica's last chunk may be short; private memory, never a mapping of the
   * file: the checksum code is not protected against faults) against
   * {@code sums} (exactly its chunks' sums, private too) of
   * {@code checksum}'s type. CRC32C (what HDFS writes) runs on libhrdma's
   * ISA-L where it is loaded, else the JDK's intrinsic; other checksum types
   * go to Hadoop's. Runs on any thread.
   */
  static void verifyChunks(DataChecksum checksum, ByteBuffer sums, ByteBuffer w, long at, String name,
      ExtendedBlock block) throws IOException {
    int bpc = checksum.getBytesPerChecksum();
    int sumSize = checksum.getChecksumSize();
    int n = w.remaining();
    int chunks = (n + bpc - 1) / bpc;
    if (sums.remaining() != chunks * sumSize) {
      throw new IllegalArgumentException(sums.remaining() + " bytes of sums for " + chunks + " chunks");
    }
    boolean crc32c = checksum.getChecksumType() == DataChecksum.Type.CRC32C;
    if (crc32c && w.isDirect() && sums.isDirect() && NATIVE_CRC) {
      long bad;
      try {
        bad = NativeCrc32c.verify(w, bpc, sums);
      } catch (NativeException e) {
        throw new IOException("cannot verify [" + at + ", " + (at + n) + ") of " + block + ": " + e.getMessage(), e);
      }
      if (bad < 0) {
        return;
      }
      // the message as the JDK's CRC32C makes it, from the bad chunk on
      int c = (int) (bad / bpc);
      ChunkSums.verify(checksum, w.slice(w.position() + c * bpc, n - c * bpc), sums.slice(c * sumSize,
          (chunks - c) * sumSize), name, at + (long) c * bpc);
      throw new ChecksumException("Checksum CRC32C not matched for file " + name + " at position " + (at + bad)
          + " (libhrdma)", at + bad);
    }
    // a DataChecksum has state of its own: one per window (windows may be verified at once)
    DataChecksum dc = crc32c ? checksum : DataChecksum.newDataChecksum(checksum.getChecksumType(), bpc);
    ChunkSums.verify(dc, w, sums, name, at);
  }

  /** Smallest read taken straight into the caller's buffer; smaller ones copy out of windows. */
  static final int DIRECT_MIN = 64 * 1024;
  /** Bytes read and verified straight into callers' buffers (process-wide; tests and benchmarks). */
  private static final LongAdder DIRECT_BYTES = new LongAdder();
  /** Direct reads that met pages not in the page cache, after which their readers went on with windows (tests). */
  private static final LongAdder DIRECT_MISSES = new LongAdder();

  /** Pieces of direct reads the helper took (process-wide; tests and benchmarks). */
  private static final LongAdder DIRECT_HELPED = new LongAdder();

  static long directPiecesHelped() {
    return DIRECT_HELPED.sum();
  }

  static long directBytes() {
    return DIRECT_BYTES.sum();
  }

  static long directMisses() {
    return DIRECT_MISSES.sum();
  }

  /**
   * How much of a read of {@code len} bytes at the position goes straight into the caller's buffer:
   * whole chunks from a chunk boundary (or up to the replica's last byte), at least
   * {@link #DIRECT_MIN}, nothing left of a window to hand out first; 0: the windows serve it.
   */
  private int directLength(int len) {
    if (!direct || directOff || closed || buf.hasRemaining() || len < DIRECT_MIN || pos % bpc != 0) {
      return 0;
    }
    long n = Math.min(len, end - pos);
    if (pos + n != fileEnd) {
      n = n / bpc * bpc;
    }
    return n >= DIRECT_MIN ? (int) n : 0;
  }

  /**
   * Reads {@code n} bytes at the position into {@code b} (or {@code bb}, direct) from {@code off},
   * verifying them there, and moves the position past them. Windows made ahead are dropped (a
   * reader that keeps reading large is served without them). The read goes to libhrdma in pieces
   * of a window ({@link #piece}: 512 KiB by default): pread of what the page cache holds, then
   * ISA-L's CRC32C of it, a heap array pinned for that piece only. A read of more than one piece is
   * shared with the helper (the verifier): both take the next piece not taken until none is left,
   * so the helper does as much as it has time for (none if it does not start before the caller is
   * done), and the call returns only when both are done with the buffer. Pages not in the page cache (a
   * cold or evicted replica) are read as the windows read them, on this thread, and the rest of the
   * block goes through the windows (verified and read ahead by the verifier). On a checksum
   * failure the exception is the windows' (message, position: the first bad chunk); the caller's
   * buffer then holds what was read, as after stock's FSInputChecker.
   */
  private void readDirect(byte[] b, ByteBuffer bb, int off, int n) throws IOException {
    dropWindows();
    nextWindow = pos + n; // read-ahead asked for beyond this read
    long[] advice = adviseAhead();
    nextWindow = pos;     // no window made: a later read's start here until this one is done
    DirectRead r = new DirectRead(b, bb, off, n, pos);
    DirectHelp help = helper != null && r.pieces > 1 ? new DirectHelp(r, advice) : null;
    if (help != null) {
      try {
        helper.execute(help);
      } catch (RejectedExecutionException e) {
        help = null; // the verifier is full or shut down: this thread reads it all
      }
    }
    if (help == null && advice != null) {
      willNeed(advice);
    }
    r.take();
    if (help != null) {
      if (help.withdraw()) {
        unqueue(help); // not started: its queued entry would do nothing
        if (advice != null) {
          willNeed(advice);
        }
      } else {
        help.await(); // the buffer and the descriptor are the caller's alone after this
      }
    }
    r.finish();
    DIRECT_BYTES.add(r.direct);
    if (directOff) {
      DIRECT_MISSES.increment();
    }
    pos += n;
    nextWindow = pos;
  }

  /** Least bytes of a direct read per native call. */
  static final int DIRECT_PIECE_MIN = 128 * 1024;


  private void unqueue(Runnable r) {
    if (helper instanceof ThreadPoolExecutor pool) {
      pool.remove(r);
    }
  }

  private void willNeed(long[] advice) {
    try {
      data.willNeed(advice[0], advice[1]);
    } catch (NativeException e) {
      // advisory: reads fetch the file as before
    }
  }

  /** Withdraws the windows made and not handed out (waits for one being verified), gives their buffers back. */
  private void dropWindows() {
    for (Window w : queued) {
      if (w.withdraw()) {
        unqueue(w);
      }
    }
    for (Window w : queued) {
      w.await();
      WindowBuffers.give(w.data);
    }
    queued.clear();
    WindowBuffers.give(bufOwned); // nothing of it left to hand out
    bufOwned = null;
    buf = ByteBuffer.allocate(0);
  }
  /** The helper's share of a direct read: pieces not taken yet, and the read-ahead advice. */
  private final class DirectHelp extends VerifyOnce {
    private final DirectRead read;
    private final long[] advice;

    DirectHelp(DirectRead read, long[] advice) {
      this.read = read;
      this.advice = advice;
    }

    @Override
    protected void check() {
      DIRECT_HELPED.add(read.take());
      if (advice != null) {
        willNeed(advice); // after the pieces: the caller waits for those, not for this
      }
    }
  }

  /**
   * A direct read: {@code [at, at + n)} of the block into {@code b} (or {@code bb}) from {@code off},
   * in pieces that the caller and the helper take in turn ({@link #take()}); what a piece found is
   * kept for {@link #finish()}, on the caller's thread.
   */
  private final class DirectRead {
    private final byte[] b;
    private final ByteBuffer bb;
    private final int off;
    private final int n;
    private final long at;
    final int pieces;
    private final AtomicInteger next = new AtomicInteger();
    private final int[] done;          // bytes of each piece read and verified by take()
    private final Throwable[] failure; // what each piece threw
    private volatile boolean stop;     // a piece failed or met pages not cached: take no more
    private long direct;               // bytes read and verified by take(), summed by finish()

    DirectRead(byte[] b, ByteBuffer bb, int off, int n, long at) {
      this.b = b;
      this.bb = bb;
      this.off = off;
      this.n = n;
      this.at = at;
      this.pieces = (n + piece - 1) / piece;
      this.done = new int[pieces];
      this.failure = new Throwable[pieces];
    }

    private int length(int i) {
      return Math.min(piece, n - i * piece);
    }

    /** Reads and verifies pieces until none is left (or one failed or missed the page cache); how many it took. */
    int take() {
      int taken = 0;
      for (int i; !stop && (i = next.getAndIncrement()) < pieces; taken++) {
        try {
          done[i] = piece(i);
          if (done[i] < length(i)) {
            stop = true;
          }
        } catch (Throwable t) {
          failure[i] = t;
          stop = true;
        }
      }
      return taken;
    }

    private int piece(int i) throws IOException {
      int k = length(i);
      int o = off + i * piece;
      long from = at + (long) i * piece;
      ByteBuffer s = verify ? sums.slice((int) ((from - mapStart) / bpc * sumSize), (k + bpc - 1) / bpc * sumSize)
          : null;
      long r;
      try {
        r = b != null ? data.readVerified(from, b, o, k, bpc, s)
            : data.readVerified(from, bb.duplicate().position(o).limit(o + k), bpc, s);
      } catch (NativeException e) {
        throw new IOException("cannot read [" + from + ", " + (from + k) + ") of the block file of " + block + ": "
            + e.getMessage(), e);
      }
      if (r <= -2) {
        throw badChunk(o, from, k, s, -2 - r);
      }
      return r < k ? (int) (r / bpc * bpc) : k; // short: the whole chunks read were verified
    }

    /** The windows' exception for the chunk at {@code bad} of the piece {@code [from, from + k)} at {@code o}. */
    private ChecksumException badChunk(int o, long from, int k, ByteBuffer s, long bad) throws ChecksumException {
      int c = (int) (bad / bpc);
      ByteBuffer w = b != null ? ByteBuffer.wrap(b, o + c * bpc, k - c * bpc).slice()
          : bb.duplicate().position(o + c * bpc).limit(o + k).slice();
      int chunks = (k + bpc - 1) / bpc;
      // the message as the JDK's CRC32C makes it, from the bad chunk on (as verifyChunks)
      ChunkSums.verify(checksum, w, s.slice(c * sumSize, (chunks - c) * sumSize), name, from + (long) c * bpc);
      return new ChecksumException("Checksum CRC32C not matched for file " + name + " at position " + (from + bad)
          + " (libhrdma)", from + bad);
    }

    /**
     * On the caller's thread, once nobody takes pieces: in block order, the first failure is thrown;
     * what the page cache did not hold (or a piece nobody took after a miss) is read as the windows
     * read it, and the rest of the block is left to them.
     */
    void finish() throws IOException {
      for (int i = 0; i < pieces; i++) {
        Throwable t = failure[i];
        if (t instanceof IOException e) {
          throw e;
        }
        if (t instanceof RuntimeException e) {
          throw e;
        }
        if (t instanceof Error e) {
          throw e;
        }
        direct += done[i];
        if (done[i] < length(i)) {
          directOff = true;
          startCold(at + n); // the rest of the range, beyond what the kernel was asked to read ahead
          int base = off + i * piece + done[i];
          long from = at + (long) i * piece + done[i];
          preadVerified(data, from, at + (long) i * piece + length(i), checksum, sums, mapStart, name, block,
              (piece, p) -> {
                int o = base + (int) (p - from);
                if (b != null) {
                  piece.get(piece.position(), b, o, piece.remaining());
                } else {
                  bb.put(o, piece, piece.position(), piece.remaining());
                }
              }, verify);
        }
      }
    }
  }

  private boolean ensure() throws IOException {
    checkOpen();
    while (!buf.hasRemaining()) {
      if (!fill()) { // a window may hold nothing of the range: an empty range not on a chunk boundary
        return false;
      }
    }
    return true;
  }

  @Override
  public int read(ByteBuffer dst) throws IOException {
    if (!dst.hasRemaining()) {
      checkOpen();
      return 0;
    }
    int d = directLength(dst.remaining());
    if (d > 0 && (dst.isDirect() || dst.hasArray()) && !dst.isReadOnly()) {
      checkOpen();
      int p = dst.position();
      if (dst.isDirect()) {
        readDirect(null, dst.duplicate().limit(p + d), p, d);
      } else {
        readDirect(dst.array(), null, dst.arrayOffset() + p, d);
      }
      dst.position(p + d);
      return d;
    }
    if (!ensure()) {
      return -1;
    }
    int n = Math.min(dst.remaining(), buf.remaining());
    dst.put(dst.position(), buf, buf.position(), n);
    dst.position(dst.position() + n);
    buf.position(buf.position() + n);
    pos += n;
    return n;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    if (len == 0) {
      checkOpen();
      return 0;
    }
    int d = directLength(len);
    if (d > 0) {
      java.util.Objects.checkFromIndexSize(off, len, b.length);
      checkOpen();
      readDirect(b, null, off, d);
      return d;
    }
    if (!ensure()) {
      return -1;
    }
    int n = Math.min(len, buf.remaining());
    buf.get(b, off, n);
    pos += n;
    return n;
  }

  @Override
  public void readFully(byte[] b, int off, int len) throws IOException {
    int done = 0;
    while (done < len) {
      int n = read(b, off + done, len - done);
      if (n < 0) {
        throw new EOFException("the range of " + block + " ended " + (len - done) + " bytes early");
      }
      done += n;
    }
  }

  /** The pooled buffer the range's sums were read into, null when none (tests). */
  ByteBuffer pooledSums() {
    return sumsPooled;
  }

  /** The windows queued beyond what was handed out (tests). */
  java.util.List<Window> queuedWindows() {
    return java.util.List.copyOf(queued);
  }

  /**
   * Withdraws the windows the verifier has not started, waits for those it is
   * verifying, gives their buffers back and closes the block file. Idempotent.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (Window w : queued) {
      if (w.withdraw() && verifier instanceof ThreadPoolExecutor pool) {
        pool.remove(w); // let go of it now rather than when the verifier dequeues it
      }
    }
    for (Window w : queued) {
      w.await();
      WindowBuffers.give(w.data);
    }
    queued.clear();
    buf = ByteBuffer.allocate(0);
    WindowBuffers.give(bufOwned);
    bufOwned = null;
    if (cold != null) {
      cold.close(); // waits for its requests in flight
      cold = null;
    }
    // no thread uses the descriptor or the buffers any more: windows withdrawn or done, direct
    // and O_DIRECT reads done before they returned
    WindowBuffers.give(sumsPooled, SUMS_KEPT);
    sumsPooled = null;
    data.close();
  }

  @Override
  public String toString() {
    return "LocalBlockReader[" + block + "]";
  }
}
