package org.hdfsrdma.client;

import java.io.EOFException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionService;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.FSExceptionMessages;
import org.apache.hadoop.fs.ReadOption;
import org.apache.hadoop.hdfs.BlockMissingException;
import org.apache.hadoop.hdfs.DFSInputStream;
import org.apache.hadoop.hdfs.HrdmaInputStreamBase;
import org.apache.hadoop.hdfs.ReadStatistics;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;
import org.apache.hadoop.hdfs.security.token.block.InvalidBlockTokenException;
import org.apache.hadoop.io.ByteBufferPool;
import org.apache.hadoop.util.StringUtils;
import org.hdfsrdma.client.compat.FaultInjection;
import org.hdfsrdma.client.compat.ZeroCopyFallback;

/**
 * An HDFS file read over hrdma: block locations from the NameNode (through
 * the file system's DFSClient), block data from the DataNodes' plugins via
 * {@link RdmaBlockReader}s.
 *
 * <p>Sequential reads keep one reader on the current block (which keeps its
 * own requests in flight) and, once the current block's last request is out,
 * open the next block's reader, so the stream never waits a round trip at a
 * block boundary. A short-circuit reader's next block is opened earlier
 * ({@link #LOCAL_OPEN_AHEAD_BYTES} before its end) and on the client's opener
 * thread: the descriptor exchange with the DataNode and the reader's set-up
 * (its checksums read) take milliseconds that the caller would spend waiting
 * at each boundary, when at warm-cache speed it reads a block in tens.
 * Positional reads use their own one-shot readers and leave the stream's
 * position and readers alone. With hedged reads on
 * ({@code dfs.client.hedged.read.threadpool.size} &gt; 0) a positional read of
 * a block range that takes longer than
 * {@code dfs.client.hedged.read.threshold.millis} is asked of a second replica
 * too, the first answer wins: stock's hedged reads, on the client's pool and
 * counted in its {@code DFSHedgedReadMetrics}.
 *
 * <p>Replicas: same host first, then the NameNode's order. A replica whose
 * data fails its checksum is skipped for this stream and, once the range has
 * been read from another replica, reported to the NameNode; when every replica
 * is bad the {@link ChecksumException} is the caller's. A DataNode that cannot
 * be reached over hrdma is handed to the file system's fallback (logged and
 * counted once) and its blocks come through the stock stream, seeked to the
 * position.
 *
 * <p>It is a {@link DFSInputStream} (see {@link HrdmaInputStreamBase}), so the
 * file system hands it out as stock does, in an {@code HdfsDataInputStream},
 * and it keeps the statistics stock streams keep: the stream's
 * {@link ReadStatistics} (short-circuit bytes from replica files read here,
 * local bytes from a DataNode of this host, remote bytes from others) and the
 * file system's bytes read by network distance. Zero-copy reads
 * ({@link #read(ByteBufferPool, int, EnumSet)}) hand out mapped slices of a
 * replica on this host ({@link MappedReplica}), else copy as stock does. Calls
 * this class does not override (read-ahead and drop-behind settings, the
 * block list) are the superclass's.
 *
 * <p>Sequential reads and seeks: one thread at a time (synchronized). Positional
 * reads, as stock's, run concurrently from any number of threads, beside a
 * sequential reader too: they share only the block list, the replicas found bad
 * (both under {@code infoLock}) and the stock stream (whose positional reads are
 * thread-safe); on this host they read replicas the client keeps mapped
 * ({@link LocalReplicas}), so a positional read makes no exchange with the
 * DataNode, holds no descriptor and maps nothing of its own.
 */
final class RdmaInputStream extends HrdmaInputStreamBase {
  /** Sequential bytes from one reader before the next block's reader is opened ahead. */
  private static final long SEQUENTIAL_EVIDENCE = 64 * 1024;
  /**
   * Bytes left in a short-circuit reader's block when the next block's reader is opened ahead on
   * the opener thread: at warm-cache speed (5 GB/s) about 6 ms of reading, what an exchange and a
   * reader's set-up take on a busy host.
   */
  static final long LOCAL_OPEN_AHEAD_BYTES = 32L << 20;
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(RdmaInputStream.class);

  private final RdmaDistributedFileSystem fs;
  private final int bufferSize;
  private final long prefetchBytes;
  private final long fileLength;
  /** Guards {@link #blocks}, {@link #bad}, {@link #badWhy}, {@link #unreported} (positional reads run concurrently). */
  private final Object infoLock = new Object();
  /** Known blocks by start offset. */
  private final TreeMap<Long, LocatedBlock> blocks = new TreeMap<>();
  /** Replicas found bad (checksum) by this stream, by block id: DataNode uuids. */
  private final Map<Long, Set<String>> bad = new HashMap<>();
  /** Why: the first ChecksumException of each replica found bad, by block id and DataNode uuid. */
  private final Map<Long, Map<String, ChecksumException>> badWhy = new HashMap<>();
  /** Replicas found bad and not reported yet (reported once another replica served the range). */
  private final Map<Long, List<DatanodeInfo>> unreported = new HashMap<>();
  /**
   * The replica on this host chosen by page-cache residency, by block id: DataNode uuid. Asked
   * once per block, where several replicas are on this host (see {@link #probeLocal}).
   */
  private final Map<Long, String> nearest = new HashMap<>();
  /** Guards {@link #stock} and {@link #stockCounted}. */
  private final Object stockLock = new Object();

  private Source cur;
  private Source next;
  /** The next block's source being opened on the opener thread (then {@link #next}), or null. */
  private OpenAhead ahead;
  /** The stock stream for DataNodes read through the stock path (opened on first use). */
  private volatile DFSInputStream stock;
  /** {@link #stock}'s read statistics as last added to this stream's. */
  private ReadStatistics stockCounted = new ReadStatistics();

  /** Where one block's bytes come from: an hrdma reader, or (reader null) the stock stream. */
  private static final class Source {
    final LocatedBlock block;
    final DatanodeInfo dn;
    final BlockReader reader;
    final long from;   // file offset the reader starts at
    /** Network distance of the DataNode, as stock block readers give it (0: this host). */
    final int distance;
    long consumed;
    /** When a hedged read of it was started (System.nanoTime). */
    long started;

    Source(LocatedBlock block, DatanodeInfo dn, BlockReader reader, long from, int distance) {
      this.block = block;
      this.dn = dn;
      this.reader = reader;
      this.from = from;
      this.distance = distance;
    }

    long end() {
      return block.getStartOffset() + block.getBlockSize();
    }

    /** Whether this source's next byte is file offset {@code p}. */
    boolean at(long p) {
      return reader == null ? p >= block.getStartOffset() && p < end() : from + consumed == p && p < end();
    }

    void close() {
      if (reader != null) {
        reader.close();
      }
    }
  }

  /** Where read bytes go: a byte[] range or a ByteBuffer. */
  private interface Sink {
    int fromReader(BlockReader r, int max) throws IOException;

    int fromStock(DFSInputStream s, long position, int max) throws IOException;
  }

