package org.hdfsrdma.client;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.server.datanode.BlockMetadataHeader;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.nativelib.NativeFiles;

/**
 * A finalized replica on this host mapped read-only for zero-copy reads
 * ({@code read(ByteBufferPool, int, EnumSet<ReadOption>)}): the block file
 * from the chunk holding the first offset asked for to the replica's end (at
 * most 2 GiB, a ByteBuffer's reach) mapped from the descriptor the DataNode
 * passed ({@link ShortCircuitClient}), as stock's
 * {@code ShortCircuitReplica#getOrCreateClientMmap}. The slices it hands out
 * are read-only views of the page cache; their chunks are verified before
 * they are handed out unless the caller skips checksums or the DataNode
 * caches the replica (stock hands out mapped bytes only then, and verifies
 * nothing itself). Verified not on the mapping but on a private copy read
 * with pread(2) (against the range's sums, read from the .meta file when
 * mapped): a replica truncated in place faults on the mapping's pages past
 * its new end (SIGBUS), which the checksum code would not survive; a pread
 * only comes back short, an IOException. The slices handed out can still
 * fault when the caller touches them after such a truncate, as stock's
 * mapped reads: Java's buffer accesses turn the fault into an InternalError.
 *
 * <p>Verifying ahead: as a short-circuit reader's, the windows beyond the
 * slice being handed out go to the client's verifier (up to {@code ahead}
 * windows of {@code window} bytes), so their pages are faulted in and checked
 * on the other core while the caller works on the slice it has; a window the
 * verifier has not started when the caller reaches it is verified by the
 * caller. No slice is handed out before its chunks are verified.
 *
 * <p>Reference-counted: the stream holds one reference while it reads the
 * replica ({@link #detach()} gives it up after withdrawing or waiting for the
 * windows out with the verifier), each slice handed out holds one until it is
 * released; the files are unmapped when the last goes, so no slice and no
 * verifier ever touch unmapped memory however the stream and the caller
 * interleave. Not thread-safe (the stream's lock guards it); the verifier
 * only reads what the constructor set up.
 */
final class MappedReplica {
  /** Replicas mapped and not unmapped yet, process-wide (leak checks). */
  private static final AtomicLong OPEN = new AtomicLong();

  private final ExtendedBlock block;
  private final DatanodeInfo dn;
  private final String name;
  private final NativeFiles.Fd dataFd; // read with pread to verify; closed with the mapping
  private final NativeFiles.Mapping dataMap;
  private final ByteBuffer data; // [mapStart, mapEnd) of the block file; only sliced
  private final ByteBuffer sums; // direct: the sums of the chunks of [mapStart, mapEnd); never moved
  private final DataChecksum checksum;
  private final int bpc;
  private final long mapStart;
  private final long mapEnd;
  private final boolean cached;
  /** Chunk-aligned range of the block verified so far (one contiguous range: reads are sequential). */
  private long verifiedFrom;
  private long verifiedTo;
  private int refs = 1;
  private Executor verifier; // null: the caller verifies
  private int window;
  private int ahead;
  /** Windows handed to the verifier from {@link #verifiedTo} on, in block order. */
  private final ArrayDeque<Ahead> queued = new ArrayDeque<>();

  private MappedReplica(ExtendedBlock block, DatanodeInfo dn, NativeFiles.Fd dataFd, NativeFiles.Mapping dataMap,
      ByteBuffer sums, DataChecksum checksum, long mapStart, long mapEnd, boolean cached) {
    this.block = block;
    this.dn = dn;
    this.name = "replica " + block;
    this.dataFd = dataFd;
    this.dataMap = dataMap;
    this.data = dataMap.buffer();
    this.sums = sums;
    this.checksum = checksum;
    this.bpc = checksum.getBytesPerChecksum();
    this.mapStart = mapStart;
    this.mapEnd = mapEnd;
    this.cached = cached;
    this.verifiedFrom = mapStart;
    this.verifiedTo = mapStart;
    OPEN.incrementAndGet();
  }

  /**
   * Maps {@code f}'s replica (of {@code visibleLength} bytes) from the chunk
   * holding {@code offsetInBlock} on; takes {@code f} over (closed here if
   * this throws, else the .meta file at once and the block file with the mapping).
   */
  static MappedReplica map(ExtendedBlock block, DatanodeInfo dn, ShortCircuitClient.Fds f, long visibleLength, long offsetInBlock)
      throws IOException {
    NativeFiles.Mapping dm = null;
    try (NativeFiles.Fd metaFd = f.meta()) {
      if (offsetInBlock < 0 || offsetInBlock >= visibleLength) {
        throw new IOException("offset " + offsetInBlock + " is not in " + block + " of " + visibleLength + " bytes");
      }
      if (f.data().size() < visibleLength) {
        throw new IOException("the block file of " + block + " has " + f.data().size() + " bytes, " + visibleLength
            + " expected");
      }
      long metaSize = metaFd.size();
      if (metaSize < BlockMetadataHeader.getHeaderSize() || metaSize > Integer.MAX_VALUE) {
        throw new IOException("the .meta file of " + block + " has " + metaSize + " bytes");
      }
      DataChecksum c = LocalBlockReader.checksumOf(metaFd, block);
      int bpc = c.getBytesPerChecksum();
      long start = offsetInBlock / bpc * bpc;
      // whole chunks up to 2 GiB of mapping; the replica's last chunk may be short
      long end = Math.min(visibleLength, start + (long) (Integer.MAX_VALUE / bpc) * bpc);
      ByteBuffer sums = f.cached() ? ByteBuffer.allocate(0) : LocalBlockReader.sumsOf(metaFd, c, start, end, block);
      dm = LocalBlockReader.mapOf(f.data(), start, end - start, block);
      return new MappedReplica(block, dn, f.data(), dm, sums, c, start, end, f.cached());
    } catch (IOException | RuntimeException e) {
      if (dm != null) {
        dm.close();
      }
      f.data().close();
      throw e;
    }
  }

