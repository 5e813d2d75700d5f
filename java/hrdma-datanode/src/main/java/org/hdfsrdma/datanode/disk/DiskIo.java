package org.hdfsrdma.datanode.disk;

import com.sun.nio.file.ExtendedOpenOption;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.hdfsrdma.datanode.compat.DataNodeAccess;
import org.hdfsrdma.datanode.compat.DataNodeAccess.Volume;
import org.hdfsrdma.datanode.compat.RbwReplica;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeDisk;
import org.hdfsrdma.nativelib.NativeException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plugin's disk I/O: one {@link VolumeScheduler} per DataNode volume
 * (made when the volume is first used, with the policy its storage type or
 * directory asks for), and the block-file work around it: preallocation
 * when a block is created, the volume's write mode (buffered with write-back
 * behind the writer, kept in or dropped from the page cache, or O_DIRECT),
 * page-cache dropping behind readers, trim and an extent count at finalize.
 *
 * <p>What the filesystem cannot do (fallocate, FIEMAP, sync_file_range,
 * fadvise) is given up per volume once, with a log line and a
 * {@link VolumeStats#fallback()} count; the write goes on without it.
 *
 * <p>Thread-safe.
 */
public final class DiskIo implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(DiskIo.class);

  private final DiskSettings settings;
  private final boolean nativeOk;
  private final ConcurrentHashMap<String, VolumeScheduler> schedulers = new ConcurrentHashMap<>();
  private final Set<String> noPreallocate = ConcurrentHashMap.newKeySet();
  private final Set<String> noDrop = ConcurrentHashMap.newKeySet();
  private final Set<String> noExtents = ConcurrentHashMap.newKeySet();
  private final Set<String> noDirect = ConcurrentHashMap.newKeySet();
  private final Set<String> noDirectWrite = ConcurrentHashMap.newKeySet();
  /** Each I/O worker's io_uring for direct reads (made on first use, closed with this). */
  private final ThreadLocal<NativeDisk.Ring> rings = new ThreadLocal<>();
  private final java.util.Queue<NativeDisk.Ring> allRings = new java.util.concurrent.ConcurrentLinkedQueue<>();
  private final boolean uringOk;
  /**
   * A worker has one direct request in flight at a time (the scheduler's depth is the number of
   * workers busy); a request is up to this many reads (its segments).
   */
  private static final int RING_DEPTH = DirectReads.MAX_SEGMENTS;
  private volatile boolean closed;

  public DiskIo(DiskSettings settings, List<Volume> volumes) {
    this.settings = settings;
    this.nativeOk = HrdmaNative.isAvailable();
    if (!nativeOk) {
      LOG.warn("hrdma disk: libhrdma is unavailable ({}); no preallocation, trim, write-back or page-cache "
          + "dropping behind streams",
          HrdmaNative.unavailabilityCause().toString());
    }
    this.uringOk = nativeOk && settings.directReads() && probeUring();
    for (Volume v : volumes) {
      scheduler(v);
    }
  }

  /** Whether an io_uring can be made here (seccomp or an old kernel may forbid it); logged once. */
  private static boolean probeUring() {
    try (NativeDisk.Ring r = new NativeDisk.Ring(1)) {
      return true;
    } catch (NativeException | RuntimeException e) {
      LOG.warn("hrdma disk: no io_uring ({}); reads stay buffered", e.getMessage());
      return false;
    }
  }

  /** Read-ahead windows kept for reuse (allocating and zeroing 8 MB of direct memory per request is not free). */
  private final java.util.concurrent.ConcurrentLinkedDeque<ByteBuffer> windows =
      new java.util.concurrent.ConcurrentLinkedDeque<>();
  private static final int WINDOWS_KEPT = 16;
  private static final int WINDOW_ALIGN = 4096;

  private ByteBuffer window() {
    ByteBuffer w = windows.pollFirst();
    if (w == null) {
      int n = settings.readAheadBytes() + (WINDOW_ALIGN - settings.readAheadBytes() % WINDOW_ALIGN) % WINDOW_ALIGN;
      // exactly n: an allocation that happens to be aligned would leave n + 4 KB, and a
      // 4 KB request at the window's wrap beyond the depth the window is sized for
      w = ByteBuffer.allocateDirect(n + WINDOW_ALIGN).alignedSlice(WINDOW_ALIGN).slice(0, n);
    }
    return w.clear();
  }

  private void giveBack(ByteBuffer w) {
    if (windows.size() < WINDOWS_KEPT) {
      windows.addFirst(w);
    }
  }

  private NativeDisk.Ring ring() {
    NativeDisk.Ring r = rings.get();
    if (r == null) {
      try {
        r = new NativeDisk.Ring(RING_DEPTH);
      } catch (NativeException e) {
        throw new java.io.UncheckedIOException(e);
      }
      rings.set(r);
      allRings.add(r);
    }
    return r;
  }

  public DiskSettings settings() {
    return settings;
  }

  /** Each volume's write mode, by storage id (resolved with its scheduler). */
  private final ConcurrentHashMap<String, DiskSettings.WriteMode> writeModes = new ConcurrentHashMap<>();

  /**
   * How block data is written on {@code v}: its override or storage type's mode, "auto"
   * being O_DIRECT where the volume's reads are (ssd/adaptive policy, io_uring available).
   */
  public DiskSettings.WriteMode writeMode(Volume v) {
    scheduler(v);
    return writeModes.get(v.storageId());
  }

  /** The volume's scheduler, made on first use. */
  public VolumeScheduler scheduler(Volume v) {
    VolumeScheduler s = schedulers.computeIfAbsent(v.storageId(), id -> {
      Policy p = settings.policyFor(v.storageType(), v.baseDir());
      DiskSettings.WriteMode m = settings.writeMode(v.storageType(), v.baseDir(),
          uringOk && isSsdPolicy(p.name()));
      writeModes.put(id, m);
      LOG.info("hrdma disk: volume {} ({} {}): {} policy, {} writes", id, v.storageType(), v.baseDir(), p.name(),
          m.key());
      return new VolumeScheduler(id, p, settings.maxQueued(), settings.maxQueuedPerStream(),
          settings.maxWaitNanos(), settings.queueTimeoutNanos());
    });
    if (closed) {
      s.close();
    }
    return s;
  }

  /** The schedulers by storage id, sorted. */
  public Map<String, VolumeScheduler> schedulers() {
    return new TreeMap<>(schedulers);
  }

  /**
   * Starts writing a new replica's block file: preallocates it to
   * {@code reserveBytes} (its length stays what it is). A replica without a
   * local file (a simulated dataset) is written through its streams only, on
   * the volume's scheduler. {@code firstOfPipeline}: whether the replica is the first of a
   * client's pipeline (a {@code cache-first} volume caches only the first).
   */
  public WriteStream openWrite(RbwReplica replica, long reserveBytes, boolean firstOfPipeline) {
    return openWrite(replica.volume(), replica.blockFile(), reserveBytes, firstOfPipeline);
  }

  /** Starts reading a replica this DataNode holds. */
  public ReadStream openRead(DataNodeAccess dn, ExtendedBlock block) throws IOException {
    Volume v = dn.volumeOf(block);
    if (v == null) {
      throw new IOException("no volume holds " + block);
    }
    boolean direct = uringOk && isSsdPolicy(v) && !noDirect.contains(v.storageId());
    return openRead(v, settings.dropBehindReads() || direct ? dn.blockPath(block) : null, direct);
  }

  /**
   * Starts reading a block file of volume {@code v} the way a client's read
   * of it is served (the same scheduler, and on ssd/adaptive volumes the same
   * O_DIRECT io_uring channel from {@link ReadStream#direct}), without a
   * DataNode: {@code hrdma bench disk} measures the disk stage alone with it.
   */
  public ReadStream openRead(Volume v, Path blockFile) {
    boolean direct = uringOk && isSsdPolicy(v) && !noDirect.contains(v.storageId());
    return openRead(v, settings.dropBehindReads() || direct ? blockFile.toString() : null, direct);
  }

  private boolean isSsdPolicy(Volume v) {
    return isSsdPolicy(scheduler(v).policy().name());
  }

  private static boolean isSsdPolicy(String p) {
    return p.equals("ssd") || p.equals("adaptive");
  }

  WriteStream openWrite(Volume v, Path blockFile, long reserveBytes, boolean firstOfPipeline) {
    VolumeScheduler s = scheduler(v);
    NativeDisk.File f = null;
    DiskSettings.WriteMode mode = writeMode(v).forPipeline(firstOfPipeline);
    if (blockFile == null) {
      return new WriteStream(v, s, null, null, null, mode);
    }
    if (nativeOk) {
      f = open(v, s, blockFile, NativeDisk.WRITE);
    }
    WriteStream w = new WriteStream(v, s, f, mode == DiskSettings.WriteMode.DIRECT
        ? openDirectWrite(v, s, blockFile) : null, blockFile, mode);
    if (f != null && settings.preallocate() && !noPreallocate.contains(v.storageId())) {
      NativeDisk.File file = f;
      try {
        // through the scheduler like any disk work, and one at a time per volume: concurrent
        // fallocates interleave their allocations and split each other's extents
        s.call(w, true, 0, 0, () -> {
          synchronized (s) {
            file.preallocate(0, reserveBytes);
          }
          return null;
        });
        s.stats().preallocated();
      } catch (NativeException e) {
        giveUp(noPreallocate, v, s, "fallocate", e);
      } catch (IOException e) {
        LOG.warn("hrdma disk: preallocating {} failed: {}", blockFile, e.toString());
      }
    }
    return w;
  }

  /**
   * The block file opened with O_DIRECT (the JDK's own DIRECT option: its
   * writes are plain pwrites on the calling I/O worker) for
   * {@link WriteStream#writeDirect}, or null: off, or refused on this volume.
   */
  private FileChannel openDirectWrite(Volume v, VolumeScheduler s, Path blockFile) {
    if (noDirectWrite.contains(v.storageId())) {
      return null;
    }
    try {
      return FileChannel.open(blockFile, StandardOpenOption.WRITE, ExtendedOpenOption.DIRECT);
    } catch (IOException | UnsupportedOperationException e) {
      if (refusesDirect(e)) {
        giveUp(noDirectWrite, v, s, "O_DIRECT writes", "opening " + blockFile + ": " + e.getMessage());
      } else {
        LOG.warn("hrdma disk: cannot open {} for direct writes: {}", blockFile, e.toString());
      }
      return null;
    }
  }

  /** Per volume: the block size the JDK checks O_DIRECT buffers, offsets and lengths against. */
  private final ConcurrentHashMap<String, Integer> directAlign = new ConcurrentHashMap<>();
  /** Each thread's aligned buffer for O_DIRECT writes, grown to the largest write it made. */
  private final ThreadLocal<ByteBuffer> staging = new ThreadLocal<>();

  /** The volume's O_DIRECT alignment (looked up once: the JDK reads the mount table for it), or 0. */
  private int directAlignment(Volume v, Path blockFile) {
    return directAlign.computeIfAbsent(v.storageId(), id -> {
      try {
        long b = Files.getFileStore(blockFile).getBlockSize();
        if (b > 0 && b <= 1 << 20 && Long.bitCount(b) == 1) {
          return (int) b;
        }
        LOG.warn("hrdma disk: volume {} has block size {}; writing it through the page cache", id, b);
      } catch (IOException | RuntimeException e) {
        LOG.warn("hrdma disk: no block size for volume {} ({}); writing it through the page cache", id,
            e.toString());
      }
      return 0;
    });
  }

  private ByteBuffer staging(int bytes, int align) {
    ByteBuffer b = staging.get();
    if (b == null || b.capacity() < bytes || b.alignmentOffset(0, align) != 0) {
      b = ByteBuffer.allocateDirect(bytes + align).alignedSlice(align);
      staging.set(b);
    }
    return b;
  }

  /** The filesystem does not do O_DIRECT (EINVAL), as opposed to a failing device. */
  private static boolean refusesDirect(Exception e) {
    return e instanceof UnsupportedOperationException
        || (e.getMessage() != null && e.getMessage().contains("Invalid argument"));
  }

  /** Starts reading a block file on {@code v} (blockPath: for dropping it from the cache behind the reader). */
  ReadStream openRead(Volume v, String blockPath, boolean direct) {
    VolumeScheduler s = scheduler(v);
    NativeDisk.File f = null;
    if (nativeOk && settings.dropBehindReads() && !direct && blockPath != null
        && !noDrop.contains(v.storageId())) {
      f = open(v, s, Paths.get(blockPath), 0);
    }
    return new ReadStream(v, s, f, direct ? blockPath : null);
  }

  private NativeDisk.File open(Volume v, VolumeScheduler s, Path p, int flags) {
    try {
      return NativeDisk.File.open(p, flags);
    } catch (NativeException e) {
      LOG.warn("hrdma disk: cannot open {} on volume {}: {}", p, v.storageId(), e.getMessage());
      s.stats().fallback();
      return null;
    }
  }

  private void giveUp(Set<String> off, Volume v, VolumeScheduler s, String what, NativeException e) {
    giveUp(off, v, s, what, e.getMessage());
  }

  /** Turns {@code what} off for volume {@code v} from now on (in {@code off}): once, with a log line and a metric. */
  private void giveUp(Set<String> off, Volume v, VolumeScheduler s, String what, String why) {
    if (off.add(v.storageId())) {
      s.stats().fallback();
      LOG.warn("hrdma disk: {} fails on volume {} ({}): {}; going on without it", what, v.storageId(),
          v.baseDir(), why);
    }
  }

  @Override
  public void close() {
    closed = true;
    for (VolumeScheduler s : schedulers.values()) {
      s.close(); // joins the workers: no ring is in use after this
    }
    NativeDisk.Ring r;
    while ((r = allRings.poll()) != null) {
      try {
        r.close();
      } catch (NativeException e) {
        LOG.warn("hrdma disk: {}", e.getMessage());
      }
    }
  }

  /** What a block's read or write stream holds: its volume, scheduler and native file (may be null). */
  private abstract static class BlockStream implements AutoCloseable {
    final Volume volume;
    final VolumeScheduler sched;
    NativeDisk.File file;

    BlockStream(Volume volume, VolumeScheduler sched, NativeDisk.File file) {
      this.volume = volume;
      this.sched = sched;
      this.file = file;
    }

    /** Leaves the scheduler, closes the native file. Idempotent. */
    @Override
    public void close() {
      sched.close(this);
      if (file != null) {
        try {
          file.close();
        } catch (NativeException e) {
          LOG.warn("hrdma disk: {}", e.getMessage());
        }
        file = null;
      }
    }
  }

  /**
   * One block being written: its writes go through the volume's scheduler;
   * as its volume's write mode says, its data goes O_DIRECT, or through the
   * page cache with the ranges behind it written back (and, drop-behind,
   * dropped from the cache). Used by one writer thread at a time.
   */
  public final class WriteStream extends BlockStream implements RbwReplica.DirectWriter {
    private long writtenBack; // write-back started up to here
    private long dropped;     // dropped from the cache up to here
    private FileChannel direct; // the block file with O_DIRECT, or null
    private int align;
    private DiskSettings.WriteMode mode;

    WriteStream(Volume volume, VolumeScheduler sched, NativeDisk.File file, FileChannel direct, Path blockFile,
        DiskSettings.WriteMode mode) {
      super(volume, sched, file);
      this.direct = direct;
      this.mode = mode;
      if (direct != null) {
        align = directAlignment(volume, blockFile);
        if (align <= 0) {
          closeDirect();
        }
      }
      if (mode == DiskSettings.WriteMode.DIRECT && this.direct == null) {
        // O_DIRECT refused here: what it would have kept out of the page cache is dropped behind instead
        this.mode = DiskSettings.WriteMode.DROP_BEHIND;
      }
    }

    @Override
    public int alignment() {
      return direct == null ? 0 : align;
    }

    /** How this stream writes (a direct volume whose filesystem refused O_DIRECT drops behind instead). */
    public DiskSettings.WriteMode mode() {
      return mode;
    }

    /**
     * Writes the longest prefix of {@code data} that O_DIRECT can take at
     * block offset {@code at} (offset and length multiples of the
     * filesystem's block size), and moves {@code data}'s position past it:
     * straight from {@code data} where its address there is aligned too (a
     * packet the transport placed so), else copied through an aligned buffer. Returns the bytes written: 0 when
     * direct writes are off, refused on this volume, or do not fit here;
     * the caller writes the rest through the page cache. Call inside a
     * {@link #write} action (on the volume's I/O worker, or on the write
     * executor's thread while the volume is idle: the staging buffer is the
     * running thread's).
     *
     * @throws IOException the device failed the write (as a buffered write's error would)
     */
    @Override
    public int writeDirect(ByteBuffer data, long at) throws IOException {
      FileChannel f = direct;
      if (f == null) {
        return 0;
      }
      int n = data.remaining() - data.remaining() % align;
      if (n == 0 || at % align != 0) {
        return 0;
      }
      // in place only where the JDK's own O_DIRECT checks will pass: a direct buffer at an aligned address
      // (align is a power of two: directAlignment)
      boolean staged = !data.isDirect() || data.alignmentOffset(data.position(), align) != 0;
      ByteBuffer w;
      if (staged) {
        w = staging(n, align);
        w.clear().put(0, data, data.position(), n).limit(n);
      } else {
        w = data.slice(data.position(), n);
      }
      try {
        while (w.hasRemaining()) {
          f.write(w, at + w.position());
        }
      } catch (IOException e) {
        if (w.position() == 0 && refusesDirect(e)) {
          // the filesystem takes O_DIRECT opens but not these writes: buffered from now on
          giveUp(noDirectWrite, volume, sched, "O_DIRECT writes", "writing at " + at + ": " + e.getMessage());
          closeDirect();
          mode = DiskSettings.WriteMode.DROP_BEHIND;
          return 0;
        }
        throw e;
      }
      data.position(data.position() + n);
      sched.stats().directWritten(n, staged);
      return n;
    }

    private void closeDirect() {
      FileChannel f = direct;
      direct = null;
      if (f != null) {
        try {
          f.close();
        } catch (IOException e) {
          LOG.warn("hrdma disk: closing the O_DIRECT channel: {}", e.toString());
        }
      }
    }

    @Override
    public void close() {
      closeDirect();
      super.close();
    }

    /** Runs {@code write} (the bytes [offset, offset + len) of the block) on the volume's device. */
    public void write(long offset, int len, VolumeScheduler.IoAction<?> write) throws IOException {
      VolumeScheduler.IoAction<Void> run = () -> {
        write.run();
        behind(offset + len);
        return null;
      };
      if (settings.writeWhenIdleHere()) {
        sched.callHere(this, true, offset, len, run); // the caller is a write executor, never an I/O thread
      } else {
        sched.call(this, true, offset, len, run);
      }
    }

    private void behind(long end) {
      long w = settings.dropBytes();
      // direct: only an odd head or tail went through the cache, not worth a system call
      if (file == null || mode == DiskSettings.WriteMode.DIRECT || noDrop.contains(volume.storageId())) {
        return;
      }
      try {
        while (end - writtenBack >= w) {
          file.writeback(writtenBack, w);
          writtenBack += w;
        }
        // one window behind the write-back: by now it is (mostly) on disk
        while (mode == DiskSettings.WriteMode.DROP_BEHIND && writtenBack - dropped >= 2 * w) {
          file.dropCache(dropped, w, true);
          dropped += w;
        }
      } catch (NativeException e) {
        giveUp(noDrop, volume, sched, "sync_file_range/fadvise", e);
      }
    }

    /**
     * The block is complete and its streams closed: release the
     * preallocated tail and count the file's extents. Call before the
     * replica is finalized.
     */
    public void finish() {
      if (file == null) {
        return;
      }
      try {
        file.trim();
        sched.stats().trimmed();
      } catch (NativeException e) {
        giveUp(noPreallocate, volume, sched, "trim", e);
      }
      if (!noExtents.contains(volume.storageId())) {
        try {
          sched.stats().finalizedBlock(file.extentCount());
        } catch (NativeException e) {
          giveUp(noExtents, volume, sched, "FIEMAP", e);
        }
      }
    }

    @Override
    public String toString() {
      return "write@" + Integer.toHexString(System.identityHashCode(this));
    }
  }

  /** One block being read: reads go through the volume's scheduler; read ranges are dropped behind. */
  public final class ReadStream extends BlockStream {
    private long dropFrom = -1;
    private final String directPath;
    private boolean direct;

    ReadStream(Volume volume, VolumeScheduler sched, NativeDisk.File file, String directPath) {
      super(volume, sched, file);
      this.directPath = directPath;
    }

    /**
     * The channel to read the block data [start, end) from:
     * on ssd/adaptive volumes an O_DIRECT io_uring reader that takes its
     * depth and request size from the volume's policy (closing it closes
     * {@code ch}), else {@code ch} itself. Where O_DIRECT is refused, the
     * volume falls back to {@code ch} from then on.
     */
    public ReadableByteChannel direct(ReadableByteChannel ch, long start, long end) {
      NativeDisk.File f = openDirect();
      if (f == null) {
        return ch;
      }
      ByteBuffer w = window();
      try {
        ReadableByteChannel d = new DirectReadChannel(f, ch, start, end, w, DiskIo.this::giveBack, DiskIo.this::ring,
            sched, this);
        direct = true;
        return d;
      } catch (NativeException e) {
        giveBack(w);
        try {
          f.close();
        } catch (NativeException ignored) {
          // already failing
        }
        giveUp(noDirect, volume, sched, "O_DIRECT", e);
        return ch;
      }
    }

    /**
     * On ssd/adaptive volumes: the packets of the block data [start, end), {@code packetBytes}
     * each, read with O_DIRECT into the memory {@code factory} makes for them, with the depth
     * and request size of the volume's policy. Null where that cannot be: not such a volume,
     * O_DIRECT refused, or {@code start} or {@code packetBytes} not aligned for it (then
     * {@link #direct} is the way).
     */
    public <T extends DirectPacketReader.Packet> DirectPacketReader<T> packets(long start, long end, int packetBytes,
        DirectPacketReader.Factory<T> factory) {
      return packets(start, end, align -> packetBytes, factory);
    }

    /**
     * As {@link #packets(long, long, int, DirectPacketReader.Factory)}, with packets of
     * {@code packetBytes.applyAsInt(alignment)} for the file's O_DIRECT alignment
     * ({@link DirectPacketReader#packetBytes()} says what was chosen).
     */
    public <T extends DirectPacketReader.Packet> DirectPacketReader<T> packets(long start, long end,
        java.util.function.IntUnaryOperator packetBytesFor, DirectPacketReader.Factory<T> factory) {
      NativeDisk.File f = openDirect();
      if (f == null) {
        return null;
      }
      try {
        int align = f.directAlignment();
        int packetBytes = align > 0 ? packetBytesFor.applyAsInt(align) : 0;
        if (align > 0 && start % align == 0 && packetBytes > 0 && packetBytes % align == 0) {
          DirectPacketReader<T> r = new DirectPacketReader<>(f, start, end, packetBytes, settings.readAheadBytes(),
              factory, DiskIo.this::ring, sched, this);
          direct = true;
          return r;
        }
      } catch (NativeException e) {
        giveUp(noDirect, volume, sched, "O_DIRECT", e);
      }
      try {
        f.close();
      } catch (NativeException ignored) {
        // nothing read through it
      }
      return null;
    }

    /** The block file opened with O_DIRECT, or null: not an ssd/adaptive volume, or O_DIRECT refused (once: logged). */
    private NativeDisk.File openDirect() {
      if (directPath == null || noDirect.contains(volume.storageId())) {
        return null;
      }
      try {
        return NativeDisk.File.open(Paths.get(directPath), NativeDisk.DIRECT);
      } catch (NativeException e) {
        giveUp(noDirect, volume, sched, "O_DIRECT", e);
        return null;
      }
    }

    /**
     * Runs {@code read} (the bytes [offset, offset + len) of the block) on the volume's device;
     * with a {@link #direct} channel on the caller's thread instead, since that channel's refills
     * are the disk requests and go through the scheduler themselves.
     */
    public void read(long offset, int len, VolumeScheduler.IoAction<?> read) throws IOException {
      if (direct) {
        read.run();
        return;
      }
      sched.call(this, false, offset, len, () -> {
        read.run();
        behind(offset, offset + len);
        return null;
      });
    }

    private void behind(long start, long end) {
      if (file == null || noDrop.contains(volume.storageId())) {
        return;
      }
      if (dropFrom < 0) {
        dropFrom = start;
      }
      long w = settings.dropBytes();
      try {
        while (end - dropFrom >= w) {
          file.dropCache(dropFrom, w, false);
          dropFrom += w;
        }
      } catch (NativeException e) {
        giveUp(noDrop, volume, sched, "fadvise", e);
      }
    }

    @Override
    public String toString() {
      return "read@" + Integer.toHexString(System.identityHashCode(this));
    }
  }
}