  /**
   * A stream of {@code src} wrapped as stock wraps its own. The file system calls this rather than
   * the constructor: a method of its own that passed this class where a DFSInputStream is
   * expected would have the JVM's verifier load this class, and with it its base, as soon as the
   * file system's class is linked: before {@code StreamBaseLoader} could place the base in
   * Hadoop's class loader.
   */
  static HdfsDataInputStream open(RdmaDistributedFileSystem fs, String src, int bufferSize, boolean verifyChecksum,
      LocatedBlocks located) throws IOException {
    return fs.getClient().createWrappedInputStream(new RdmaInputStream(fs, src, bufferSize, verifyChecksum, located));
  }

  RdmaInputStream(RdmaDistributedFileSystem fs, String src, int bufferSize, boolean verifyChecksum,
      LocatedBlocks located) throws IOException {
    super(fs.getClient(), src, verifyChecksum, located);
    this.fs = fs;
    this.bufferSize = bufferSize;
    this.prefetchBytes = fs.getClient().getConf().getPrefetchSize();
    this.fileLength = located.getFileLength();
    for (LocatedBlock lb : located.getLocatedBlocks()) {
      blocks.put(lb.getStartOffset(), lb);
    }
  }

  // ---------------------------------------------------------------- blocks

  private LocatedBlock blockAt(long offset) throws IOException {
    synchronized (infoLock) {
      return blockAtLocked(offset);
    }
  }

  private LocatedBlock blockAtLocked(long offset) throws IOException {
    Map.Entry<Long, LocatedBlock> e = blocks.floorEntry(offset);
    if (e != null && offset < e.getKey() + e.getValue().getBlockSize()) {
      return e.getValue();
    }
    fetch(offset);
    e = blocks.floorEntry(offset);
    if (e != null && offset < e.getKey() + e.getValue().getBlockSize()) {
      return e.getValue();
    }
    throw new IOException("no block of " + src + " holds offset " + offset + " (file length " + fileLength + ")");
  }

  private void fetch(long offset) throws IOException {
    LocatedBlocks lbs = fs.getClient().getLocatedBlocks(src, offset, prefetchBytes);
    if (lbs == null || lbs.locatedBlockCount() == 0) {
      // as stock: the file is shorter now (truncated) than when it was opened
      throw new EOFException("could not find target position " + offset + " of " + src);
    }
    for (LocatedBlock lb : lbs.getLocatedBlocks()) {
      blocks.put(lb.getStartOffset(), lb);
    }
    // as stock's fetchBlockAt: the superclass's list (getAllBlocks, getLocatedBlocks) gets the
    // fresh locations and tokens too
    synchronized (infoLock) {
      int idx = locatedBlocks.findBlock(offset);
      locatedBlocks.insertRange(idx < 0 ? LocatedBlocks.getInsertIndex(idx) : idx, lbs.getLocatedBlocks());
    }
  }

  /** Fresh locations and token for the block at {@code lb}'s offset. */
  private LocatedBlock refetch(LocatedBlock lb) throws IOException {
    synchronized (infoLock) {
      blocks.remove(lb.getStartOffset());
      fetch(lb.getStartOffset());
      return blockAtLocked(lb.getStartOffset());
    }
  }

  /**
   * The block's replicas in the order to try them: same host first (those the
   * DataNode caches before the others: read with no checksum work; then the one
   * this stream found in the page cache, {@link #probeLocal}), then the
   * NameNode's.
   */
  private List<DatanodeInfo> candidates(LocatedBlock lb) {
    List<DatanodeInfo> local = new ArrayList<>();
    List<DatanodeInfo> rest = new ArrayList<>();
    DatanodeInfo[] cached = lb.getCachedLocations();
    String chosen;
    synchronized (infoLock) {
      chosen = nearest.get(lb.getBlock().getBlockId());
    }
    int front = 0;
    for (DatanodeInfo dn : lb.getLocations()) {
      if (!fs.isLocal(dn)) {
        rest.add(dn);
      } else if (cached.length > 0 && Arrays.asList(cached).contains(dn)) {
        local.add(0, dn);
        front++;
      } else if (dn.getDatanodeUuid().equals(chosen)) {
        local.add(front, dn);
      } else {
        local.add(dn);
      }
    }
    local.addAll(rest);
    return local;
  }

  /**
   * The first replica of {@code lb} on this host, in {@code order}, that this client keeps open
   * already (read before, {@link LocalReplicas}), or null: reading it needs no exchange, and no
   * other replica is asked about.
   */
  private DatanodeInfo keptReplica(LocatedBlock lb, List<DatanodeInfo> order, Set<String> badHere, String avoid)
      throws IOException {
    LocalReplicas kept = fs.blockClient().replicas();
    for (DatanodeInfo dn : order) {
      String id = dn.getDatanodeUuid();
      if (!badHere.contains(id) && !id.equals(avoid) && fs.isLocal(dn) && !fs.onStockPath(dn) && fs.tryLocal(dn)
          && kept.holds(LocalReplicas.Key.of(id, lb.getBlock(), lb.getBlockSize()))) {
        return dn;
      }
    }
    return null;
  }

  /** A replica's files asked of its DataNode on this host while choosing among several. */
  private record Asked(DatanodeInfo dn, ShortCircuitClient.Fds fds) {}

  /**
   * Where several replicas of {@code lb} are on this host (equally near: on one host running
   * several DataNodes, or a MiniDFSCluster), the one whose bytes are in the page cache: a
   * replication-3 block written in {@code cache-first} mode is cached on the pipeline's first
   * DataNode only, and the NameNode lists equally near replicas in random order. Each usable
   * replica on this host is asked for its files in {@code order}, with how much of
   * {@code [probeOffset, probeOffset + probeLength)} its DataNode has in the page cache, until
   * one has all of it; else the one with the most (the first of equals). At most one exchange
   * per replica, and only once per block (remembered in {@link #nearest}); nothing is asked
   * with one replica on this host, one the DataNode caches, or one chosen before.
   *
   * @param failed gets the failure of each replica whose exchange failed (the caller meets it
   *     as if it had asked itself, so it is counted and handled once, as before)
   * @return the chosen replica with its files (the caller takes them over), or null
   */
  private Asked probeLocal(LocatedBlock lb, List<DatanodeInfo> order, Set<String> badHere, String avoid,
      long probeOffset, long probeLength, Map<String, IOException> failed) throws IOException {
    List<DatanodeInfo> near = new ArrayList<>();
    for (DatanodeInfo dn : order) {
      String id = dn.getDatanodeUuid();
      if (!badHere.contains(id) && !id.equals(avoid) && !fs.onStockPath(dn) && fs.tryLocal(dn)) {
        near.add(dn);
      }
    }
    // checked after the replicas: the block client is made only where a replica could be read locally
    if (near.size() < 2 || probeLength < 1 || !fs.blockClient().preferCached()
        || Arrays.asList(lb.getCachedLocations()).contains(near.get(0))) {
      return null;
    }
    synchronized (infoLock) {
      if (nearest.containsKey(lb.getBlock().getBlockId())) {
        return null;
      }
    }
    Asked best = null;
    try {
      for (DatanodeInfo dn : near) {
        ShortCircuitClient.Fds f;
        try {
          f = fs.blockClient().localFiles(lb, dn, probeOffset, probeLength);
        } catch (IOException e) {
          failed.put(dn.getDatanodeUuid(), e);
          continue;
        }
        fs.countNearReplicaProbe();
        if (best == null || f.resident() > best.fds().resident()) {
          if (best != null) {
            best.fds().close();
          }
          best = new Asked(dn, f);
        } else {
          f.close();
        }
        if (f.resident() >= probeLength) {
          break; // all of it in memory: no need to ask the others
        }
      }
      if (best != null) {
        synchronized (infoLock) {
          nearest.put(lb.getBlock().getBlockId(), best.dn().getDatanodeUuid());
        }
        if (best.fds().resident() >= probeLength && best.dn() != near.get(0)) {
          fs.countNearReplicaCachedChoice();
        }
      }
      Asked chosen = best;
      best = null;
      return chosen;
    } finally {
      if (best != null) {
        best.fds().close();
      }
    }
  }

