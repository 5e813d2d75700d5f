package org.hdfsrdma.client;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.server.datanode.BlockMetadataHeader;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.nativelib.NativeFiles;
import org.hdfsrdma.protocol.ChunkSums;

/**
 * Finalized replicas of this host kept open for positional reads, as stock's
 * short-circuit cache keeps replicas' streams: the first positional read of a
 * replica asks its DataNode for the files (token checked, descriptors passed),
 * reads the whole .meta file's sums and closes its descriptor, and keeps the
 * block file's; later positional reads of it, from any thread, read the chunks
 * they touch with pread(2) into a private buffer, verify them there and copy
 * them out, with no exchange and no descriptor of their own. Not mapped: a
 * replica truncated in place (an HDFS truncate) faults on a mapping's pages
 * past its new end (SIGBUS), which the checksum code would not survive; a
 * pread only comes back short, an IOException.
 *
 * <p>Keyed by DataNode, block and generation stamp, so a replica appended to
 * or truncated since (a new generation stamp) is asked for again. At most
 * {@code capacity} replicas; the least recently used beyond that, and those
 * unused for {@code expiryMs}, are dropped. A replica's descriptor is closed once
 * dropped and no read holds it (reference counted), so a read never sees it
 * go. A replica whose read failed (checksum, a short read because the file
 * shrank) is dropped at once: the next read asks the DataNode again.
 *
 * <p>A replica does not outlive the run of the DataNode that gave it: stock's
 * short-circuit cache learns of a DataNode's exit when it closes the shared
 * memory segment (its slots turn invalid, the next read asks again, with the
 * stream's token). Ours notes which socket file of the DataNode's plugin it
 * was asked at (file key and modification time; a restarted plugin binds a
 * new one, a stopped one removes it) and, on a hit, checks that file at most
 * every {@value #SERVER_CHECK_MS} ms: another file, or none, drops the replica
 * and the read asks the DataNode listening now.
 *
 * <p>Thread-safe.
 */
final class LocalReplicas implements AutoCloseable {
  /** Key of a cached replica. */
  record Key(String datanodeUuid, String pool, long blockId, long genStamp, long length) {
    static Key of(String datanodeUuid, ExtendedBlock b, long length) {
      return new Key(datanodeUuid, b.getBlockPoolId(), b.getBlockId(), b.getGenerationStamp(), length);
    }
  }

  /** Opens a replica's files (the short-circuit exchange). */
  interface Opener {
    ShortCircuitClient.Fds open() throws IOException;
  }

  /** How often a hit checks that the DataNode's plugin serving its socket is the one the replica came from. */
  static final long SERVER_CHECK_MS = 100;

  /**
   * Which socket file a DataNode's plugin bound: its file key (device and inode, which a new
   * file may reuse) and its modification time (when it was bound) tell two apart.
   */
  private record SocketFile(Object fileKey, FileTime bound) {
  }

  /** The last look at a socket path: when, and the file there (null: none). */
  private record ServerProbe(long atNanos, SocketFile server) {
  }

  /** By socket path. */
  private final ConcurrentHashMap<String, ServerProbe> probes = new ConcurrentHashMap<>();
  private final AtomicLong serverChanged = new AtomicLong();

  private final int capacity;
  private final long expiryNanos;
  /** Access order: the eldest is the least recently used. Guarded by this. */
  private final LinkedHashMap<Key, Replica> map = new LinkedHashMap<>(16, 0.75f, true);
  private final AtomicLong sumBytes = new AtomicLong();
  private final AtomicLong filesOpen = new AtomicLong();
  private final AtomicLong opened = new AtomicLong();
  private final AtomicLong hits = new AtomicLong();
  private final AtomicLong stale = new AtomicLong();
  private boolean closed; // guarded by this

  LocalReplicas(int capacity, long expiryMs) {
    this.capacity = capacity;
    this.expiryNanos = expiryMs * 1_000_000L;
  }

  /** Whether the replica of {@code key} is kept now (not counted as a use). */
  synchronized boolean holds(Key key) {
    return map.containsKey(key);
  }

  /** Whether replicas are cached at all (capacity above 0). */
  boolean enabled() {
    return capacity > 0;
  }

  /**
   * The replica of {@code key}, retained (the caller {@link Replica#release()}s
   * it): cached, or opened with {@code opener} and cached.
   */
  Replica acquire(Key key, ExtendedBlock block, String socketPath, Opener opener) throws IOException {
    return acquire(key, block, socketPath, opener, null);
  }

