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
import java.util.zip.CRC32C;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.server.datanode.BlockMetadataHeader;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.nativelib.NativeFiles;
import org.hdfsrdma.protocol.ChunkSums;

/**
 * Finalized replicas of this host kept mapped for positional reads, as stock's
 * short-circuit cache keeps replicas' streams: the first positional read of a
 * replica asks its DataNode for the files (token checked, descriptors passed),
 * maps the whole block and .meta file and closes the descriptors; later
 * positional reads of it, from any thread, verify the chunks they touch and
 * copy, with no exchange, no descriptor and no mapping of their own.
 *
 * <p>Keyed by DataNode, block and generation stamp, so a replica appended to
 * or truncated since (a new generation stamp) is asked for again. At most
 * {@code capacity} replicas; the least recently used beyond that, and those
 * unused for {@code expiryMs}, are dropped. A replica is unmapped once dropped
 * and no read holds it (reference counted), so a read never sees its mapping
 * go. A replica whose read failed (checksum, a fault because the file shrank)
 * is dropped at once: the next read asks the DataNode again.
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
  private final AtomicLong mappedBytes = new AtomicLong();
  private final AtomicLong opened = new AtomicLong();
  private final AtomicLong hits = new AtomicLong();
  private final AtomicLong stale = new AtomicLong();
  private boolean closed; // guarded by this

  LocalReplicas(int capacity, long expiryMs) {
    this.capacity = capacity;
    this.expiryNanos = expiryMs * 1_000_000L;
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
    try (ShortCircuitClient.Fds f = opener.open()) {
      fresh = new Replica(key, block, f.data(), f.meta(), socketPath, before);
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

  /** Drops {@code r} from the cache (its read failed); unmapped once no read holds it. */
  void invalidate(Replica r) {
    boolean removed;
    synchronized (this) {
      removed = map.remove(r.key, r);
    }
    if (removed) {
      r.release();
    }
  }

  /** Drops every cached replica (each unmapped once no read holds it). */
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

  /** Bytes mapped by cached replicas and by dropped ones reads still hold. */
  long mappedBytes() {
    return mappedBytes.get();
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
   * A replica's block file (its visible length) and .meta file, mapped.
   * Reads run concurrently: they only read the mappings, through buffers of their own.
   */
  final class Replica {
    final Key key;
    private final ExtendedBlock block;
    private final String name; // for messages: the replica, never a path
    private final NativeFiles.Mapping dataMap;
    private final ByteBuffer data; // never moved: read by absolute index or through duplicates
    private final NativeFiles.Mapping metaMap;
    private final ByteBuffer meta;
    private final DataChecksum checksum;
    private final boolean crc32c;
    private final int bpc;
    private final int sumSize;
    private final int headerBytes;
    private final long length;
    /** The DataNode's short-circuit socket it came from, and which file was there ({@link #serverAt}). */
    private final String socketPath;
    private final SocketFile server;
    /** The cache's reference plus one per read in progress; unmapped at 0. */
    private final AtomicInteger refs = new AtomicInteger(1);
    private volatile long lastUsed;

    private Replica(Key key, ExtendedBlock block, NativeFiles.Fd dataFd, NativeFiles.Fd metaFd, String socketPath,
        SocketFile server) throws IOException {
      this.key = key;
      this.socketPath = socketPath;
      this.server = server;
      this.block = block;
      this.name = "replica " + block;
      this.length = key.length();
      if (length < 1 || length > Integer.MAX_VALUE) {
        throw new IOException(block + " of " + length + " bytes is not kept mapped");
      }
      if (dataFd.size() < length) {
        throw new IOException("the block file of " + block + " has " + dataFd.size() + " bytes, " + length
            + " expected");
      }
      this.headerBytes = BlockMetadataHeader.getHeaderSize();
      if (metaFd.size() < headerBytes || metaFd.size() > Integer.MAX_VALUE) {
        throw new IOException("the .meta file of " + block + " has " + metaFd.size() + " bytes");
      }
      NativeFiles.Mapping mm = LocalBlockReader.mapOf(metaFd, 0, metaFd.size(), block);
      NativeFiles.Mapping dm = null;
      try {
        this.meta = mm.buffer();
        byte[] h = new byte[headerBytes];
        meta.get(0, h);
        this.checksum = BlockMetadataHeader.readHeader(new DataInputStream(new ByteArrayInputStream(h)))
            .getChecksum();
        if (checksum.getChecksumSize() == 0 || checksum.getBytesPerChecksum() <= 0) {
          throw new IOException("the .meta file of " + block + " holds no checksums (" + checksum + ")");
        }
        this.bpc = checksum.getBytesPerChecksum();
        this.sumSize = checksum.getChecksumSize();
        this.crc32c = checksum.getChecksumType() == DataChecksum.Type.CRC32C;
        long chunks = (length + bpc - 1) / bpc;
        if (headerBytes + chunks * sumSize > meta.capacity()) {
          throw new IOException("the .meta file of " + block + " has " + meta.capacity() + " bytes, too few for "
              + chunks + " checksums");
        }
        dm = LocalBlockReader.mapOf(dataFd, 0, length, block);
        try {
          dm.adviseRandom(); // positional reads: a cold page costs its own read, not the device's read-ahead
        } catch (NativeException e) {
          // only slower when cold
        }
        this.data = dm.buffer();
      } catch (IOException | RuntimeException e) {
        mm.close();
        if (dm != null) {
          dm.close();
        }
        throw e;
      }
      this.metaMap = mm;
      this.dataMap = dm;
      mappedBytes.addAndGet(mm.length() + dm.length());
    }

    private boolean retain() {
      while (true) {
        int n = refs.get();
        if (n <= 0) {
          return false; // being unmapped
        }
        if (refs.compareAndSet(n, n + 1)) {
          return true;
        }
      }
    }

    /** Gives back a reference; the last one unmaps. */
    void release() {
      if (refs.decrementAndGet() == 0) {
        metaMap.close();
        dataMap.close();
        mappedBytes.addAndGet(-(metaMap.length() + dataMap.length()));
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
     * @throws IOException the range is not in the replica, or the file shrank under the mapping
     */
    void read(long offset, byte[] b, int off, int len) throws IOException {
      check(offset, len);
      try {
        verify(offset, len);
        data.get((int) offset, b, off, len);
      } catch (InternalError e) {
        throw changed(e);
      }
    }

    /** As {@link #read(long, byte[], int, int)}, into {@code dst} from its position (moved past the bytes). */
    void read(long offset, ByteBuffer dst, int len) throws IOException {
      check(offset, len);
      try {
        verify(offset, len);
        dst.put(dst.position(), data, (int) offset, len);
      } catch (InternalError e) {
        throw changed(e);
      }
      dst.position(dst.position() + len);
    }

    private void check(long offset, int len) throws IOException {
      if (offset < 0 || len < 0 || offset + len > length) {
        throw new IOException("range [" + offset + ", " + (offset + len) + ") is not in " + block + " of " + length
            + " bytes");
      }
    }

    private IOException changed(InternalError e) {
      return new IOException("the block file of " + block + " changed while it was read: " + e.getMessage(), e);
    }

    /** Verifies the whole chunks holding {@code [offset, offset + len)}. */
    private void verify(long offset, int len) throws IOException {
      if (len == 0) {
        return;
      }
      int from = (int) (offset / bpc * bpc);
      int to = (int) Math.min(length, (offset + len + bpc - 1) / bpc * bpc);
      if (to - from >= WILLNEED_BYTES) {
        try {
          // the mapping is advised random: without this a cold large range would fault a page at a time
          dataMap.willNeed(from, to - from);
        } catch (NativeException e) {
          // only slower when cold
        }
      }
      int sums = headerBytes + from / bpc * sumSize;
      if (crc32c) {
        verifyCrc32c(from, to, sums);
        return;
      }
      // another checksum type (older files): Hadoop's verifier, with a DataChecksum of this read's own
      DataChecksum dc = DataChecksum.newDataChecksum(checksum.getChecksumType(), bpc);
      int chunks = (to - from + bpc - 1) / bpc;
      ChunkSums.verify(dc, data.slice(from, to - from), meta.slice(sums, chunks * sumSize), name, from);
    }

    /** CRC32C chunk by chunk straight on the mapping (the JDK's intrinsic), with this thread's CRC32C. */
    private void verifyCrc32c(int from, int to, int sums) throws ChecksumException {
      CRC32C crc = CRC.get();
      ByteBuffer d = data.duplicate();
      for (int at = from, s = sums; at < to; at += bpc, s += sumSize) {
        int end = Math.min(to, at + bpc);
        d.limit(end).position(at);
        crc.reset();
        crc.update(d);
        int want = meta.getInt(s);
        if ((int) crc.getValue() != want) {
          throw new ChecksumException(String.format("Checksum CRC32C not matched for file %s at position %d: "
              + "expected=%X but computed=%X", name, at, want, (int) crc.getValue()), at);
        }
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

    /**
     * {@code [offset, offset + length)} of the replica of {@code key}: cached, or opened with
     * {@code opener} at the DataNode's socket {@code socketPath}.
     */
    Range(Key key, ExtendedBlock block, String socketPath, Opener opener, long offset, long length)
        throws IOException {
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
      readRetrying(r -> r.read(pos, dst, n));
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
      readRetrying(r -> r.read(pos, b, off, n));
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

  /** Reads of at least this many bytes ask the kernel to read their range in first (one call, large requests). */
  static final int WILLNEED_BYTES = 32 * 1024;

  /** One CRC32C per reading thread: nothing of it is allocated per read. */
  private static final ThreadLocal<CRC32C> CRC = ThreadLocal.withInitial(CRC32C::new);
}