  /**
   * A source for {@code [offset, offset + len)} of the file, all inside block
   * {@code lb}: an hrdma reader on the first usable replica, else the stock stream.
   *
   * <p>A block the NameNode knows no replica of (a restarted NameNode before the
   * DataNodes' block reports) is asked for again as stock's {@code chooseDataNode}
   * does: after a growing wait ({@code dfs.client.retry.window.base}), at most
   * {@code dfs.client.max.block.acquire.failures} times, then it is missing.
   *
   * @param await whether to wait for locations (false: a read ahead, which only tries)
   * @throws ChecksumException every replica was found bad by this stream (with each one's cause)
   * @throws BlockMissingException no replica of the block is known
   */
  private Source open(LocatedBlock lb, long offset, long len, ChecksumException lastBad, boolean positional,
      boolean await) throws IOException {
    return open(lb, offset, len, lastBad, positional, await, null);
  }

  /**
   * As {@link #open(LocatedBlock, long, long, ChecksumException, boolean, boolean)}, but not on
   * the replica of DataNode {@code avoid} (a uuid; null: any): null when no other replica can be
   * read, as stock's seekToNewSource, which leaves its current node out for that one choice.
   */
  private Source open(LocatedBlock lb, long offset, long len, ChecksumException lastBad, boolean positional,
      boolean await, String avoid) throws IOException {
    boolean refetched = false;
    int acquireFailures = 0;
    while (true) {
      if (lb.getLocations().length == 0) {
        lb = awaitLocations(lb, acquireFailures++, await);
        continue;
      }
      Set<String> badHere;
      synchronized (infoLock) {
        Set<String> b = bad.get(lb.getBlock().getBlockId());
        badHere = b == null ? Set.of() : Set.copyOf(b);
      }
      boolean anyNotBad = false;
      boolean otherOnStockPath = false;
      InvalidBlockTokenException tokenProblem = null;
      List<DatanodeInfo> order = candidates(lb);
      long inBlock = offset - lb.getStartOffset();
      // a positional read keeps the replica open for later reads of the block: its whole length counts.
      // So does a read of a block no longer than one verify window (a small file's): verify-ahead and
      // read-ahead gain it nothing, and the next opening of the block reads the kept replica with no
      // exchange with its DataNode (stock's short-circuit cache keeps replicas across streams the same way)
      // (not a block a DataNode caches: the sequential reader reads that one with no checksum work)
      boolean keep = fs.blockClient().replicas().enabled() && (positional
          || lb.getBlockSize() <= fs.blockClient().localWindowBytes() && lb.getCachedLocations().length == 0);
      boolean wholeBlock = keep;
      Map<String, IOException> probeFailed = new HashMap<>();
      DatanodeInfo kept = keep ? keptReplica(lb, order, badHere, avoid) : null;
      Asked chosen = kept != null ? null : probeLocal(lb, order, badHere, avoid, wholeBlock ? 0 : inBlock,
          wholeBlock ? lb.getBlockSize() : len, probeFailed);
      if (kept != null) {
        order.remove(kept);
        order.add(0, kept);
      }
      if (chosen != null) {
        order.remove(chosen.dn());
        order.add(0, chosen.dn());
      }
      try {
        for (DatanodeInfo dn : order) {
          if (badHere.contains(dn.getDatanodeUuid())) {
            continue;
          }
          anyNotBad = true;
          if (dn.getDatanodeUuid().equals(avoid)) {
            continue;
          }
          if (fs.onStockPath(dn)) {
            otherOnStockPath = true;
            continue;
          }
          if (fs.tryLocal(dn)) {
            try {
              IOException failedBefore = probeFailed.get(dn.getDatanodeUuid());
              if (failedBefore != null) {
                throw failedBefore;
              }
              ShortCircuitClient.Fds given = null;
              if (chosen != null && chosen.dn() == dn) {
                given = chosen.fds();
                chosen = null;
              }
              BlockReader r = keep ? fs.blockClient().preadLocal(lb, dn, inBlock, len, given, verifyChecksum)
                  : fs.blockClient().openLocal(lb, dn, inBlock, len, given, verifyChecksum);
              return new Source(lb, dn, r, offset, 0);
            } catch (InvalidBlockTokenException e) {
              tokenProblem = e;
              continue;
            } catch (RdmaBlockClient.LocalReadsRefused e) {
              fs.noLocalReads(dn, e); // no socket there, or it gives no files to this client
            } catch (IOException e) {
              fs.countLocalFallback(); // this replica only (not finalized yet, moved): this block over hrdma
            }
          }
          try {
            int distance = fs.getClient().getClientContext().getNetworkDistance(dn);
            RdmaBlockReader r = fs.blockClient().open(lb, dn, offset - lb.getStartOffset(), len, verifyChecksum);
            return new Source(lb, dn, r, offset, distance);
          } catch (InvalidBlockTokenException e) {
            tokenProblem = e;
          } catch (IOException e) {
            fs.fallBack(dn, e);
          } catch (IllegalArgumentException e) { // hrdma.datanode.port settings give no port for it
            fs.fallBack(dn, new IOException(e.getMessage(), e));
          }
        }
      } finally {
        if (chosen != null) { // not taken: its replica turned out bad meanwhile, or an error before
          chosen.fds().close();
        }
      }
      if (tokenProblem != null && !refetched) {
        lb = refetch(lb); // the token expired: a new one, and fresh locations
        refetched = true;
        continue;
      }
      if (!anyNotBad) {
        if (!refetched) { // the NameNode may know of other replicas by now
          lb = refetch(lb);
          refetched = true;
          continue;
        }
        throw allBad(lb, offset, lastBad);
      }
      if (avoid != null && !otherOnStockPath) {
        return null; // no other replica: the caller keeps the one it has
      }
      if (tokenProblem != null) {
        throw tokenProblem;
      }
      return new Source(lb, null, null, offset, -1); // stock path
    }
  }