  /**
   * As {@link #acquire(Key, ExtendedBlock, String, Opener)}; {@code hit[0]} tells whether it
   * was cached. {@code socketPath}: the DataNode's short-circuit socket {@code opener} asks at.
   */
  private Replica acquire(Key key, ExtendedBlock block, String socketPath, Opener opener, boolean[] hit)
      throws IOException {
    long now = System.nanoTime();
    SocketFile server = serverAt(socketPath, now);
    List<Replica> drop = null;
    synchronized (this) {
      if (closed) {
        throw new IOException("the client's replica cache is closed");
      }
      Replica r = map.get(key);
      if (r != null && now - r.lastUsed > expiryNanos) {
        map.remove(key);
        drop = List.of(r);
        r = null;
      } else if (r != null && (server == null || !server.equals(r.server) || !socketPath.equals(r.socketPath))) {
        // the DataNode restarted (or stopped) since it gave this replica: ask the one there now
        map.remove(key);
        drop = List.of(r);
        r = null;
        serverChanged.incrementAndGet();
      }
      if (r != null && r.retain()) {
        r.lastUsed = now;
        hits.incrementAndGet();
        if (hit != null) {
          hit[0] = true;
        }
        return r;
      }
    }
    releaseAll(drop);
    // the file looked at before the exchange: should the plugin restart meanwhile, the next hit asks again
    SocketFile before = serverAt(socketPath, System.nanoTime(), true);
    Replica fresh;
    ShortCircuitClient.Fds f = opener.open();
    try (NativeFiles.Fd meta = f.meta()) {
      fresh = new Replica(key, block, f.data(), meta, socketPath, before); // keeps the block file open
    }
    opened.incrementAndGet();
    fresh.retain(); // the caller's reference; the cache holds the first
    fresh.lastUsed = now;
    Replica old;
    synchronized (this) {
      if (closed) {
        fresh.release();
        fresh.release();
        throw new IOException("the client's replica cache is closed");
      }
      old = map.put(key, fresh); // another thread's copy of the same replica: this one replaces it
      drop = evict(now);
    }
    if (old != null && old != fresh) {
      old.release();
    }
    releaseAll(drop);
    return fresh;
  }

  /** Which socket file is at {@code path} (looked at again after {@value #SERVER_CHECK_MS} ms); null: none. */
  private SocketFile serverAt(String path, long now) {
    return serverAt(path, now, false);
  }