  ExtendedBlock block() {
    return block;
  }

  /** The DataNode whose replica this is. */
  DatanodeInfo datanode() {
    return dn;
  }

  /** Whether the DataNode caches the replica (no checksum work then). */
  boolean cached() {
    return cached;
  }

  /**
   * Lets {@code verifier} check up to {@code ahead} windows of
   * {@code windowBytes} (whole chunks) beyond what the caller reads.
   */
  MappedReplica verifyAhead(Executor verifier, int windowBytes, int ahead) {
    if (verifier != null && ahead > 0) {
      this.verifier = verifier;
      this.window = Math.max(1, windowBytes / bpc) * bpc;
      this.ahead = ahead;
    }
    return this;
  }

  /** Whether {@code offsetInBlock} lies in the mapped range. */
  boolean covers(long offsetInBlock) {
    return offsetInBlock >= mapStart && offsetInBlock < mapEnd;
  }

  /**
   * A read-only slice of at most {@code max} bytes from {@code offsetInBlock}
   * (which {@link #covers}), its chunks verified first unless {@code verify}
   * is false; the slice holds a reference until {@link #release()}.
   *
   * @throws org.apache.hadoop.fs.ChecksumException a chunk of the range is bad (nothing handed out)
   */
  ByteBuffer slice(long offsetInBlock, int max, boolean verify) throws IOException {
    if (refs <= 0) {
      throw new IllegalStateException(this + " is unmapped");
    }
    int n = (int) Math.min(max, mapEnd - offsetInBlock);
    if (verify) {
      verify(offsetInBlock, offsetInBlock + n);
    }
    ByteBuffer b = data.slice((int) (offsetInBlock - mapStart), n).asReadOnlyBuffer();
    refs++;
    return b;
  }

  /** Verifies the chunks of {@code [from, to)} not verified yet, then hands the windows beyond to the verifier. */
  private void verify(long from, long to) throws IOException {
    long a = from / bpc * bpc;
    long b = Math.min(mapEnd, (to + bpc - 1) / bpc * bpc);
    if (a >= verifiedFrom && b <= verifiedTo) {
      return;
    }
    if (a < verifiedFrom || a > verifiedTo) { // a seek: what was verified ahead is elsewhere
      withdrawAll();
      verifiedFrom = a;
      verifiedTo = a;
    }
    while (verifiedTo < b) {
      Ahead w = queued.peekFirst();
      if (w != null) {
        if (!w.verify()) { // the verifier has it: wait, it is one window's work
          w.await();
        }
        w.rethrow(); // stays queued: every later slice of it fails the same way
        queued.removeFirst();
        verifiedTo = w.to;
      } else {
        long end = Math.max(b, Math.min(mapEnd, verifiedTo + window));
        verifyChunks(verifiedTo, end);
        verifiedTo = end;
      }
    }
    long next = queued.isEmpty() ? verifiedTo : queued.peekLast().to;
    while (verifier != null && queued.size() < ahead && next < mapEnd) {
      Ahead w = new Ahead(next, Math.min(mapEnd, next + window));
      queued.addLast(w);
      next = w.to;
      try {
        verifier.execute(w);
      } catch (RejectedExecutionException e) {
        // the verifier is full or shut down: the caller verifies this window when it gets there
      }
    }
  }

  /** Reads {@code [a, b)} with pread into pooled buffers a piece at a time and verifies it there. */
  private void verifyChunks(long a, long b) throws IOException {
    LocalBlockReader.preadVerified(dataFd, a, b, checksum, sums, mapStart, name, block, null);
  }

  /** Takes back the windows the verifier has not started and waits for those it verifies. */
  private void withdrawAll() {
    for (Ahead w : queued) {
      if (w.withdraw() && verifier instanceof ThreadPoolExecutor pool) {
        pool.remove(w);
      }
    }
    for (Ahead w : queued) {
      w.await();
    }
    queued.clear();
  }

  /** A window verified by whichever thread starts it first. */
  private final class Ahead extends VerifyOnce {
    final long from;
    final long to;

    Ahead(long from, long to) {
      this.from = from;
      this.to = to;
    }

    @Override
    protected void check() throws IOException {
      try {
        verifyChunks(from, to);
      } catch (RuntimeException e) {
        throw new IOException(e);
      }
    }
  }

  /** The stream is done with the replica: windows taken back or waited for, then its reference dropped. */
  void detach() {
    withdrawAll();
    release();
  }

  /** Drops one reference; the last unmaps both files. */
  void release() {
    if (refs <= 0) {
      throw new IllegalStateException(this + " released more often than referenced");
    }
    if (--refs == 0) {
      dataMap.close();
      dataFd.close();
      OPEN.decrementAndGet();
    }
  }

  /** References held: the stream's and the slices out (tests). */
  int references() {
    return refs;
  }

  /** Replicas mapped for zero-copy reads and not unmapped yet, in this process. */
  static long open() {
    return OPEN.get();
  }

  @Override
  public String toString() {
    return "MappedReplica[" + block + ", [" + mapStart + ", " + mapEnd + ")" + (cached ? ", cached" : "") + "]";
  }
}