  /**
   * The NameNode gave no location for {@code lb}: as stock's {@code refetchLocations},
   * waits {@code window * failures} plus a random part of {@code window * (failures + 1)},
   * then asks again; a BlockMissingException once {@code failures} reaches the client's
   * {@code dfs.client.max.block.acquire.failures} (or at once if {@code await} is false).
   */
  private LocatedBlock awaitLocations(LocatedBlock lb, int failures, boolean await) throws IOException {
    if (!await || failures >= fs.getClient().getConf().getMaxBlockAcquireFailures()) {
      throw new BlockMissingException(src, "Could not obtain block: " + lb.getBlock() + " file=" + src
          + ": the NameNode knows no replica of it", lb.getStartOffset());
    }
    int window = fs.getClient().getConf().getTimeWindow();
    long wait = (long) (window * failures + window * (failures + 1) * ThreadLocalRandom.current().nextDouble());
    LOG.info("hrdma: no replica of {} known yet (file {}); asking the NameNode again in {} ms", lb.getBlock(), src,
        wait);
    try {
      Thread.sleep(wait);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted while waiting for the locations of " + lb.getBlock());
    }
    return refetch(lb);
  }

  /**
   * Every replica of {@code lb} was found bad by this stream: a ChecksumException
   * naming each replica with the first failure seen on it (the causes: the one
   * {@code lastBad} of this call, else the first, as cause, the others suppressed),
   * at the bad chunk of this call's failure if any.
   */
  private ChecksumException allBad(LocatedBlock lb, long offset, ChecksumException lastBad) {
    Map<String, ChecksumException> why;
    synchronized (infoLock) {
      why = new java.util.LinkedHashMap<>(badWhy.getOrDefault(lb.getBlock().getBlockId(), Map.of()));
    }
    StringBuilder m = new StringBuilder("every replica of ").append(lb.getBlock()).append(" failed its checksum:");
    for (DatanodeInfo dn : lb.getLocations()) {
      ChecksumException c = why.get(dn.getDatanodeUuid());
      m.append(' ').append(dn.getXferAddr()).append(" (").append(dn.getDatanodeUuid()).append("): ")
          .append(c == null ? "not read by this stream" : c.getMessage()).append(';');
    }
    ChecksumException main = lastBad != null ? lastBad : why.values().stream().findFirst().orElse(null);
    ChecksumException e = new ChecksumException(m.substring(0, m.length() - 1), main == null ? offset
        : main.getPos());
    if (main != null) {
      e.initCause(main);
    }
    for (ChecksumException c : why.values()) {
      if (c != main) {
        e.addSuppressed(c);
      }
    }
    return e;
  }

  /**
   * {@code n} bytes came from {@code s}'s reader in {@code millis}: counted as
   * stock block readers count theirs (short-circuit, same host, remote).
   */
  private void count(Source s, int n, long millis) {
    if (s.reader instanceof LocalBlockReader || s.reader instanceof LocalReplicas.Range) {
      fs.countLocalBytes(n);
      if (!verifyChecksum || s.reader instanceof LocalBlockReader lr && !lr.verifies()) {
        fs.countLocalBytesUnverified(n);
      }
      readStatistics.addShortCircuitBytes(n);
    } else {
      fs.countRdmaBytes(n);
      if (s.distance == 0) {
        readStatistics.addLocalBytes(n);
      } else {
        readStatistics.addRemoteBytes(n);
      }
    }
    countFileSystemRead(s.distance, n, millis);
  }

  /**
   * Bytes came through the stock stream: its own statistics went to the file
   * system already; this stream's take what its read statistics gained.
   */
  private void countStock(int n) {
    fs.countStockBytes(n);
    synchronized (stockLock) {
      if (stock == null) {
        return; // released meanwhile (unbuffer, close)
      }
      ReadStatistics now = stock.getReadStatistics();
      long sc = now.getTotalShortCircuitBytesRead() - stockCounted.getTotalShortCircuitBytesRead();
      long local = now.getTotalLocalBytesRead() - stockCounted.getTotalLocalBytesRead() - sc;
      long all = now.getTotalBytesRead() - stockCounted.getTotalBytesRead();
      readStatistics.addShortCircuitBytes(sc);
      readStatistics.addLocalBytes(local);
      readStatistics.addRemoteBytes(all - sc - local);
      stockCounted = now;
    }
  }

  /** {@code s}'s replica failed with {@code e}: skip it from now on. */
  private void failed(Source s, IOException e) {
    s.close();
    if (e instanceof ChecksumException ce) {
      fs.countChecksumError();
      markBad(s.block, s.dn, ce);
    } else {
      fs.fallBack(s.dn, e);
    }
  }

  /**
   * {@code dn}'s replica of {@code lb} is bad for this stream: with {@code why} (its first
   * checksum failure is kept), to be reported once another replica served.
   */
  private void markBad(LocatedBlock lb, DatanodeInfo dn, ChecksumException why) {
    long id = lb.getBlock().getBlockId();
    synchronized (infoLock) {
      boolean added = bad.computeIfAbsent(id, k -> new HashSet<>()).add(dn.getDatanodeUuid());
      badWhy.computeIfAbsent(id, k -> new java.util.LinkedHashMap<>()).putIfAbsent(dn.getDatanodeUuid(), why);
      if (added) {
        unreported.computeIfAbsent(id, k -> new ArrayList<>()).add(dn);
      }
    }
  }

  /** Bytes of {@code lb} were read fine: report the replicas of it found bad. */
  private void servedFine(LocatedBlock lb) {
    List<DatanodeInfo> dns;
    synchronized (infoLock) {
      if (unreported.isEmpty()) {
        return;
      }
      dns = unreported.remove(lb.getBlock().getBlockId());
    }
    if (dns == null) {
      return;
    }
    try {
      LocatedBlock[] report = new LocatedBlock[dns.size()];
      for (int i = 0; i < report.length; i++) {
        report[i] = new LocatedBlock(lb.getBlock(), new DatanodeInfo[] {dns.get(i)});
      }
      fs.getClient().reportBadBlocks(report);
      for (int i = 0; i < report.length; i++) {
        fs.countBadReplicaReported();
      }
    } catch (IOException e) {
      // best effort, as the stock client: the block scanner finds it too
      LOG.warn("hrdma: could not report bad replicas of {}: {}",
          lb.getBlock(), StringUtils.stringifyException(e));
    }
  }

  private DFSInputStream stock() throws IOException {
    synchronized (stockLock) {
      if (stock == null) {
        stock = fs.getClient().open(src, bufferSize, verifyChecksum); // counts no second open, as stock
        stockCounted = stock.getReadStatistics();
      }
      return stock;
    }
  }

  // ---------------------------------------------------------------- sequential reads

  /** The DataNode the current sequential reader reads from, or null (tests). */
  synchronized DatanodeInfo currentDataNode() {
    return cur == null ? null : cur.dn;
  }

  /** As stock: the DataNode the last sequential read came from (the stock stream's on the stock path). */
  @Override
  public synchronized DatanodeInfo getCurrentDatanode() {
    if (cur != null && cur.dn == null && stock != null) {
      return stock.getCurrentDatanode();
    }
    return cur == null ? null : cur.dn;
  }

  /** As stock: the block the last sequential read came from. */
  @Override
  public synchronized ExtendedBlock getCurrentBlock() {
    return cur == null ? null : cur.block.getBlock();
  }

  private void checkOpen() throws IOException {
    checkClientOpen();
    if (closed.get()) {
      throw new IOException(FSExceptionMessages.STREAM_IS_CLOSED + ": " + src);
    }
  }

