package org.hdfsrdma.client;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.EnumSet;
import java.net.InetAddress;
import java.net.URI;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.crypto.CryptoProtocolVersion;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.hdfs.client.HdfsDataOutputStream;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.Options.ChecksumOpt;
import org.apache.hadoop.fs.ParentNotDirectoryException;
import org.apache.hadoop.fs.permission.FsCreateModes;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.protocol.DSQuotaExceededException;
import org.apache.hadoop.hdfs.protocol.HdfsFileStatus;
import org.apache.hadoop.hdfs.protocol.NSQuotaExceededException;
import org.apache.hadoop.hdfs.protocol.QuotaByStorageTypeExceededException;
import org.apache.hadoop.hdfs.protocol.SnapshotAccessControlException;
import org.apache.hadoop.hdfs.protocol.UnresolvedPathException;
import org.apache.hadoop.hdfs.server.namenode.SafeModeException;
import org.apache.hadoop.io.EnumSetWritable;
import org.apache.hadoop.ipc.RemoteException;
import org.apache.hadoop.security.AccessControlException;
import org.apache.hadoop.util.Progressable;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.UnresolvedLinkException;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;
import org.apache.hadoop.net.NetUtils;
import org.hdfsrdma.client.compat.HadoopVersion;
import org.hdfsrdma.client.compat.StreamBaseLoader;
import org.hdfsrdma.client.compat.StockKeys;
import org.hdfsrdma.client.compat.OpCounts;
import org.hdfsrdma.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link DistributedFileSystem} whose block reads go over hrdma transports
 * to DataNodes that run the plugin. Set {@code fs.hdfs.impl} to this class:
 * every metadata call is the superclass's (the stock NameNode client), and so
 * is every stream this class does not handle itself (writes, encrypted and
 * erasure-coded files, files whose last block is still being written).
 *
 * <p>{@link #open(Path, int)} returns an {@link RdmaInputStream} in an
 * {@code HdfsDataInputStream}, as stock. A DataNode
 * whose plugin cannot be reached, or whose transport fails, is read through
 * the stock data path for {@value #FALLBACK_RETRY_KEY} ms; each such DataNode
 * is logged once and counted in {@link #stockFallbacks()}. One whose plugin
 * listens but refused as still starting (a DataNode just restarted) is read through the stock
 * path for {@value #FALLBACK_STARTING_RETRY_KEY} ms only, counted in {@link #startingFallbacks()}.
 */
public class RdmaDistributedFileSystem extends DistributedFileSystem {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaDistributedFileSystem.class);

  /** false: every read takes the stock path (this class is then a plain DistributedFileSystem). */
  public static final String ENABLED_KEY = HrdmaClientKeys.ENABLED_KEY;
  /** How long a DataNode that failed over hrdma is read through the stock path before it is tried again. */
  public static final String FALLBACK_RETRY_KEY = HrdmaClientKeys.FALLBACK_RETRY_MS_KEY;
  public static final long FALLBACK_RETRY_DEFAULT = HrdmaClientKeys.FALLBACK_RETRY_MS_DEFAULT;
  /** As {@value #FALLBACK_RETRY_KEY}, for a DataNode whose plugin refused as still starting. */
  public static final String FALLBACK_STARTING_RETRY_KEY = HrdmaClientKeys.FALLBACK_STARTING_RETRY_MS_KEY;
  public static final long FALLBACK_STARTING_RETRY_DEFAULT = HrdmaClientKeys.FALLBACK_STARTING_RETRY_MS_DEFAULT;

  private boolean enabled;
  /** Whether our streams' bases are Hadoop's package's in this JVM ({@link StreamBaseLoader}). */
  private boolean streamBase;
  /** What {@link #setVerifyChecksum} last said: the streams opened after it verify chunks or skip them. */
  private volatile boolean verifyChecksum = true;
  private long fallbackRetryNanos;
  private long startingRetryNanos;
  private volatile RdmaBlockClient blockClient;
  private final Object clientLock = new Object();
  /** DataNode uuid -> until when it is read through the stock path. */
  private final ConcurrentHashMap<String, StockUntil> stockUntil = new ConcurrentHashMap<>();

  /** Until {@code nanos} ({@link System#nanoTime}); {@code starting}: for a plugin still starting. */
  private record StockUntil(long nanos, boolean starting) {}
  private final ConcurrentHashMap<String, Boolean> localIps = new ConcurrentHashMap<>();
  private final AtomicLong stockFallbacks = new AtomicLong();
  private final AtomicLong startingFallbacks = new AtomicLong();
  private final AtomicLong rdmaBytes = new AtomicLong();
  private final AtomicLong stockBytes = new AtomicLong();
  private final AtomicLong localBytes = new AtomicLong();
  private final java.util.Set<String> noLocal = ConcurrentHashMap.newKeySet();
  private final AtomicLong localFallbacks = new AtomicLong();
  private final AtomicLong nearReplicaProbes = new AtomicLong();
  private final AtomicLong nearReplicaSwitches = new AtomicLong();
  private final AtomicLong zeroCopyBytes = new AtomicLong();
  private final AtomicLong zeroCopyFallbacks = new AtomicLong();
  private final AtomicLong localBytesUnverified = new AtomicLong();
  private volatile boolean zeroCopy = true;
  private final AtomicLong checksumErrors = new AtomicLong();
  private final AtomicLong badReplicasReported = new AtomicLong();
  private final AtomicLong stockWriteFallbacks = new AtomicLong();
  private final AtomicLong rdmaBytesWritten = new AtomicLong();
  private final AtomicLong pipelineRecoveries = new AtomicLong();
  private volatile ClientMetrics metrics;
  /** {@value HrdmaClientKeys#WARM_UP_KEY}, and our streams in use. */
  private boolean warmUp;
  /** Whether a create or an open started the warm-up of the block client and its transport, or of the client alone. */
  private final AtomicBoolean transportWarmUp = new AtomicBoolean();
  private final AtomicBoolean clientWarmUp = new AtomicBoolean();
  /** Closed: no block client is made any more by the warm-up. Guarded by {@link #clientLock}. */
  private boolean closed;

  @Override
  public void initialize(URI uri, Configuration conf) throws IOException {
    HadoopVersion.check(HadoopVersion.running());
    super.initialize(uri, conf);
    enabled = conf.getBoolean(ENABLED_KEY, HrdmaClientKeys.ENABLED_DEFAULT);
    streamBase = enabled && StreamBaseLoader.ensure(RdmaDistributedFileSystem.class.getClassLoader());
    fallbackRetryNanos = TimeUnit.MILLISECONDS.toNanos(conf.getLong(FALLBACK_RETRY_KEY, FALLBACK_RETRY_DEFAULT));
    startingRetryNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(0,
        conf.getLong(FALLBACK_STARTING_RETRY_KEY, FALLBACK_STARTING_RETRY_DEFAULT)));
    zeroCopy = org.hdfsrdma.client.compat.ZeroCopyFallback.mmapEnabled(conf);
    warmUp = enabled && streamBase && conf.getBoolean(HrdmaClientKeys.WARM_UP_KEY, HrdmaClientKeys.WARM_UP_DEFAULT);
    if (enabled && conf.getBoolean(HrdmaClientKeys.METRICS_ENABLED_KEY, HrdmaClientKeys.METRICS_ENABLED_DEFAULT)) {
      metrics = ClientMetrics.register(this,
          conf.getLong(HrdmaClientKeys.METRICS_DELAY_MS_KEY, HrdmaClientKeys.METRICS_DELAY_MS_DEFAULT));
    }
  }

  /** Whether this file system's metrics source is still to be registered (for tests). */
  boolean metricsPending() {
    ClientMetrics m = metrics;
    return m != null && m.pending();
  }

  /** The name of this file system's metrics2 source (and JMX bean), null when it has none. */
  public String metricsName() {
    ClientMetrics m = metrics;
    return m == null ? null : m.name();
  }

  /**
   * Creates the file at the NameNode (one {@code ClientProtocol.create}, as
   * stock) and returns an HdfsDataOutputStream around an {@link RdmaOutputStream}
   * (every {@code FileSystem.create} overload without favored nodes comes
   * here). The stock stream is used instead when hrdma is disabled, for
   * appends, another checksum than CRC32C or one asked for explicitly,
   * symlinks, and encrypted or erasure-coded files (those are created again
   * through the stock client); and when the first block's pipeline cannot be
   * set up over hrdma (see {@link RdmaOutputStream}). The stream holds the file's
   * lease as stock's: it is one of the DFSClient's files being written, renewed
   * by the DFSClient's LeaseRenewer and closed by {@code DFSClient#close}.
   */
  @Override
  public FSDataOutputStream create(Path f, FsPermission permission, EnumSet<CreateFlag> cflags, int bufferSize,
      short replication, long blockSize, Progressable progress, ChecksumOpt checksumOpt) throws IOException {
    return create(f, permission, cflags, true, replication, blockSize, progress, checksumOpt, null,
        () -> super.create(f, permission, cflags, bufferSize, replication, blockSize, progress, checksumOpt));
  }

  /**
   * As {@link #create(Path, FsPermission, EnumSet, int, short, long, Progressable, ChecksumOpt)}
   * without creating missing parents (HBase's write-ahead log creates its files this way).
   */
  @Override
  public FSDataOutputStream createNonRecursive(Path f, FsPermission permission, EnumSet<CreateFlag> cflags,
      int bufferSize, short replication, long blockSize, Progressable progress) throws IOException {
    return create(f, permission, cflags, false, replication, blockSize, progress, null, null,
        () -> super.createNonRecursive(f, permission, cflags, bufferSize, replication, blockSize, progress));
  }

  /**
   * As stock's: the NameNode places the blocks on {@code favoredNodes} where it can; the
   * blocks go over hrdma to the nodes it chose.
   */
  @Override
  public HdfsDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
      short replication, long blockSize, Progressable progress, InetSocketAddress[] favoredNodes) throws IOException {
    EnumSet<CreateFlag> cflags = overwrite ? EnumSet.of(CreateFlag.CREATE, CreateFlag.OVERWRITE)
        : EnumSet.of(CreateFlag.CREATE);
    String[] favored = null;
    if (favoredNodes != null) { // as DFSClient#getFavoredNodesStr
      favored = new String[favoredNodes.length];
      for (int i = 0; i < favoredNodes.length; i++) {
        favored[i] = favoredNodes[i].getHostName() + ":" + favoredNodes[i].getPort();
      }
    }
    return (HdfsDataOutputStream) create(f, permission, cflags, true, replication, blockSize, progress, null, favored,
        () -> super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress, favoredNodes));
  }

  /** The stock create a call falls back to. */
  private interface StockCreate {
    FSDataOutputStream create() throws IOException;
  }

  private FSDataOutputStream create(Path f, FsPermission permission, EnumSet<CreateFlag> cflags,
      boolean createParent, short replication, long blockSize, Progressable progress, ChecksumOpt checksumOpt,
      String[] favoredNodes, StockCreate stock) throws IOException {
    if (!enabled || !streamBase || checksumOpt != null || cflags.contains(CreateFlag.APPEND)
        || !"CRC32C".equalsIgnoreCase(getConf().getTrimmed(HdfsClientConfigKeys.DFS_CHECKSUM_TYPE_KEY, "CRC32C"))) {
      return stock.create();
    }
    Path abs = fixRelativePart(f);
    checkPath(abs);
    String src = abs.toUri().getPath();
    FsPermission perm = permission == null ? FsPermission.getFileDefault() : permission;
    FsPermission masked = FsCreateModes.applyUMask(perm, FsPermission.getUMask(getConf()));
    startWarmUp(true); // the block client and its transport, while the NameNode creates the file
    statistics.incrementWriteOps(1);
    OpCounts.countCreate();
    HdfsFileStatus st;
    try {
      st = getClient().getNamenode().create(src, masked, getClient().getClientName(), new EnumSetWritable<>(cflags),
          createParent, replication, blockSize, CryptoProtocolVersion.supported(), null, null);
    } catch (RemoteException e) {
      IOException u = e.unwrapRemoteException(AccessControlException.class, FileAlreadyExistsException.class,
          FileNotFoundException.class, ParentNotDirectoryException.class, NSQuotaExceededException.class,
          DSQuotaExceededException.class, QuotaByStorageTypeExceededException.class, SafeModeException.class,
          UnresolvedPathException.class, SnapshotAccessControlException.class);
      if (u instanceof UnresolvedPathException) {
        return stock.create();
      }
      throw u;
    }
    if (st.getFileEncryptionInfo() != null || st.getErasureCodingPolicy() != null) {
      // the stock streams do encryption and striping: hand the (empty) file to them
      if (!deleteForFallback(src)) {
        throw new IOException("cannot hand " + src + " over to the stock client");
      }
      return stock.create(); // the file is gone again: the stock call creates it with the caller's flags
    }
    // as stock: the file joins the client's files being written (its LeaseRenewer renews the lease), and
    // an HdfsDataOutputStream (hsync with SyncFlags, getCurrentBlockReplication) wraps the stream
    return RdmaOutputStream.create(this, src, st, cflags, progress, getConf(), favoredNodes, statistics);
  }

  /** Deletes the empty file a stream of ours created, before the stock client creates it again. */
  boolean deleteForFallback(String src) throws IOException {
    return getClient().getNamenode().delete(src, false);
  }

  @Override
  public FSDataInputStream open(Path f, int bufferSize) throws IOException {
    if (!enabled || !streamBase) {
      return super.open(f, bufferSize);
    }
    Path abs = fixRelativePart(f);
    checkPath(abs);
    String src = abs.toUri().getPath();
    startWarmUp(false); // the block client, while the NameNode locates the blocks
    LocatedBlocks located;
    try {
      located = getClient().getLocatedBlocks(src, 0, getClient().getConf().getPrefetchSize());
    } catch (UnresolvedLinkException e) {
      return super.open(f, bufferSize); // symlinks: the superclass resolves them
    }
    if (located == null || located.getFileEncryptionInfo() != null || located.getErasureCodingPolicy() != null
        || (located.isUnderConstruction() && !located.isLastBlockComplete())) {
      // encrypted, erasure-coded, or the last block still being written (its visible length
      // is the DataNodes' to tell): the stock stream does all of that already
      return super.open(f, bufferSize);
    }
    // as stock: one read op, one OPEN, and the stream wrapped as an HdfsDataInputStream
    statistics.incrementReadOps(1);
    OpCounts.countOpen();
    return RdmaInputStream.open(this, src, bufferSize, verifyChecksum, located);
  }

  @Override
  public void setVerifyChecksum(boolean verifyChecksum) {
    super.setVerifyChecksum(verifyChecksum);
    this.verifyChecksum = verifyChecksum;
  }

  /**
   * Starts, once per file system and kind, the warm-up of the data path on daemon threads: the
   * native library's load ({@link NativeWarmUp}, once per JVM), and on a thread of its own
   * ({@value #WARM_UP_THREAD}) the block client, with {@code transport} also the transport its
   * first connection will use ({@link RdmaBlockClient#prepare}: a UCX context, worker and I/O
   * thread), so that the stream's first block does not wait for them. Called by the thread that
   * creates or opens a file, before its NameNode call, whose wait they overlap; a file system
   * that never creates or opens a file (hadoop fs -ls) starts none of it. The warm-up makes
   * nothing once the file system is closed; what it made is the block client's, which
   * {@link #close} closes (waiting for a transport being made, if one is). Never throws: a
   * failure is left to the stream's own first use, which says why.
   */
  private void startWarmUp(boolean transport) {
    if (!warmUp || !(transport ? transportWarmUp : clientWarmUp).compareAndSet(false, true)) {
      return;
    }
    NativeWarmUp.start();
    if (!transport) {
      synchronized (clientLock) {
        if (blockClient != null || closed) {
          return; // made already (or never again)
        }
      }
    }
    Thread t = new Thread(() -> {
      try {
        RdmaBlockClient c;
        synchronized (clientLock) {
          if (closed) {
            return;
          }
          c = blockClient();
        }
        if (transport) {
          c.prepare();
        }
      } catch (IOException | RuntimeException e) {
        LOG.debug("hrdma: warm-up of the data path failed: {}", e.toString());
      }
    }, WARM_UP_THREAD);
    t.setDaemon(true);
    t.start();
  }

  /** The name of the warm-up's threads ({@link #startWarmUp}). */
  static final String WARM_UP_THREAD = "hrdma-client-warm-up";

  /** The block client, made on first use (transports start then). */
  RdmaBlockClient blockClient() throws IOException {
    RdmaBlockClient c = blockClient;
    if (c == null) {
      synchronized (clientLock) {
        c = blockClient;
        if (c == null) {
          c = new RdmaBlockClient(getConf(), getClient().getClientName());
          c.encryptionKeys(new RdmaBlockClient.EncryptionKeys() {
            @Override
            public org.apache.hadoop.hdfs.security.token.block.DataEncryptionKey get() throws IOException {
              return StockKeys.dataEncryptionKey(getClient());
            }

            @Override
            public void invalidate() {
              StockKeys.clear(getClient());
            }
          });
          blockClient = c;
        }
      }
    }
    return c;
  }

  /** True while {@code dn} is read through the stock path. */
  boolean onStockPath(DatanodeInfo dn) {
    StockUntil until = stockUntil.get(dn.getDatanodeUuid());
    if (until == null) {
      return false;
    }
    if (System.nanoTime() - until.nanos() > 0) {
      stockUntil.remove(dn.getDatanodeUuid(), until);
      return false;
    }
    return true;
  }

  /**
   * {@code dn} failed over hrdma: read it through the stock path for a while (logged and counted
   * once), {@value #FALLBACK_STARTING_RETRY_KEY} ms when its plugin refused as still starting
   * ({@link TransportException.Starting} anywhere in {@code why}'s causes), else
   * {@value #FALLBACK_RETRY_KEY} ms.
   */
  void fallBack(DatanodeInfo dn, IOException why) {
    boolean starting = isStarting(why);
    long now = System.nanoTime();
    StockUntil until = new StockUntil(now + (starting ? startingRetryNanos : fallbackRetryNanos), starting);
    StockUntil[] before = new StockUntil[1];
    stockUntil.compute(dn.getDatanodeUuid(), (k, v) -> {
      before[0] = v;
      // a starting refusal does not shorten a long period another thread's failure began
      return starting && v != null && !v.starting() && now - v.nanos() < 0 ? v : until;
    });
    if (starting) {
      startingFallbacks.incrementAndGet();
      LOG.info("hrdma: the plugin of DataNode {} ({}) is starting; read through the stock data path for the next"
          + " {} ms", dn.getXferAddr(), dn.getDatanodeUuid(), TimeUnit.NANOSECONDS.toMillis(startingRetryNanos));
      return;
    }
    StockUntil b = before[0];
    if (b == null || b.starting() || now - b.nanos() > 0) {
      stockFallbacks.incrementAndGet();
      LOG.warn("hrdma: DataNode {} ({}) is read through the stock data path for the next {} ms: {}",
          dn.getXferAddr(), dn.getDatanodeUuid(), TimeUnit.NANOSECONDS.toMillis(fallbackRetryNanos),
          why.toString());
    }
  }

  /** Whether {@code e} or one of its causes is a plugin's refusal as still starting. */
  static boolean isStarting(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof TransportException.Starting) {
        return true;
      }
    }
    return false;
  }

  /** Whether {@code dn} runs on this host. */
  boolean isLocal(DatanodeInfo dn) {
    return localIps.computeIfAbsent(dn.getIpAddr(), ip -> {
      try {
        return NetUtils.isLocalAddress(InetAddress.getByName(ip));
      } catch (IOException e) {
        return false;
      }
    });
  }

  void countRdmaBytes(long n) {
    rdmaBytes.addAndGet(n);
  }

  void countLocalBytes(long n) {
    localBytes.addAndGet(n);
  }

  /** Bytes read by short-circuit from replica files on this host ({@value RdmaBlockClient#LOCAL_READS_KEY}). */
  /**
   * Short-circuit reads that fell back to the transports: the DataNode's
   * socket absent or refusing this client, or this replica refused (not
   * finalized, another length) or unreadable.
   */
  public long localFallbacks() {
    return localFallbacks.get();
  }

  void countLocalFallback() {
    localFallbacks.incrementAndGet();
  }

  /**
   * Short-circuit exchanges that asked the DataNode how much of a block is in its page cache:
   * made only where several replicas of a block are on this host, once per replica and block.
   */
  public long nearReplicaProbes() {
    return nearReplicaProbes.get();
  }

  void countNearReplicaProbe() {
    nearReplicaProbes.incrementAndGet();
  }

  /**
   * Blocks read from a replica on this host other than the first the NameNode listed, because
   * that one was in the page cache and the first was not.
   */
  public long nearReplicaSwitches() {
    return nearReplicaSwitches.get();
  }

  void countNearReplicaCachedChoice() {
    nearReplicaSwitches.incrementAndGet();
  }

  public long localBytesRead() {
    return localBytes.get();
  }

  /** Whether zero-copy reads may map replicas (stock's {@code dfs.client.mmap.enabled}). */
  boolean zeroCopyEnabled() {
    return zeroCopy;
  }

  void countZeroCopyBytes(long n) {
    zeroCopyBytes.addAndGet(n);
  }

  /** Bytes handed out by zero-copy reads as mapped slices of replica files (counted in {@link #localBytesRead} too). */
  public long zeroCopyBytesRead() {
    return zeroCopyBytes.get();
  }

  void countZeroCopyFallback() {
    zeroCopyFallbacks.incrementAndGet();
  }

  /**
   * Zero-copy reads ({@code read(ByteBufferPool, ...)}) served by a copying
   * read into a buffer of the caller's pool: no replica on this host could be
   * mapped (none there, short-circuit reads off or refused, every local one
   * bad), or {@code dfs.client.mmap.enabled} is false.
   */
  public long zeroCopyFallbacks() {
    return zeroCopyFallbacks.get();
  }

  void countLocalBytesUnverified(long n) {
    localBytesUnverified.addAndGet(n);
  }

  /**
   * Short-circuit bytes (copied or mapped) handed out without checksum work:
   * the DataNode caches the replica (centralized cache management), or a
   * zero-copy read said {@code SKIP_CHECKSUMS} (or the stream verifies none).
   */
  public long localBytesUnverified() {
    return localBytesUnverified.get();
  }

  /** Replicas mapped for zero-copy reads and not unmapped yet, in this process (leak checks). */
  public static long zeroCopyMappings() {
    return MappedReplica.open();
  }

  /** Whether to try a short-circuit read of {@code dn}'s replicas: on, and {@code dn} on this host and not refused. */
  boolean tryLocal(DatanodeInfo dn) throws IOException {
    return blockClient().localReads() && isLocal(dn) && !noLocal.contains(dn.getDatanodeUuid());
  }

  /**
   * A short-circuit read of {@code dn} failed for a reason that holds for all
   * its replicas (local reads off there, no permission on its files): read it
   * over hrdma from now on (logged once).
   */
  void noLocalReads(DatanodeInfo dn, IOException why) {
    localFallbacks.incrementAndGet();
    if (noLocal.add(dn.getDatanodeUuid())) {
      LOG.warn("hrdma: no short-circuit reads from DataNode {} ({}): {}", dn.getXferAddr(), dn.getDatanodeUuid(),
          why.toString());
    }
  }

  void countStockBytes(long n) {
    stockBytes.addAndGet(n);
  }

  void countChecksumError() {
    checksumErrors.incrementAndGet();
  }

  void countBadReplicaReported() {
    badReplicasReported.incrementAndGet();
  }

  /**
   * Connections to DataNodes that could not be made at the data transfer protection the
   * cluster asks for (this client cannot meet it, the handshake failed, or the DataNode refused
   * an unprotected connection); what they were for went through the stock path.
   */
  public long protectionFallbacks() {
    RdmaBlockClient c = blockClient;
    return c == null ? 0 : c.protectionFallbacks();
  }

  /**
   * Times a DataNode's plugin refused a connection as still starting, each sending that DataNode
   * to the stock path for {@value #FALLBACK_STARTING_RETRY_KEY} ms (reads; a write's file goes
   * through the stock path, counted in {@link #stockWriteFallbacks()}).
   */
  public long startingFallbacks() {
    return startingFallbacks.get();
  }

  /** DataNodes that fell back to the stock data path (each counted once per fallback period). */
  public long stockFallbacks() {
    return stockFallbacks.get();
  }

  /** Bytes our streams read over hrdma transports. */
  public long rdmaBytesRead() {
    return rdmaBytes.get();
  }

  /** Bytes our streams read through the stock data path (fallback). */
  public long stockBytesRead() {
    return stockBytes.get();
  }

  /** Checksum errors our readers met (each followed by a read from another replica). */
  public long checksumErrors() {
    return checksumErrors.get();
  }

  /** Replicas reported to the NameNode as corrupt. */
  public long badReplicasReported() {
    return badReplicasReported.get();
  }

  void countStockWriteFallback() {
    stockWriteFallbacks.incrementAndGet();
  }

  void countPipelineRecovery() {
    pipelineRecoveries.incrementAndGet();
  }

  /** Write pipelines set up again after a DataNode failed (each recovery of each block counts). */
  public long pipelineRecoveries() {
    return pipelineRecoveries.get();
  }

  void countRdmaBytesWritten(long n) {
    rdmaBytesWritten.addAndGet(n);
  }

  /** Files written through the stock data path because their first pipeline could not be set up over hrdma. */
  public long stockWriteFallbacks() {
    return stockWriteFallbacks.get();
  }

  /** Bytes our output streams wrote over hrdma transports. */
  public long rdmaBytesWritten() {
    return rdmaBytesWritten.get();
  }

  /** Files this file system's client has open for writing (ours and stock's), as its LeaseRenewer sees them. */
  public int filesBeingWritten() {
    return getClient().getNumOfFilesBeingWritten();
  }

  /** The block client if one was made (tests look at its connections and buffers). */
  public RdmaBlockClient blockClientIfStarted() {
    return blockClient;
  }

  /**
   * As stock: the superclass closes the files being written (ours among them, completing
   * them) before the DFSClient; the block client's transports close after them.
   */
  @Override
  public void close() throws IOException {
    ClientMetrics m = metrics;
    metrics = null;
    if (m != null) {
      m.close();
    }
    try {
      super.close();
    } finally {
      RdmaBlockClient c;
      synchronized (clientLock) {
        c = blockClient;
        blockClient = null;
        closed = true;
      }
      if (c != null) {
        c.close();
      }
    }
  }
}