  private SocketFile serverAt(String path, long now, boolean fresh) {
    ServerProbe p = probes.get(path);
    if (!fresh && p != null && now - p.atNanos() < SERVER_CHECK_MS * 1_000_000L) {
      return p.server();
    }
    SocketFile server;
    try {
      BasicFileAttributes a = Files.readAttributes(Path.of(path), BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      server = new SocketFile(a.fileKey(), a.lastModifiedTime());
    } catch (IOException e) {
      server = null; // nothing there: the DataNode's plugin is not serving
    }
    probes.put(path, new ServerProbe(now, server));
    return server;
  }

  /** Cached replicas dropped because their DataNode restarted or stopped since it gave them. */
  long serverChanges() {
    return serverChanged.get();
  }

  /** Beyond capacity, or unused too long: out of the map (caller releases them outside the lock). */
  private List<Replica> evict(long now) {
    List<Replica> out = null;
    Iterator<Replica> it = map.values().iterator();
    while (it.hasNext()) {
      Replica r = it.next();
      if (map.size() > capacity || now - r.lastUsed > expiryNanos) {
        it.remove();
        if (out == null) {
          out = new ArrayList<>();
        }
        out.add(r);
      } else {
        break; // access order: the rest were used later
      }
    }
    return out;
  }

  private static void releaseAll(List<Replica> rs) {
    if (rs != null) {
      rs.forEach(Replica::release);
    }
  }

  /** Drops {@code r} from the cache (its read failed); closed once no read holds it. */
  void invalidate(Replica r) {
    boolean removed;
    synchronized (this) {
      removed = map.remove(r.key, r);
    }
    if (removed) {
      r.release();
    }
  }

  /** Drops every cached replica (each closed once no read holds it). */
  void clear() {
    List<Replica> all;
    synchronized (this) {
      all = new ArrayList<>(map.values());
      map.clear();
    }
    releaseAll(all);
  }

  /** The keys of the replicas in the cache (tests). */
  synchronized List<Key> keys() {
    return List.copyOf(map.keySet());
  }

  /** Replicas in the cache. */
  synchronized int size() {
    return map.size();
  }

  /** Bytes of sums held by cached replicas and by dropped ones reads still hold. */
  long sumBytes() {
    return sumBytes.get();
  }

  /** Block files held open by cached replicas and by dropped ones reads still hold. */
  long filesOpen() {
    return filesOpen.get();
  }

  /** Replicas opened (short-circuit exchanges made) for positional reads. */
  long opened() {
    return opened.get();
  }

  /** Cached replicas that failed a checksum and were asked for again before the failure counted. */
  long staleRetries() {
    return stale.get();
  }

  /** Positional reads served by a replica already cached. */
  long hits() {
    return hits.get();
  }

  @Override
  public void close() {
    synchronized (this) {
      closed = true;
    }
    clear();
  }

  /**
   * A replica's block file (its visible length), open, and the sums of its
   * chunks, read from its .meta file. Reads run concurrently: pread into
   * buffers of their own.
   */
  final class Replica {
    final Key key;
    private final ExtendedBlock block;
    private final String name; // for messages: the replica, never a path
    private final NativeFiles.Fd dataFd;
    private final ByteBuffer sums; // direct, every chunk's sum; never moved: read by slices
    private final DataChecksum checksum;
    private final int bpc;
    private final int sumSize;
    private final long length;
    /** The DataNode's short-circuit socket it came from, and which file was there ({@link #serverAt}). */
    private final String socketPath;
    private final SocketFile server;
    /** The cache's reference plus one per read in progress; closed at 0. */
    private final AtomicInteger refs = new AtomicInteger(1);
    private volatile long lastUsed;

    /** Takes {@code dataFd} over (closed with the replica, or here if this throws); the caller closes {@code metaFd}. */
    private Replica(Key key, ExtendedBlock block, NativeFiles.Fd dataFd, NativeFiles.Fd metaFd, String socketPath,
        SocketFile server) throws IOException {
      this.key = key;
      this.socketPath = socketPath;
      this.server = server;
      this.block = block;
      this.name = "replica " + block;
      this.length = key.length();
      try {
        if (length < 1 || length > Integer.MAX_VALUE) {
          throw new IOException(block + " of " + length + " bytes is not kept open");
        }
        if (dataFd.size() < length) {
          throw new IOException("the block file of " + block + " has " + dataFd.size() + " bytes, " + length
              + " expected");
        }
        if (metaFd.size() < BlockMetadataHeader.getHeaderSize() || metaFd.size() > Integer.MAX_VALUE) {
          throw new IOException("the .meta file of " + block + " has " + metaFd.size() + " bytes");
        }
        this.checksum = LocalBlockReader.checksumOf(metaFd, block);
        this.bpc = checksum.getBytesPerChecksum();
        this.sumSize = checksum.getChecksumSize();
        this.sums = LocalBlockReader.sumsOf(metaFd, checksum, 0, length, block);
      } catch (IOException | RuntimeException e) {
        dataFd.close();
        throw e;
      }
      this.dataFd = dataFd;
      sumBytes.addAndGet(sums.capacity());
      filesOpen.incrementAndGet();
    }

    private boolean retain() {
      while (true) {
        int n = refs.get();
        if (n <= 0) {
          return false; // being closed
        }
        if (refs.compareAndSet(n, n + 1)) {
          return true;
        }
      }
    }

    /** Gives back a reference; the last one closes the block file. */
    void release() {
      if (refs.decrementAndGet() == 0) {
        dataFd.close();
        sumBytes.addAndGet(-sums.capacity());
        filesOpen.decrementAndGet();
      }
    }

    long length() {
      return length;
    }

    /**
     * Copies {@code [offset, offset + len)} of the block into {@code b} at
     * {@code off}, after verifying the chunks that hold it.
     *
     * @throws ChecksumException a chunk of the range does not match its checksum (at that chunk's block offset)
     * With {@code verify} false the chunks are not checked (a stream that skips checksums).
     *
     * @throws IOException the range is not in the replica, or the file shrank under the read
     */
    void read(long offset, byte[] b, int off, int len, boolean verify) throws IOException {
      check(offset, len);
      readVerified(offset, len, verify, (piece, at) -> piece.get(b, off + (int) (at - offset), piece.remaining()));
    }

    /** As {@link #read(long, byte[], int, int, boolean)}, into {@code dst} from its position (moved past the bytes). */
    void read(long offset, ByteBuffer dst, int len, boolean verify) throws IOException {
      check(offset, len);
      int p = dst.position();
      readVerified(offset, len, verify, (piece, at) -> dst.put(p + (int) (at - offset), piece, piece.position(),
          piece.remaining()));
      dst.position(p + len);
    }

    /** Where a read's verified pieces go: {@code piece} (from its position) holds block offset {@code at} on. */
    private interface Sink {
      void take(ByteBuffer piece, long at);
    }

    /**
     * Reads the whole chunks holding {@code [offset, offset + len)} with pread, a
     * piece at a time into a pooled buffer, verifies each and hands the part of
     * it in the range to {@code sink}.
     */
    private void readVerified(long offset, int len, boolean verify, Sink sink) throws IOException {
      if (len == 0) {
        return;
      }
      long from = offset / bpc * bpc;
      long to = Math.min(length, (offset + len + bpc - 1) / bpc * bpc);
      LocalBlockReader.preadVerified(dataFd, from, to, checksum, sums, 0, name, block, (w, at) -> {
        long a = Math.max(at, offset);
        long e = Math.min(at + w.limit(), offset + len);
        sink.take(w.limit((int) (e - at)).position((int) (a - at)), a);
      }, verify);
    }

    private void check(long offset, int len) throws IOException {
      if (offset < 0 || len < 0 || offset + len > length) {
        throw new IOException("range [" + offset + ", " + (offset + len) + ") is not in " + block + " of " + length
            + " bytes");
      }
    }

    @Override
    public String toString() {
      return "LocalReplicas.Replica[" + block + " on " + key.datanodeUuid() + "]";
    }
  }

  /**
   * A positional read's range of a cached replica, as a {@link BlockReader}:
   * holds a reference until closed; a failed read drops the replica from the cache.
   */
  final class Range implements BlockReader {
    private final Key key;
    private final ExtendedBlock block;
    private final String socketPath;
    private final Opener opener;
    private Replica replica;
    /** Whether {@link #replica} came from the cache (not opened for this range). */
    private boolean cached;
    private long pos;
    private final long end;
    private boolean closed;
    private final boolean verify; // false: the stream skips checksums, the chunks are not checked

    /**
     * {@code [offset, offset + length)} of the replica of {@code key}: cached, or opened with
     * {@code opener} at the DataNode's socket {@code socketPath}.
     */
    Range(Key key, ExtendedBlock block, String socketPath, Opener opener, long offset, long length)
        throws IOException {
      this(key, block, socketPath, opener, offset, length, true);
    }

    /**
     * As {@link #Range(Key, ExtendedBlock, String, Opener, long, long)}; with {@code verify} false
     * the range's chunks are not checked against their sums (a stream opened with verifyChecksum false).
     */
    Range(Key key, ExtendedBlock block, String socketPath, Opener opener, long offset, long length, boolean verify)
        throws IOException {
      this.verify = verify;
      this.key = key;
      this.block = block;
      this.socketPath = socketPath;
      this.opener = opener;
      boolean[] hit = new boolean[1];
      this.replica = acquire(key, block, socketPath, opener, hit);
      this.cached = hit[0];
      this.pos = offset;
      this.end = offset + length;
    }

    /**
     * A cached replica failed its checksum: it may be an old view of a replica changed since
     * (an append rewrites the last chunk's checksum), so it is asked for again, once, before
     * the failure counts. Other failures: the replica leaves the cache.
     */
    private boolean retryFresh(IOException e) throws IOException {
      invalidate(replica);
      if (!(e instanceof ChecksumException) || !cached) {
        return false;
      }
      Replica old = replica;
      replica = null;
      old.release();
      replica = acquire(key, block, socketPath, opener, null);
      cached = false;
      stale.incrementAndGet();
      return true;
    }

    /** One read of the replica: fills the caller's target only when it succeeds. */
    private interface ReplicaRead {
      void from(Replica r) throws IOException;
    }

    /** Runs {@code read} on the replica, once more on a fresh copy when {@link #retryFresh} says so. */
    private void readRetrying(ReplicaRead read) throws IOException {
      while (true) {
        try {
          read.from(replica);
          return;
        } catch (IOException e) {
          if (!retryFresh(e)) {
            throw e;
          }
        }
      }
    }

    @Override
    public long remaining() {
      return end - pos;
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
      checkOpen();
      if (!dst.hasRemaining()) {
        return 0;
      }
      if (pos >= end) {
        return -1;
      }
      int n = (int) Math.min(dst.remaining(), end - pos);
      readRetrying(r -> r.read(pos, dst, n, verify));
      pos += n;
      return n;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      checkOpen();
      if (len == 0) {
        return 0;
      }
      if (pos >= end) {
        return -1;
      }
      int n = (int) Math.min(len, end - pos);
      readRetrying(r -> r.read(pos, b, off, n, verify));
      pos += n;
      return n;
    }

    @Override
    public void readFully(byte[] b, int off, int len) throws IOException {
      if (len > end - pos) {
        throw new java.io.EOFException("the range of " + block + " ends " + (end - pos) + " bytes on, "
            + len + " asked for");
      }
      read(b, off, len);
    }

    private void checkOpen() throws IOException {
      if (closed) {
        throw new IOException(this + " is closed");
      }
    }

    @Override
    public void close() {
      if (!closed) {
        closed = true;
        if (replica != null) {
          replica.release();
        }
      }
    }

    @Override
    public String toString() {
      return "LocalReplicas.Range[" + block + " at " + pos + "]";
    }
  }
}