  /** Reads at most {@code max} bytes (from one block) at the position into {@code sink}. */
  private int readSequential(Sink sink, int max) throws IOException {
    checkOpen();
    if (pos >= fileLength) {
      return -1; // as stock, even for an empty buffer
    }
    if (max == 0) {
      return 0;
    }
    ChecksumException lastBad = null;
    boolean tokenRefetched = false;
    while (true) {
      LocatedBlock lb = blockAt(pos);
      if (cur == null || !cur.at(pos) || cur.block.getStartOffset() != lb.getStartOffset()) {
        dropCurrent();
        if (ahead != null && next == null && ahead.lb.getStartOffset() == lb.getStartOffset()
            && pos == lb.getStartOffset()) {
          next = ahead.take(); // waits for an open under way: shorter than asking again
          ahead = null;
        }
        if (next != null && next.at(pos)) {
          cur = next;
          next = null;
        } else {
          dropNext();
          cur = open(lb, pos, lb.getStartOffset() + lb.getBlockSize() - pos, lastBad, false, true);
        }
      }
      int want = (int) Math.min(max, cur.end() - pos);
      int n;
      if (cur.reader == null) {
        n = sink.fromStock(stock(), pos, want);
        if (n > 0) {
          countStock(n);
        }
      } else {
        long t0 = System.nanoTime();
        try {
          n = sink.fromReader(cur.reader, want);
        } catch (ChecksumException e) {
          lastBad = e;
          failed(cur, e);
          cur = null;
          continue;
        } catch (InvalidBlockTokenException e) {
          // as stock: once per read, new locations and tokens from the NameNode, and again
          dropCurrent();
          if (tokenRefetched) {
            throw e;
          }
          refetch(lb);
          tokenRefetched = true;
          continue;
        } catch (IOException e) {
          failed(cur, e);
          cur = null;
          continue;
        }
        if (n > 0) {
          count(cur, n, (System.nanoTime() - t0) / 1_000_000);
          servedFine(cur.block);
          cur.consumed += n;
        }
      }
      if (n < 0) {
        throw new EOFException("unexpected end of " + cur.block.getBlock() + " at file offset " + pos + " of "
            + src);
      }
      pos += n;
      readAhead();
      return n;
    }
  }

  /**
   * Near the end of a sequentially read block: the next block's reader goes out now; after a
   * short-circuit reader, from further ahead and on the opener thread ({@link OpenAhead}).
   */
  private void readAhead() {
    if (next != null || ahead != null || cur == null || cur.reader == null || cur.end() >= fileLength
        || cur.consumed < Math.min(SEQUENTIAL_EVIDENCE, cur.end() - cur.from)) {
      return;
    }
    try {
      java.util.concurrent.ThreadPoolExecutor opener = cur.reader instanceof LocalBlockReader
          ? fs.blockClient().opener() : null;
      long before = fs.blockClient().requestBytes();
      if (opener != null) {
        before = Math.max(before, LOCAL_OPEN_AHEAD_BYTES);
      }
      if (cur.reader.remaining() > before) {
        return; // the reader has requests to send in this block still (or much of it left to read)
      }
      LocatedBlock nb = blockAt(cur.end());
      if (opener != null) {
        OpenAhead a = new OpenAhead(nb, opener);
        try {
          opener.execute(a);
          ahead = a;
          return;
        } catch (java.util.concurrent.RejectedExecutionException e) {
          // the opener is busy or shut down: opened here, as before
        }
      }
      Source s = open(nb, nb.getStartOffset(), nb.getBlockSize(), null, false, false);
      if (s.reader == null) {
        return;
      }
      next = s;
    } catch (IOException e) {
      // the read of that block will meet it again and deal with it
    }
  }

  private void dropCurrent() {
    if (cur != null) {
      cur.close();
      cur = null;
    }
  }

  private void dropNext() {
    if (next != null) {
      next.close();
      next = null;
    }
    if (ahead != null) {
      ahead.drop();
      ahead = null;
    }
  }

  /**
   * The next block's source, opened on the opener thread as {@link #readAhead} would open it on
   * the caller's. The stream takes it at the block boundary ({@link #take}: waiting for an open
   * under way, opening the block itself when the opener has not started) or drops it (a seek,
   * unbuffer, close: {@link #drop}, which never waits; what the opener opens after that it closes
   * itself). A failed open is not the stream's: it opens the block at the boundary and meets the
   * failure there, as after a read ahead on its own thread. The opener calls only what positional
   * reads call from any thread ({@link #open}: the stream's shared state under its lock), never a
   * synchronized method of the stream.
   */
  private final class OpenAhead extends VerifyOnce {
    final LocatedBlock lb;
    private final java.util.concurrent.ThreadPoolExecutor opener;
    private Source result;   // guarded by this
    private boolean dropped; // guarded by this: the stream wants it no more

    OpenAhead(LocatedBlock lb, java.util.concurrent.ThreadPoolExecutor opener) {
      this.lb = lb;
      this.opener = opener;
    }

    @Override
    protected void check() throws IOException {
      Source s = open(lb, lb.getStartOffset(), lb.getBlockSize(), null, false, false);
      synchronized (this) {
        if (!dropped && s.reader != null) { // the stock path: decided at the boundary, as before
          result = s;
          return;
        }
      }
      s.close();
    }

    /** The source opened (after waiting for an open under way), or null: not started (withdrawn) or failed. */
    Source take() {
      if (withdraw()) {
        opener.remove(this);
        return null;
      }
      await();
      Source s = claim();
      if (s != null) {
        OPENED_AHEAD.increment();
      }
      return s;
    }

    /** Marks this open not wanted by the opener any more and takes what it opened, if anything. */
    private synchronized Source claim() {
      dropped = true;
      Source s = result;
      result = null;
      return s;
    }

    /** Not wanted any more: closed now if opened, else by the opener when its open is done. */
    void drop() {
      if (withdraw()) {
        opener.remove(this);
        return;
      }
      Source s = claim();
      if (s != null) {
        s.close();
      }
    }
  }

  @Override
  public synchronized int read() throws IOException {
    byte[] one = new byte[1];
    int n = read(one, 0, 1);
    return n <= 0 ? -1 : one[0] & 0xff;
  }

  @Override
  public synchronized int read(byte[] b, int off, int len) throws IOException {
    if (off < 0 || len < 0 || len > b.length - off) {
      throw new IndexOutOfBoundsException("offset " + off + ", length " + len + ", buffer " + b.length);
    }
    if (len == 0) {
      return 0; // as stock: an empty array read is 0 even at the end (an empty ByteBuffer's is -1 there)
    }
    return readSequential(arraySink(b, off), len);
  }

  @Override
  public synchronized int read(ByteBuffer buf) throws IOException {
    return readSequential(bufferSink(buf), buf.remaining());
  }

  private static Sink arraySink(byte[] b, int off) {
    return new Sink() {
      @Override
      public int fromReader(BlockReader r, int max) throws IOException {
        return r.read(b, off, max);
      }

      @Override
      public int fromStock(DFSInputStream s, long position, int max) throws IOException {
        if (s.getPos() != position) {
          s.seek(position);
        }
        return s.read(b, off, max);
      }
    };
  }

  private static Sink bufferSink(ByteBuffer buf) {
    return new Sink() {
      @Override
      public int fromReader(BlockReader r, int max) throws IOException {
        ByteBuffer d = buf.duplicate();
        d.limit(d.position() + max);
        int n = r.read(d);
        if (n > 0) {
          buf.position(buf.position() + n);
        }
        return n;
      }

      @Override
      public int fromStock(DFSInputStream s, long position, int max) throws IOException {
        if (s.getPos() != position) {
          s.seek(position);
        }
        ByteBuffer d = buf.duplicate();
        d.limit(d.position() + max);
        int n = s.read(d);
        if (n > 0) {
          buf.position(buf.position() + n);
        }
        return n;
      }
    };
  }

  // ---------------------------------------------------------------- positional reads

  /** Reads {@code [position, position + len)} (inside the file) into {@code sink}, block by block. */
  private void readFullyAt(long position, int len, PositionalSink sink) throws IOException {
    int done = 0;
    while (done < len) {
      long at = position + done;
      LocatedBlock lb = blockAt(at);
      int n = (int) Math.min(len - done, lb.getStartOffset() + lb.getBlockSize() - at);
      if (hedgedReadsEnabled()) {
        readHedged(lb, at, n, done, sink);
        done += n;
        continue;
      }
      ChecksumException lastBad = null;
      boolean tokenRefetched = false;
      while (true) {
        Source s = open(lb, at, n, lastBad, true, true);
        if (s.reader == null) {
          sink.fromStock(stock(), at, done, n);
          countStock(n);
          break;
        }
        long t0 = System.nanoTime();
        try {
          // the stock client's hooks, where its positional read from one DataNode calls them
          FaultInjection.startFetchFromDatanode();
          FaultInjection.fetchFromDatanodeException();
          sink.fromReader(s.reader, done, n);
          FaultInjection.readFromDatanodeDelay();
        } catch (ChecksumException e) {
          lastBad = e;
          failed(s, e);
          continue;
        } catch (InvalidBlockTokenException e) {
          // as stock: once per block of the read, new locations and tokens, and again
          if (tokenRefetched) {
            throw e;
          }
          lb = refetch(lb);
          tokenRefetched = true;
          continue;
        } catch (IOException e) {
          failed(s, e);
          continue;
        } finally {
          s.reader.close();
        }
        count(s, n, (System.nanoTime() - t0) / 1_000_000);
        servedFine(lb);
        break;
      }
      done += n;
    }
  }

  /**
   * A positional read of {@code [at, at + n)}, all inside {@code lb}, with hedging, as stock's
   * hedgedFetchBlockByteRange: the range is read from one replica on the client's hedged-read
   * pool; if it has not come within the threshold, {@code hedgedReadOps} counts one and the
   * range is asked of another replica not asked yet, and the first answer is taken
   * ({@code hedgedReadWins}); a failed answer makes way for the next replica. A read the pool
   * cannot take runs in this thread (the pool counts it). Bytes from the stock path (a
   * DataNode without the plugin) come through the stock stream, which hedges by itself.
   */
  private void readHedged(LocatedBlock lb, long at, int n, int done, PositionalSink sink) throws IOException {
    CompletionService<byte[]> hedged = new ExecutorCompletionService<>(hedgedReadPool());
    Map<Future<byte[]>, Source> running = new HashMap<>();
    long threshold = fs.getClient().getConf().getHedgedReadThresholdMillis();
    ChecksumException lastBad = null;
    boolean tokenRefetched = false;
    boolean hedging = false;
    try {
      while (true) {
        Future<byte[]> answer;
        if (running.isEmpty()) {
          Source s = open(lb, at, n, lastBad, true, true);
          if (s.reader == null) {
            sink.fromStock(stock(), at, done, n);
            countStock(n);
            return;
          }
          running.put(hedged.submit(fetch(s, n)), s);
          answer = hedged.poll(threshold, TimeUnit.MILLISECONDS);
          if (answer == null) {
            hedgedReadMetrics().incHedgedReadOps();
            hedging = true;
            continue;
          }
        } else {
          Source s = openAnother(lb, at, n, running.values());
          if (s != null) {
            running.put(hedged.submit(fetch(s, n)), s);
          }
          answer = hedged.take();
        }
        Source s = running.remove(answer);
        try {
          byte[] b = answer.get();
          sink.fromArray(b, done);
          count(s, n, (System.nanoTime() - s.started) / 1_000_000);
          servedFine(lb);
          if (hedging) {
            hedgedReadMetrics().incHedgedReadWins(); // as stock: any answer after a hedge started
          }
          return;
        } catch (ExecutionException e) {
          Throwable c = e.getCause();
          if (c instanceof ChecksumException ce) {
            lastBad = ce;
            failed(s, ce);
          } else if (c instanceof InvalidBlockTokenException te) {
            if (tokenRefetched) {
              throw te;
            }
            lb = refetch(lb); // as stock: new locations and tokens, once per block of the read
            tokenRefetched = true;
          } else if (c instanceof IOException io) {
            failed(s, io);
          } else {
            throw new IOException("hedged read of " + lb.getBlock() + " failed", c);
          }
        }
      }
    } catch (InterruptedException e) {
      throw new InterruptedIOException("interrupted while waiting for a read of " + lb.getBlock());
    }
    // the reads still running (lost, or left on an error) end by themselves and close their readers
  }

  /** The read of a whole range from {@code s}'s reader, on the hedged-read pool; the reader is closed after. */
  private static Callable<byte[]> fetch(Source s, int n) {
    s.started = System.nanoTime();
    return () -> {
      try {
        FaultInjection.startFetchFromDatanode();
        FaultInjection.fetchFromDatanodeException();
        byte[] b = new byte[n];
        s.reader.readFully(b, 0, n);
        FaultInjection.readFromDatanodeDelay();
        return b;
      } finally {
        s.reader.close();
      }
    };
  }

  /**
   * A reader of {@code [offset, offset + len)} of {@code lb} on a replica not asked yet
   * ({@code asked}) and not found bad or failed by this stream; null when there is none
   * (a hedge is then not started: the reads running go on).
   */
  private Source openAnother(LocatedBlock lb, long offset, long len, java.util.Collection<Source> asked) {
    Set<String> skip;
    synchronized (infoLock) { // positional reads run concurrently
      skip = new HashSet<>(bad.getOrDefault(lb.getBlock().getBlockId(), Set.of()));
    }
    for (Source a : asked) {
      skip.add(a.dn.getDatanodeUuid());
    }
    for (DatanodeInfo dn : candidates(lb)) {
      if (skip.contains(dn.getDatanodeUuid()) || fs.onStockPath(dn)) {
        continue;
      }
      try {
        if (fs.tryLocal(dn)) {
          try {
            return new Source(lb, dn, fs.blockClient().openLocal(lb, dn, offset - lb.getStartOffset(), len, null,
                verifyChecksum), offset, 0);
          } catch (RdmaBlockClient.LocalReadsRefused e) {
            fs.noLocalReads(dn, e);
          } catch (IOException e) {
            fs.countLocalFallback();
          }
        }
        int distance = fs.getClient().getClientContext().getNetworkDistance(dn);
        return new Source(lb, dn, fs.blockClient().open(lb, dn, offset - lb.getStartOffset(), len,
            verifyChecksum), offset, distance);
      } catch (InvalidBlockTokenException e) {
        // the running read will meet the same token; no hedge on this replica
      } catch (IOException e) {
        fs.fallBack(dn, e);
      } catch (IllegalArgumentException e) {
        fs.fallBack(dn, new IOException(e.getMessage(), e));
      }
    }
    return null;
  }

  /** Where positional reads put bytes: the {@code done}-th byte onwards of the caller's target. */
  private interface PositionalSink {
    void fromReader(BlockReader r, int done, int n) throws IOException;

    void fromStock(DFSInputStream s, long position, int done, int n) throws IOException;

    /** {@code b}, read already (by a hedged read). */
    void fromArray(byte[] b, int done);
  }

  @Override
  public int read(long position, byte[] b, int off, int len) throws IOException {
    validatePositionedReadArgs(position, b, off, len);
    checkOpen();
    if (len == 0) {
      return 0;
    }
    if (position >= fileLength) {
      return -1;
    }
    int n = (int) Math.min(len, fileLength - position);
    readFullyAt(position, n, new PositionalSink() {
      @Override
      public void fromReader(BlockReader r, int done, int k) throws IOException {
        r.readFully(b, off + done, k);
      }

      @Override
      public void fromStock(DFSInputStream s, long p, int done, int k) throws IOException {
        s.readFully(p, b, off + done, k);
      }

      @Override
      public void fromArray(byte[] got, int done) {
        System.arraycopy(got, 0, b, off + done, got.length);
      }
    });
    return n;
  }

  @Override
  public void readFully(long position, byte[] b, int off, int len) throws IOException {
    validatePositionedReadArgs(position, b, off, len);
    checkOpen();
    if (position + len > fileLength) {
      throw new EOFException(FSExceptionMessages.EOF_IN_READ_FULLY + ": " + len + " bytes at " + position
          + " of " + src + " (" + fileLength + " bytes)");
    }
    if (len > 0) {
      read(position, b, off, len);
    }
  }

  @Override
  public int read(long position, ByteBuffer buf) throws IOException {
    checkOpen();
    if (position < 0) {
      throw new EOFException("negative position: " + position);
    }
    if (!buf.hasRemaining()) {
      return 0;
    }
    if (position >= fileLength) {
      return -1;
    }
    int n = (int) Math.min(buf.remaining(), fileLength - position);
    int start = buf.position();
    readFullyAt(position, n, new PositionalSink() {
      @Override
      public void fromReader(BlockReader r, int done, int k) throws IOException {
        ByteBuffer d = buf.duplicate();
        d.position(start + done).limit(start + done + k);
        while (d.hasRemaining()) {
          if (r.read(d) < 0) {
            throw new EOFException("the range of the block ended early");
          }
        }
      }

      @Override
      public void fromStock(DFSInputStream s, long p, int done, int k) throws IOException {
        byte[] tmp = new byte[k];
        s.readFully(p, tmp, 0, k);
        ByteBuffer d = buf.duplicate();
        d.position(start + done);
        d.put(tmp);
      }

      @Override
      public void fromArray(byte[] got, int done) {
        ByteBuffer d = buf.duplicate();
        d.position(start + done);
        d.put(got);
      }
    });
    buf.position(start + n);
    return n;
  }

  @Override
  public void readFully(long position, ByteBuffer buf) throws IOException {
    checkOpen();
    if (position < 0 || position + buf.remaining() > fileLength) {
      throw new EOFException(FSExceptionMessages.EOF_IN_READ_FULLY + ": " + buf.remaining() + " bytes at "
          + position + " of " + src + " (" + fileLength + " bytes)");
    }
    if (buf.hasRemaining()) {
      read(position, buf);
    }
  }

  // ---------------------------------------------------------------- zero-copy reads

  /** What a zero-copy read of 0 bytes returns, as stock. */
  private static final ByteBuffer EMPTY_BUFFER = ByteBuffer.allocateDirect(0).asReadOnlyBuffer();
  /** Buffers read(ByteBufferPool, ...) handed out and not released: their MappedReplica, or the pool of a copy. */
  private final IdentityHashMap<ByteBuffer, Object> extended = new IdentityHashMap<>();
  /** The replica zero-copy reads slice (the stream's reference), or null. */
  private MappedReplica mapped;

  /**
   * As stock: at most {@code maxLength} bytes at the position, within one
   * block, or null at the end of the file. A replica on this host is mapped
   * (read-only) and a slice of it handed out, its chunks verified first
   * unless {@link ReadOption#SKIP_CHECKSUMS} is given, the stream verifies
   * no checksums, or the DataNode caches the replica; a chunk that fails is a
   * bad replica (skipped, reported once another serves). Where no replica
   * can be mapped, the bytes are copied into a buffer of {@code pool} by a
   * read of this stream (counted: {@link RdmaDistributedFileSystem#zeroCopyFallbacks}).
   * Either way the caller gives the buffer back with {@link #releaseBuffer}.
   */
  @Override
  public synchronized ByteBuffer read(ByteBufferPool pool, int maxLength, EnumSet<ReadOption> opts)
      throws IOException {
    checkOpen();
    if (maxLength == 0) {
      return EMPTY_BUFFER;
    }
    if (maxLength < 0) {
      throw new IllegalArgumentException("can't read a negative number of bytes.");
    }
    if (pos >= fileLength) {
      return null;
    }
    if (fs.zeroCopyEnabled()) {
      ByteBuffer b = readMapped(maxLength, verifyChecksum && !opts.contains(ReadOption.SKIP_CHECKSUMS));
      if (b != null) {
        return b;
      }
    }
    fs.countZeroCopyFallback();
    ByteBuffer b = ZeroCopyFallback.read(this, pool, maxLength);
    if (b != null) {
      extended.put(b, pool);
    }
    return b;
  }

  /** A slice of a mapped replica at the position, or null when no replica on this host can be mapped. */
  private ByteBuffer readMapped(int maxLength, boolean verify) throws IOException {
    while (true) {
      LocatedBlock lb = blockAt(pos);
      long inBlock = pos - lb.getStartOffset();
      if (mapped == null || !mapped.block().equals(lb.getBlock()) || !mapped.covers(inBlock)) {
        dropMapped();
        mapped = mapReplica(lb, inBlock);
        if (mapped == null) {
          return null;
        }
      }
      boolean check = verify && !mapped.cached();
      int max = (int) Math.min(maxLength, lb.getBlockSize() - inBlock);
      long t0 = System.nanoTime();
      ByteBuffer b;
      try {
        b = mapped.slice(inBlock, max, check);
      } catch (ChecksumException e) {
        // as a sequential reader's: this replica is bad for the stream, another serves (or the copying read)
        fs.countChecksumError();
        markBad(lb, mapped.datanode(), e);
        dropMapped();
        continue;
      } catch (IOException e) {
        fs.countLocalFallback(); // the file changed under us: the copying read finds another way
        dropMapped();
        return null;
      }
      extended.put(b, mapped);
      int n = b.remaining();
      pos += n;
      readStatistics.addZeroCopyBytes(n); // as stock: counted as short-circuit and local bytes too
      fs.countLocalBytes(n);
      fs.countZeroCopyBytes(n);
      if (!check) {
        fs.countLocalBytesUnverified(n);
      }
      countFileSystemRead(0, n, (System.nanoTime() - t0) / 1_000_000);
      servedFine(lb);
      return b;
    }
  }

  /** Maps the first usable replica of {@code lb} on this host from {@code inBlock} on, or null. */
  private MappedReplica mapReplica(LocatedBlock lb, long inBlock) throws IOException {
    boolean refetched = false;
    while (true) {
      Set<String> badHere;
      synchronized (infoLock) { // positional reads run concurrently
        badHere = new HashSet<>(bad.getOrDefault(lb.getBlock().getBlockId(), Set.of()));
      }
      boolean tokenProblem = false;
      for (DatanodeInfo dn : candidates(lb)) {
        if (badHere.contains(dn.getDatanodeUuid()) || fs.onStockPath(dn) || !fs.tryLocal(dn)) {
          continue;
        }
        try {
          ShortCircuitClient.Fds f = fs.blockClient().localFiles(lb, dn); // taken over by the replica
          RdmaBlockClient c = fs.blockClient();
          return MappedReplica.map(lb.getBlock(), dn, f, lb.getBlockSize(), inBlock)
              .verifyAhead(c.localVerifier(), c.localWindowBytes(), c.localVerifyAhead());
        } catch (InvalidBlockTokenException e) {
          tokenProblem = true;
        } catch (RdmaBlockClient.LocalReadsRefused e) {
          fs.noLocalReads(dn, e);
        } catch (IOException e) {
          fs.countLocalFallback();
        }
      }
      if (tokenProblem && !refetched) {
        lb = refetch(lb); // as the other read paths: new tokens once
        refetched = true;
        continue;
      }
      return null;
    }
  }

  private void dropMapped() {
    if (mapped != null) {
      mapped.detach();
      mapped = null;
    }
  }

  /** As stock: gives back a buffer {@link #read(ByteBufferPool, int, EnumSet)} handed out (also after close). */
  @Override
  public synchronized void releaseBuffer(ByteBuffer buffer) {
    if (buffer == EMPTY_BUFFER) {
      return;
    }
    Object from = extended.remove(buffer);
    if (from == null) {
      throw new IllegalArgumentException("tried to release a buffer that was not created by this stream, " + buffer);
    }
    if (from instanceof MappedReplica m) {
      m.release();
    } else {
      ((ByteBufferPool) from).putBuffer(buffer);
    }
  }

  /** The DataNode whose replica zero-copy reads map now, or null (tests). */
  synchronized DatanodeInfo mappedDataNode() {
    return mapped == null ? null : mapped.datanode();
  }

  /** Buffers handed out by zero-copy reads and not released (tests). */
  synchronized int buffersOut() {
    return extended.size();
  }

  // ---------------------------------------------------------------- position

  @Override
  public synchronized void seek(long target) throws IOException {
    checkOpen();
    if (target < 0) {
      throw new EOFException(FSExceptionMessages.NEGATIVE_SEEK + ": " + target);
    }
    if (target > fileLength) {
      throw new EOFException(FSExceptionMessages.CANNOT_SEEK_PAST_EOF + ": " + target + " > " + fileLength);
    }
    if (target == pos) {
      return;
    }
    if (cur != null && cur.reader != null && target > pos && target < cur.end() && cur.at(pos)
        && target - pos <= fs.blockClient().requestBytes()) {
      // a short skip forward inside the block: the bytes are in flight already, drop them
      ByteBuffer scratch = ByteBuffer.allocate((int) Math.min(64 * 1024, target - pos));
      try {
        while (pos < target) {
          scratch.clear().limit((int) Math.min(scratch.capacity(), target - pos));
          int n = cur.reader.read(scratch);
          if (n <= 0) {
            break;
          }
          pos += n;
          cur.consumed += n;
        }
      } catch (IOException e) {
        dropCurrent(); // the next read opens another replica
      }
    }
    pos = target;
  }

  @Override
  public synchronized long getPos() {
    return pos;
  }

  @Override
  public synchronized long skip(long n) throws IOException {
    checkOpen();
    if (n <= 0) {
      return 0;
    }
    long target = Math.min(fileLength, pos + n);
    long skipped = target - pos;
    seek(target);
    return skipped;
  }

  @Override
  public synchronized int available() throws IOException {
    checkOpen();
    return (int) Math.min(Integer.MAX_VALUE, fileLength - pos);
  }

  /**
   * As stock's: the block at {@code targetPos} is opened on a replica other than the current
   * one, now (with new tokens from the NameNode should the cached ones be refused); true when
   * one was found, false when the current one is the only replica to read. The current
   * DataNode is left out of this one choice only, not for the stream: stock removes it from
   * its dead nodes again at once.
   */
  @Override
  public synchronized boolean seekToNewSource(long targetPos) throws IOException {
    checkOpen();
    if (cur == null || cur.dn == null) {
      return false;
    }
    String old = cur.dn.getDatanodeUuid();
    dropCurrent();
    dropNext();
    seek(targetPos);
    if (pos >= fileLength) {
      return false;
    }
    LocatedBlock lb = blockAt(pos);
    Source s = open(lb, pos, lb.getStartOffset() + lb.getBlockSize() - pos, null, false, false, old);
    if (s == null) {
      return false; // the next read opens a source on what there is
    }
    cur = s;
    return true;
  }

  /** Sources opened by the opener that their streams went on to read (process-wide; tests). */
  private static final java.util.concurrent.atomic.LongAdder OPENED_AHEAD = new java.util.concurrent.atomic.LongAdder();

  static long openedAhead() {
    return OPENED_AHEAD.sum();
  }

  /** Whether the opener has done opening the next block's reader (tests). */
  synchronized boolean openedAheadDone() {
    return ahead != null && ahead.isVerified();
  }

  /** Whether the next block's reader is out already (tests). */
  synchronized boolean readingAhead() {
    return next != null || ahead != null;
  }

  // ---------------------------------------------------------------- resources

  @Override
  public synchronized void unbuffer() {
    releaseOurs();
    super.unbuffer(); // the superclass's block reader, should anything of the superclass have opened one
  }

  private void releaseOurs() {
    dropCurrent();
    dropNext();
    dropMapped();
    DFSInputStream s;
    synchronized (stockLock) {
      s = stock;
      stock = null;
    }
    if (s != null) {
      try {
        s.close();
      } catch (IOException e) {
        // nothing held any more either way
      }
    }
  }

  /** As stock: a second close does nothing; closing after the file system closed throws, after releasing all. */
  @Override
  public synchronized void close() throws IOException {
    if (!closed.get()) {
      if (!extended.isEmpty()) {
        // as stock: a warning; the buffers stay valid (their replicas stay mapped) until released
        LOG.warn("closing file {}, but there are still {} "
            + "unreleased ByteBuffers allocated by read(). Please release them.", src, extended.size());
      }
      releaseOurs();
      super.close();
    }
  }

  @Override
  public String toString() {
    return "RdmaInputStream[" + src + " at " + pos + " of " + fileLength + (cur == null ? "" : ", " + cur.dn)
        + "]";
  }
}
