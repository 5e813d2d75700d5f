package org.hdfsrdma.client;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.security.token.block.DataEncryptionKey;
import org.apache.hadoop.hdfs.security.token.block.InvalidBlockTokenException;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.protocol.HadoopTransportConf;
import org.hdfsrdma.protocol.RdmaPorts;
import org.hdfsrdma.protocol.wire.ClientGate;
import org.hdfsrdma.protocol.wire.WireProtection;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.protocol.ShortCircuitSocket;
import org.hdfsrdma.protocol.SocketPaths;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.select.HrdmaConnector;
import org.hdfsrdma.transport.select.HrdmaConnector.Connection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads HDFS blocks from DataNodes that run the hrdma plugin. Holds the
 * transports (an {@link HrdmaConnector} made from the configuration's
 * {@code hrdma.*} keys) and a small cache of connections, one per DataNode,
 * shared by all readers; a connection that closes leaves the cache and the
 * next reader of that DataNode connects again.
 *
 * <p>Thread-safe. Connecting is serialized (one connect at a time per
 * client); lookups and the transports' close notifications never wait for
 * it (they run on I/O threads). Readers run concurrently.
 */
public final class RdmaBlockClient implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaBlockClient.class);

  /** Bytes asked for by one READ_REQUEST; a reader splits its range into such requests. */
  public static final String REQUEST_BYTES_KEY = HrdmaClientKeys.READ_REQUEST_BYTES_KEY;
  public static final long REQUEST_BYTES_DEFAULT = HrdmaClientKeys.READ_REQUEST_BYTES_DEFAULT;
  /**
   * The largest READ_REQUEST: a reader's requests start at {@value #REQUEST_BYTES_KEY} and
   * double, up to this, while it reads on (a long sequential read asks in large requests, so
   * the DataNode's disk read-ahead runs on, instead of starting again every few MB).
   */
  public static final String MAX_REQUEST_BYTES_KEY = HrdmaClientKeys.READ_MAX_REQUEST_BYTES_KEY;
  public static final long MAX_REQUEST_BYTES_DEFAULT = HrdmaClientKeys.READ_MAX_REQUEST_BYTES_DEFAULT;
  /**
   * The storage types whose replicas are read in growing requests: those the DataNode reads
   * with O_DIRECT and its own deep read-ahead (ssd/adaptive volumes, RAM_DISK). A replica on
   * another type is read in requests of request-bytes: there a connection's overlapping
   * requests are what keeps more than one read on the device (measured on this machine's
   * disk: cold reads of a DISK volume at about 1000 MB/s with 4 MB requests, 700 growing,
   * in four of six interleaved pairs).
   */
  public static final String RAMP_STORAGE_TYPES_KEY = HrdmaClientKeys.READ_RAMP_STORAGE_TYPES_KEY;
  public static final String RAMP_STORAGE_TYPES_DEFAULT = HrdmaClientKeys.READ_RAMP_STORAGE_TYPES_DEFAULT;
  /** READ_REQUESTs a reader keeps in flight (the one being read, plus read-ahead). */
  public static final String REQUESTS_IN_FLIGHT_KEY = HrdmaClientKeys.READ_REQUESTS_IN_FLIGHT_KEY;
  public static final int REQUESTS_IN_FLIGHT_DEFAULT = HrdmaClientKeys.READ_REQUESTS_IN_FLIGHT_DEFAULT;
  /** How long a reader waits for the next message of a request. */
  public static final String TIMEOUT_KEY = HrdmaClientKeys.READ_TIMEOUT_MS_KEY;
  public static final long TIMEOUT_DEFAULT = HrdmaClientKeys.READ_TIMEOUT_MS_DEFAULT;
  /** Connections kept; beyond this the least recently used idle one is closed. */
  public static final String MAX_CONNECTIONS_KEY = HrdmaClientKeys.MAX_CONNECTIONS_KEY;
  public static final int MAX_CONNECTIONS_DEFAULT = HrdmaClientKeys.MAX_CONNECTIONS_DEFAULT;
  /**
   * Short-circuit reads: a finalized replica on this host is read from its
   * files, which the DataNode's plugin opens and passes as descriptors over
   * its Unix domain socket after the token check, instead of over a
   * connection. Needs no permission on the DataNode's files; where the
   * socket is absent or refuses, the DataNode is read over the transports
   * (logged once per DataNode).
   */
  public static final String LOCAL_READS_KEY = HrdmaClientKeys.READ_LOCAL_KEY;
  public static final boolean LOCAL_READS_DEFAULT = HrdmaClientKeys.READ_LOCAL_DEFAULT;
  /**
   * Same-host reads by reference: a connection to a DataNode on this host asks for a
   * shared-memory segment, and the DataNode reads the packets into it (O_DIRECT on ssd
   * volumes) and sends where they are instead of the bytes; the reader verifies and copies
   * them out in place. Unlike short-circuit reads, the DataNode still does the disk I/O
   * (through its volume's scheduler) and checks the token of every read; the client needs
   * to run as the DataNode's user to map the segment (else it reads by value).
   */
  public static final String SHM_READS_KEY = HrdmaClientKeys.READ_SHM_KEY;
  public static final boolean SHM_READS_DEFAULT = HrdmaClientKeys.READ_SHM_DEFAULT;
  /** Same-host writes by reference (see {@link HrdmaClientKeys#WRITE_SHM_KEY}). */
  public static final String SHM_WRITES_KEY = HrdmaClientKeys.WRITE_SHM_KEY;
  public static final boolean SHM_WRITES_DEFAULT = HrdmaClientKeys.WRITE_SHM_DEFAULT;
  /** Bytes a short-circuit reader verifies (and at most hands out) at a time. */
  public static final String LOCAL_WINDOW_BYTES_KEY = HrdmaClientKeys.READ_LOCAL_WINDOW_BYTES_KEY;
  public static final int LOCAL_WINDOW_BYTES_DEFAULT = HrdmaClientKeys.READ_LOCAL_WINDOW_BYTES_DEFAULT;
  /**
   * Threads of the client's verifier, shared by its short-circuit readers:
   * they verify the windows ahead of the one being read. 0: every reader
   * verifies its windows itself.
   */
  public static final String LOCAL_VERIFY_THREADS_KEY = HrdmaClientKeys.READ_LOCAL_VERIFY_THREADS_KEY;
  public static final int LOCAL_VERIFY_THREADS_DEFAULT = HrdmaClientKeys.READ_LOCAL_VERIFY_THREADS_DEFAULT;
  /** Windows a short-circuit reader hands to the verifier beyond the one being read. */
  public static final String LOCAL_VERIFY_AHEAD_KEY = HrdmaClientKeys.READ_LOCAL_VERIFY_AHEAD_KEY;
  public static final int LOCAL_VERIFY_AHEAD_DEFAULT = HrdmaClientKeys.READ_LOCAL_VERIFY_AHEAD_DEFAULT;
  /** Bytes of the block file the kernel is asked to read ahead of a short-circuit reader; 0: none. */
  public static final String LOCAL_READ_AHEAD_BYTES_KEY = HrdmaClientKeys.READ_LOCAL_READ_AHEAD_BYTES_KEY;
  public static final long LOCAL_READ_AHEAD_BYTES_DEFAULT = HrdmaClientKeys.READ_LOCAL_READ_AHEAD_BYTES_DEFAULT;
  /** Replicas of this host kept mapped for positional reads; 0: none (each positional read asks anew). */
  public static final String LOCAL_CACHED_REPLICAS_KEY = HrdmaClientKeys.READ_LOCAL_CACHED_REPLICAS_KEY;
  public static final int LOCAL_CACHED_REPLICAS_DEFAULT = HrdmaClientKeys.READ_LOCAL_CACHED_REPLICAS_DEFAULT;
  /** Of several replicas on this host, read one in the page cache (asked in the short-circuit exchange). */
  public static final String LOCAL_PREFER_CACHED_KEY = HrdmaClientKeys.READ_LOCAL_PREFER_CACHED_KEY;
  public static final boolean LOCAL_PREFER_CACHED_DEFAULT = HrdmaClientKeys.READ_LOCAL_PREFER_CACHED_DEFAULT;
  /** A replica kept mapped for positional reads is dropped after this long unused. */
  public static final String LOCAL_CACHE_EXPIRY_MS_KEY = HrdmaClientKeys.READ_LOCAL_CACHE_EXPIRY_MS_KEY;
  public static final long LOCAL_CACHE_EXPIRY_MS_DEFAULT = HrdmaClientKeys.READ_LOCAL_CACHE_EXPIRY_MS_DEFAULT;
  /** Windows waiting for the verifier, over all readers, per verifier thread; beyond, readers verify their own. */
  private static final int VERIFY_QUEUE_PER_THREAD = 256;
  /** An idle verifier thread ends after this long. */
  private static final long VERIFY_KEEP_ALIVE_MS = 10_000;
  private static final AtomicInteger VERIFIER_THREADS = new AtomicInteger();
  /** Threads that open sequential readers' next blocks ahead of them; beyond these and the queue, readers open their own. */
  private static final int OPENER_THREADS = 2;
  private static final int OPENER_QUEUE = 64;
  private static final AtomicInteger OPENER_THREAD_COUNT = new AtomicInteger();

  private final Configuration conf;
  private final HrdmaConnector connector;
  private final String clientName;
  private final long requestBytes;
  private final long maxRequestBytes;
  private final java.util.Set<org.apache.hadoop.fs.StorageType> rampTypes;
  private final int requestsInFlight;
  private final long timeoutMs;
  private final int maxConnections;
  private final boolean localReads;
  private final boolean shmReads;
  private final boolean shmWrites;
  private final boolean allowSticky;
  private final boolean preferCached;
  private final int localWindowBytes;
  private final int localVerifyAhead;
  private final long localReadAhead;
  private final boolean localDirect;
  private final ColdReadAhead.Settings localColdDirect; // null: off
  /** Verifies short-circuit readers' windows ahead of them; null when off. Daemon threads that end when idle. */
  private final ThreadPoolExecutor localVerifier;
  /**
   * Opens the next block's reader of a sequential short-circuit reader while it reads on (the
   * exchange with the DataNode, the reader's set-up: milliseconds the caller would otherwise wait
   * at each block boundary); null when short-circuit reads are off. Daemon threads that end when idle.
   */
  private final ThreadPoolExecutor opener;
  /** Asks DataNodes on this host for replicas' descriptors. */
  private final ShortCircuitClient shortCircuit;
  /** Replicas of this host mapped for positional reads. */
  private final LocalReplicas replicas;
  /** By DataNode (uuid and plugin address). */
  private final ConcurrentHashMap<String, DataNodeConnection> cache = new ConcurrentHashMap<>();
  private final Object connectLock = new Object();
  /** Connects under way, by the {@link #cache}'s key: the threads that want the same DataNode wait for one. */
  private final ConcurrentHashMap<String, CompletableFuture<DataNodeConnection>> connecting =
      new ConcurrentHashMap<>();
  private final java.util.concurrent.atomic.AtomicLong protectionFallbacks = new java.util.concurrent.atomic.AtomicLong();
  private final java.util.concurrent.atomic.AtomicBoolean loggedProtection = new java.util.concurrent.atomic.AtomicBoolean();
  private final java.util.concurrent.atomic.AtomicLong shmRefusals = new java.util.concurrent.atomic.AtomicLong();
  private final java.util.concurrent.atomic.AtomicBoolean loggedShmRefusal = new java.util.concurrent.atomic.AtomicBoolean();
  private final java.util.concurrent.atomic.AtomicLong shmReleaseBacklogs = new java.util.concurrent.atomic.AtomicLong();
  private volatile EncryptionKeys keys;
  private volatile boolean closed;

  public RdmaBlockClient(Configuration conf) {
    this(conf, "hrdma-client-" + UUID.randomUUID());
  }

  public RdmaBlockClient(Configuration conf, String clientName) {
    this.conf = conf;
    this.clientName = clientName;
    this.requestBytes = conf.getLong(REQUEST_BYTES_KEY, REQUEST_BYTES_DEFAULT);
    this.maxRequestBytes = conf.getLong(MAX_REQUEST_BYTES_KEY, Math.max(requestBytes, MAX_REQUEST_BYTES_DEFAULT));
    this.rampTypes = java.util.EnumSet.noneOf(org.apache.hadoop.fs.StorageType.class);
    for (String t : org.apache.hadoop.util.StringUtils.getTrimmedStrings(conf.get(RAMP_STORAGE_TYPES_KEY,
        RAMP_STORAGE_TYPES_DEFAULT))) {
      try {
        rampTypes.add(org.apache.hadoop.fs.StorageType.parseStorageType(t));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("bad " + RAMP_STORAGE_TYPES_KEY + ": '" + t + "' is not a storage type ("
            + java.util.Arrays.toString(org.apache.hadoop.fs.StorageType.values()) + ")", e);
      }
    }
    this.requestsInFlight = conf.getInt(REQUESTS_IN_FLIGHT_KEY, REQUESTS_IN_FLIGHT_DEFAULT);
    this.timeoutMs = conf.getLong(TIMEOUT_KEY, TIMEOUT_DEFAULT);
    this.maxConnections = conf.getInt(MAX_CONNECTIONS_KEY, MAX_CONNECTIONS_DEFAULT);
    this.localReads = conf.getBoolean(LOCAL_READS_KEY, LOCAL_READS_DEFAULT);
    this.shmReads = conf.getBoolean(SHM_READS_KEY, SHM_READS_DEFAULT);
    this.shmWrites = conf.getBoolean(SHM_WRITES_KEY, SHM_WRITES_DEFAULT);
    this.allowSticky = conf.getBoolean(SocketPaths.ALLOW_STICKY_KEY, SocketPaths.ALLOW_STICKY_DEFAULT);
    this.preferCached = conf.getBoolean(LOCAL_PREFER_CACHED_KEY, LOCAL_PREFER_CACHED_DEFAULT);
    // a client configured for an encrypted cluster warms the cipher now, before its first stream
    if (conf.getBoolean("dfs.encrypt.data.transfer", false)) {
      try {
        WireProtection.forClient(conf, true, 0).warmUp();
      } catch (IllegalArgumentException e) {
        // bad hrdma.wire.* settings: the first protected connection reports them
      }
    }
    if (requestBytes < 1 || maxRequestBytes < requestBytes || requestsInFlight < 1 || timeoutMs < 1
        || maxConnections < 1) {
      throw new IllegalArgumentException("bad hrdma.client.read settings: request-bytes " + requestBytes
          + ", max-request-bytes " + maxRequestBytes + " (at least request-bytes)"
          + ", requests-in-flight " + requestsInFlight + ", timeout-ms " + timeoutMs + ", max-connections "
          + maxConnections);
    }
    this.localWindowBytes = conf.getInt(LOCAL_WINDOW_BYTES_KEY, LOCAL_WINDOW_BYTES_DEFAULT);
    int verifyThreads = conf.getInt(LOCAL_VERIFY_THREADS_KEY, LOCAL_VERIFY_THREADS_DEFAULT);
    this.localVerifyAhead = conf.getInt(LOCAL_VERIFY_AHEAD_KEY, LOCAL_VERIFY_AHEAD_DEFAULT);
    this.localReadAhead = conf.getLongBytes(LOCAL_READ_AHEAD_BYTES_KEY, LOCAL_READ_AHEAD_BYTES_DEFAULT);
    this.localDirect = conf.getBoolean(HrdmaClientKeys.READ_LOCAL_DIRECT_KEY,
        HrdmaClientKeys.READ_LOCAL_DIRECT_DEFAULT);
    this.localColdDirect = conf.getBoolean(HrdmaClientKeys.READ_LOCAL_COLD_DIRECT_KEY,
        HrdmaClientKeys.READ_LOCAL_COLD_DIRECT_DEFAULT)
        ? new ColdReadAhead.Settings(conf.getInt(HrdmaClientKeys.READ_LOCAL_COLD_DIRECT_DEPTH_KEY,
            HrdmaClientKeys.READ_LOCAL_COLD_DIRECT_DEPTH_DEFAULT),
            (int) conf.getLongBytes(HrdmaClientKeys.READ_LOCAL_COLD_DIRECT_REQUEST_BYTES_KEY,
                HrdmaClientKeys.READ_LOCAL_COLD_DIRECT_REQUEST_BYTES_DEFAULT))
        : null;
    if (localReadAhead < 0) {
      throw new IllegalArgumentException(LOCAL_READ_AHEAD_BYTES_KEY + " = " + localReadAhead + " is negative");
    }
    if (localWindowBytes < 1 || verifyThreads < 0 || localVerifyAhead < 0) {
      throw new IllegalArgumentException("bad hrdma.client.read.local settings: window-bytes " + localWindowBytes
          + ", verify-threads " + verifyThreads + ", verify-ahead " + localVerifyAhead);
    }
    if (localReads && verifyThreads > 0 && localVerifyAhead > 0) {
      localVerifier = new ThreadPoolExecutor(verifyThreads, verifyThreads, VERIFY_KEEP_ALIVE_MS,
          TimeUnit.MILLISECONDS, new ArrayBlockingQueue<>(VERIFY_QUEUE_PER_THREAD * verifyThreads), r -> {
            Thread t = new Thread(r, VERIFIER_THREAD_PREFIX + VERIFIER_THREADS.incrementAndGet());
            t.setDaemon(true);
            return t;
          }, new ThreadPoolExecutor.AbortPolicy()); // a reader whose window is refused verifies it itself
      localVerifier.allowCoreThreadTimeOut(true);
    } else {
      localVerifier = null;
    }
    if (localReads) {
      opener = new ThreadPoolExecutor(OPENER_THREADS, OPENER_THREADS, VERIFY_KEEP_ALIVE_MS, TimeUnit.MILLISECONDS,
          new ArrayBlockingQueue<>(OPENER_QUEUE), r -> {
            Thread t = new Thread(r, OPENER_THREAD_PREFIX + OPENER_THREAD_COUNT.incrementAndGet());
            t.setDaemon(true);
            return t;
          }, new ThreadPoolExecutor.AbortPolicy()); // a stream whose open is refused opens the block itself
      opener.allowCoreThreadTimeOut(true);
    } else {
      opener = null;
    }
    this.shortCircuit = new ShortCircuitClient(timeoutMs, allowSticky);
    int cached = conf.getInt(LOCAL_CACHED_REPLICAS_KEY, LOCAL_CACHED_REPLICAS_DEFAULT);
    long expiry = conf.getLong(LOCAL_CACHE_EXPIRY_MS_KEY, LOCAL_CACHE_EXPIRY_MS_DEFAULT);
    if (cached < 0 || expiry < 1) {
      throw new IllegalArgumentException("bad hrdma.client.read.local settings: cached-replicas " + cached
          + ", cache-expiry-ms " + expiry);
    }
    this.replicas = new LocalReplicas(localReads ? cached : 0, expiry);
    this.connector = new HrdmaConnector(HadoopTransportConf.of(conf), sharesTransports(conf));
  }

  /**
   * {@value HrdmaClientKeys#SHARE_TRANSPORTS_KEY}: auto shares when the JVM has shared transports open
   * (DataNode plugins run in it), so a client in a JVM of its own makes its own as before.
   */
  static boolean sharesTransports(Configuration conf) {
    String v = conf.getTrimmed(HrdmaClientKeys.SHARE_TRANSPORTS_KEY, HrdmaClientKeys.SHARE_TRANSPORTS_DEFAULT);
    return switch (v.toLowerCase(java.util.Locale.ROOT)) {
      case "auto" -> org.hdfsrdma.transport.select.SharedTransports.openCount() > 0;
      case "true" -> true;
      case "false" -> false;
      default -> throw new IllegalArgumentException(HrdmaClientKeys.SHARE_TRANSPORTS_KEY
          + " must be auto, true or false, not '" + v + "'");
    };
  }

  /**
   * A reader of {@code [offsetInBlock, offsetInBlock + length)} of {@code block}
   * from {@code datanode} (one of its locations), with the block's token.
   * Connects (or reuses the connection) and sends the first requests at once.
   *
   * @throws IOException the DataNode's plugin cannot be reached, or the range is not in the block
   */
  public RdmaBlockReader open(LocatedBlock block, DatanodeInfo datanode, long offsetInBlock, long length)
      throws IOException {
    return open(block, datanode, offsetInBlock, length, true);
  }

  /**
   * As {@link #open(LocatedBlock, DatanodeInfo, long, long)}; with {@code verifyChecksum} false
   * the reader does not check the chunks' checksums (a stream opened so, as stock's readers).
   */
  public RdmaBlockReader open(LocatedBlock block, DatanodeInfo datanode, long offsetInBlock, long length,
      boolean verifyChecksum) throws IOException {
    if (offsetInBlock < 0 || length < 0 || offsetInBlock + length > block.getBlockSize()) {
      throw new IOException("range [" + offsetInBlock + ", " + (offsetInBlock + length) + ") is not in "
          + block.getBlock() + " of " + block.getBlockSize() + " bytes");
    }
    DataNodeConnection c = connection(datanode, block);
    return new RdmaBlockReader(this, c, block.getBlock(), block.getBlockToken(), datanode, offsetInBlock,
        length, ramps(block, datanode) ? maxRequestBytes : requestBytes, verifyChecksum);
  }

  /** Whether {@code datanode}'s replica of {@code block} is on a storage type read in growing requests. */
  private boolean ramps(LocatedBlock block, DatanodeInfo datanode) {
    org.apache.hadoop.fs.StorageType[] types = block.getStorageTypes();
    int i = RdmaBlockWriter.indexOf(block.getLocations(), datanode.getXferAddr());
    return types != null && i >= 0 && i < types.length && rampTypes.contains(types[i]);
  }

  /** The DataNode does not give its files to this client at all (local reads off there, another host). */
  static final class LocalReadsRefused extends IOException {
    private static final long serialVersionUID = 1L;

    LocalReadsRefused(String message) {
      super(message);
    }
  }

  /** Whether, of several replicas on this host, one in the page cache is looked for ({@value #LOCAL_PREFER_CACHED_KEY}). */
  boolean preferCached() {
    return preferCached;
  }

  /** Whether short-circuit reads are on ({@value #LOCAL_READS_KEY}). */
  public boolean localReads() {
    return localReads;
  }

  /**
   * A short-circuit reader of {@code [offsetInBlock, offsetInBlock + length)}
   * of {@code block}'s replica on {@code datanode}, which runs on this host:
   * asks its plugin for the replica's files over its Unix domain socket (with
   * the block token) and reads them with pread until the reader is closed.
   *
   * @throws org.apache.hadoop.hdfs.security.token.block.InvalidBlockTokenException the token was refused
   * @throws LocalReadsRefused no short-circuit socket there, or it serves no short-circuit reads
   * @throws IOException the DataNode refused this replica (not finalized, another length) or the exchange failed
   */
  BlockReader openLocal(LocatedBlock block, DatanodeInfo datanode, long offsetInBlock, long length)
      throws IOException {
    return openLocal(block, datanode, offsetInBlock, length, null);
  }

  /**
   * As {@link #openLocal(LocatedBlock, DatanodeInfo, long, long)}, on the files {@code given}
   * (asked of {@code datanode} already; taken over and closed here) when not null.
   */
  BlockReader openLocal(LocatedBlock block, DatanodeInfo datanode, long offsetInBlock, long length,
      ShortCircuitClient.Fds given) throws IOException {
    return openLocal(block, datanode, offsetInBlock, length, given, true);
  }

  /**
   * As {@link #openLocal(LocatedBlock, DatanodeInfo, long, long, ShortCircuitClient.Fds)}; with
   * {@code verifyChecksum} false the reader neither reads the range's checksums nor checks them
   * (the .meta file's header is still read and checked), as stock's BlockReaderLocal.
   */
  BlockReader openLocal(LocatedBlock block, DatanodeInfo datanode, long offsetInBlock, long length,
      ShortCircuitClient.Fds given, boolean verifyChecksum) throws IOException {
    ShortCircuitClient.Fds f = given != null ? given : localFiles(block, datanode);
    // the reader takes the descriptors over (it reads the block file with pread until closed)
    return new LocalBlockReader(block.getBlock(), f.data(), f.meta(), block.getBlockSize(), offsetInBlock,
        length, localWindowBytes, localVerifier, localVerifyAhead, verifyChecksum && !f.cached(), localReadAhead,
        localDirect, localColdDirect);
  }

  /** Short-circuit readers' verifier (null: off), the windows it verifies and how many ahead. */
  ThreadPoolExecutor localVerifier() {
    return localVerifier;
  }

  /** The client that asks DataNodes on this host for replicas' files (tests). */
  ShortCircuitClient shortCircuitClient() {
    return shortCircuit;
  }

  /** Where sequential streams open their next block's reader ahead (null: short-circuit reads off). */
  ThreadPoolExecutor opener() {
    return opener;
  }

  int localWindowBytes() {
    return localWindowBytes;
  }

  int localVerifyAhead() {
    return localVerifyAhead;
  }

  /**
   * The files of {@code block}'s finalized replica on {@code datanode} (this
   * host), with whether the DataNode caches it; the caller closes them.
   *
   * @throws InvalidBlockTokenException the DataNode refused the token
   * @throws LocalReadsRefused the DataNode serves no short-circuit reads to this client
   * @throws IOException this replica is refused or the exchange failed
   */
  ShortCircuitClient.Fds localFiles(LocatedBlock block, DatanodeInfo datanode) throws IOException {
    return localFiles(block, datanode, 0, -1);
  }

  /**
   * As {@link #localFiles(LocatedBlock, DatanodeInfo)}; with {@code probeLength} &gt;= 0 the
   * answer says too how much of {@code [probeOffset, probeOffset + probeLength)} of the block is
   * in the page cache ({@link ShortCircuitClient.Fds#resident}, -1 when the DataNode does not say).
   */
  ShortCircuitClient.Fds localFiles(LocatedBlock block, DatanodeInfo datanode, long probeOffset, long probeLength)
      throws IOException {
    String path = ShortCircuitSocket.path(conf, datanode.getXferPort());
    return shortCircuit.request(path, block.getBlock(), block.getBlockToken(), probeOffset, probeLength);
  }

  /**
   * A positional read's short-circuit reader of {@code [offsetInBlock, offsetInBlock + length)}:
   * from the replica kept mapped (asked for and mapped on its first read, see
   * {@link LocalReplicas}), or, with no replicas kept, as {@link #openLocal}. Same failures.
   * The files {@code given} (asked of {@code datanode} already; taken over, closed when not
   * needed), when not null, serve the first opening of the replica instead of asking again.
   * With {@code verifyChecksum} false the range's chunks are not checked against their sums.
   */
  BlockReader preadLocal(LocatedBlock block, DatanodeInfo datanode, long offsetInBlock, long length,
      ShortCircuitClient.Fds given, boolean verifyChecksum) throws IOException {
    long visible = block.getBlockSize();
    if (!replicas.enabled() || visible < 1 || visible > Integer.MAX_VALUE) {
      return openLocal(block, datanode, offsetInBlock, length, given, verifyChecksum);
    }
    java.util.concurrent.atomic.AtomicReference<ShortCircuitClient.Fds> held =
        new java.util.concurrent.atomic.AtomicReference<>(given);
    try {
      if (offsetInBlock < 0 || length < 0 || offsetInBlock + length > visible) {
        throw new IOException("range [" + offsetInBlock + ", " + (offsetInBlock + length) + ") is not in "
            + block.getBlock() + " of " + visible + " bytes");
      }
      LocalReplicas.Key key = LocalReplicas.Key.of(datanode.getDatanodeUuid(), block.getBlock(), visible);
      String path = ShortCircuitSocket.path(conf, datanode.getXferPort());
      return replicas.new Range(key, block.getBlock(), path, () -> {
        ShortCircuitClient.Fds f = held.getAndSet(null);
        return f != null ? f : shortCircuit.request(path, block.getBlock(), block.getBlockToken());
      }, offsetInBlock, length, verifyChecksum);
    } finally {
      ShortCircuitClient.Fds unused = held.getAndSet(null); // the replica was kept mapped already
      if (unused != null) {
        unused.close();
      }
    }
  }

  /** The replicas kept mapped for positional reads (tests, metrics). */
  LocalReplicas replicas() {
    return replicas;
  }

  /** Reads all of {@code [offsetInBlock, offsetInBlock + length)} into {@code buf} at {@code off}. */
  public void readFully(LocatedBlock block, DatanodeInfo datanode, long offsetInBlock, byte[] buf, int off,
      int length) throws IOException {
    try (RdmaBlockReader r = open(block, datanode, offsetInBlock, length)) {
      r.readFully(buf, off, length);
    }
  }

  private static String key(DatanodeInfo dn, InetSocketAddress a) {
    return dn.getDatanodeUuid() + "@" + a;
  }

  /** Where the NameNode's data encryption keys come from (the file system's DFSClient). */
  public interface EncryptionKeys {
    /** The current key, or null when the NameNode does not ask for dfs.encrypt.data.transfer. */
    DataEncryptionKey get() throws IOException;

    /** A DataNode no longer knows the current key (its block keys rolled): fetch a new one next time. */
    default void invalidate() {}
  }

  /**
   * Sets where data encryption keys come from; without it, dfs.encrypt.data.transfer in this
   * client's configuration alone says whether to encrypt, and with no key at hand such
   * connections are refused (the stock path serves them).
   */
  public void encryptionKeys(EncryptionKeys keys) {
    this.keys = keys;
  }

  /**
   * Connections that could not be made at the protection the cluster asks for: this client
   * cannot meet it, the handshake failed, or the DataNode refused an unprotected connection.
   * Each made the caller take the stock path, which does its own SASL.
   */
  public long protectionFallbacks() {
    return protectionFallbacks.get();
  }

  /**
   * Connections to a DataNode on this host whose SHM_REQUEST the DataNode refused (reads by
   * reference off there, another host, a budget in use, a token refused): they read by value.
   */
  public long sharedMemoryRefusals() {
    return shmRefusals.get();
  }

  /**
   * Connections to a same-host DataNode closed because it sent more packets by reference than its
   * segment holds while taking none of their releases (SHM_RELEASEs queued for its credits).
   */
  public long sharedMemoryReleaseBacklogs() {
    return shmReleaseBacklogs.get();
  }

  void sharedMemoryReleaseBacklog() {
    shmReleaseBacklogs.incrementAndGet();
  }

  /**
   * Counts a refused SHM_REQUEST; logs the DataNode's reason once at INFO (an operator sees why
   * same-host reads go by value), later ones at DEBUG.
   */
  void sharedMemoryRefused(DataNodeConnection c, String why) {
    shmRefusals.incrementAndGet();
    if (loggedShmRefusal.compareAndSet(false, true)) {
      LOG.info("hrdma client: {} reads by value, the DataNode refused a shared-memory segment (logged once): {}",
          c, why);
    } else {
      LOG.debug("hrdma client: {} reads by value: {}", c, why);
    }
  }

  /** Counts a connection that could not be protected as configured; logs why once. */
  void protectionFallback(String why) {
    protectionFallbacks.incrementAndGet();
    if (loggedProtection.compareAndSet(false, true)) {
      LOG.warn("hrdma client: the stock data path serves what this client cannot protect as the cluster asks"
          + " (logged once): {}", why);
    } else {
      LOG.debug("hrdma client: stock data path: {}", why);
    }
  }

  /** This client's protection toward a plugin on {@code port}. */
  private WireProtection wire(int port, DataEncryptionKey[] key) throws IOException {
    EncryptionKeys k = keys;
    boolean encrypt;
    if (k != null) {
      key[0] = k.get();
      encrypt = key[0] != null;
    } else {
      encrypt = conf.getBoolean("dfs.encrypt.data.transfer", false);
    }
    WireProtection w = WireProtection.forClient(conf, encrypt, port);
    w.warmUp(); // once per JVM: the cipher compiled early in this client's first protected stream, not late
    return w;
  }

  /** The cached connection to {@code dn}, or a new one, authenticated (where the cluster asks) with {@code token}. */
  DataNodeConnection connection(DatanodeInfo dn, Token<BlockTokenIdentifier> token) throws IOException {
    return connection(dn, token, null);
  }

  /**
   * The cached connection to {@code dn}, or a new one, authenticated with {@code block}'s token; a
   * new connection to a DataNode on this host asks for a shared-memory segment with that block and token.
   */
  DataNodeConnection connection(DatanodeInfo dn, LocatedBlock block) throws IOException {
    return connection(dn, block.getBlockToken(), block);
  }

  private DataNodeConnection connection(DatanodeInfo dn, Token<BlockTokenIdentifier> token, LocatedBlock forShm)
      throws IOException {
    InetSocketAddress address = new InetSocketAddress(dn.getIpAddr(), RdmaPorts.pluginPort(dn, conf));
    String key = key(dn, address);
    DataNodeConnection c = cache.get(key);
    if (c != null && c.isOpen()) {
      c.touch();
      return c;
    }
    // one connect per DataNode at a time, outside any client-wide lock: a DataNode that accepts and
    // never answers holds up only the threads that want that DataNode, each sharing its outcome
    CompletableFuture<DataNodeConnection> mine = new CompletableFuture<>();
    CompletableFuture<DataNodeConnection> inFlight = connecting.putIfAbsent(key, mine);
    if (inFlight != null) {
      return awaitConnect(inFlight, dn);
    }
    try {
      c = cache.get(key);
      if (c == null || !c.isOpen()) {
        c = connect(dn, address, key, token, forShm);
      } else {
        c.touch();
      }
      mine.complete(c);
      return c;
    } catch (IOException | RuntimeException | Error e) {
      mine.completeExceptionally(e);
      throw e;
    } finally {
      connecting.remove(key, mine);
    }
  }

  /** Another thread's connect to {@code dn}: its connection, or its failure (as this thread's own). */
  private static DataNodeConnection awaitConnect(CompletableFuture<DataNodeConnection> f, DatanodeInfo dn)
      throws IOException {
    try {
      DataNodeConnection c = f.get();
      c.touch();
      return c;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new java.io.InterruptedIOException("interrupted while waiting for a connection to " + dn);
    } catch (java.util.concurrent.ExecutionException e) {
      Throwable t = e.getCause();
      if (t instanceof IOException io) {
        throw io; // its own type: a ProtectionException sends this caller to the stock path too
      }
      if (t instanceof RuntimeException re) {
        throw re;
      }
      throw new IOException("connecting to " + dn + " failed: " + t, t);
    }
  }

  /** A new connection to {@code dn} (the only connect to it in flight), cached. */
  private DataNodeConnection connect(DatanodeInfo dn, InetSocketAddress address, String key,
      Token<BlockTokenIdentifier> token, LocatedBlock forShm) throws IOException {
    synchronized (connectLock) {
      if (closed) {
        throw new IOException("RdmaBlockClient is closed");
      }
    }
    DataNodeConnection c = new DataNodeConnection(dn.getXferAddr() + " (" + dn.getDatanodeUuid() + ")", address,
        this);
    DataEncryptionKey[] dek = new DataEncryptionKey[1];
    WireProtection wire = wire(address.getPort(), dek);
    if (wire.refusal() != null) {
      protectionFallback(wire.refusal());
      throw new ClientGate.ProtectionException(wire.refusal());
    }
    ClientGate gate = new ClientGate(c);
    Connection conn = connector.connect(address, gate);
    boolean ok = false;
    try {
      Endpoint ep;
      try {
        ep = gate.handshake(conn.endpoint(), wire, new ClientGate.Credentials(dek[0], token), timeoutMs);
      } catch (ClientGate.ProtectionException e) {
        protectionFallback(e.getMessage());
        EncryptionKeys k = keys;
        if (k != null && String.valueOf(e.getMessage()).contains("ERROR_UNKNOWN_KEY")) {
          k.invalidate(); // as stock's client: the next connection asks the NameNode for a new key
        }
        throw e;
      }
      c.connected(ep, conn.transport(), gate);
      if (shmReads && forShm != null && org.hdfsrdma.protocol.SameHost.isLocal(address)) {
        c.mapSegment(timeoutMs, forShm.getBlock(), forShm.getBlockToken());
      }
      synchronized (connectLock) {
        if (closed) {
          throw new IOException("RdmaBlockClient is closed");
        }
        LOG.debug("hrdma client: connected to {}", c);
        cache.put(key, c);
        evictIdle(c);
      }
      ok = true;
      return c;
    } finally {
      if (!ok) {
        c.close();
        conn.endpoint().close();
      }
    }
  }

  /**
   * Before a write's first packets on connection {@code c} to {@code dn}: a DataNode on this host
   * is asked for a write segment (once per connection), with the write's block and token, so
   * that the packets go by reference; any refusal leaves them going by value. Returns what
   * finishes it ({@link WriteSegmentAsk#await}, which the caller must call before the write's first
   * packet, after sending the write's request: the grant and the descriptor's fetch then overlap
   * the DataNodes' pipeline set-up), or null when none was asked. Never throws.
   */
  WriteSegmentAsk requestWriteSegment(DataNodeConnection c, DatanodeInfo dn, ExtendedBlock block,
      Token<BlockTokenIdentifier> token) {
    if (!shmWrites || !c.wantsWriteSegment() || !org.hdfsrdma.protocol.SameHost.isLocal(c.address())) {
      return null;
    }
    PendingRead p = c.requestWriteSegment(block, token);
    if (p == null) {
      return null;
    }
    org.hdfsrdma.protocol.SegmentFetch.Request fetch = new org.hdfsrdma.protocol.SegmentFetch.Request(
        org.hdfsrdma.protocol.ShortCircuitSocket.path(conf, dn.getXferPort()), allowSticky, block, token, timeoutMs);
    return () -> c.awaitWriteSegment(p, timeoutMs, fetch);
  }

  /** A write segment asked for and not yet mapped ({@link #requestWriteSegment}). */
  interface WriteSegmentAsk {
    /** Waits for the grant, fetches and maps the segment (or leaves the packets by value); once, never throws. */
    void await();
  }

  /**
   * Creates the transport this client's first connection would use ({@link HrdmaConnector#prepare}),
   * so that the connection does not wait for it. Blocks while it does; never throws. Any thread;
   * a {@link #close} meanwhile waits for the transport being made and closes it.
   */
  void prepare() {
    connector.prepare();
  }

  /** The cached connections (tests). */
  java.util.Collection<DataNodeConnection> connections() {
    return java.util.List.copyOf(cache.values());
  }

  /** Whether the cached connection to {@code dn} reads by reference, in shared memory (tests). */
  boolean readsByReference(DatanodeInfo dn) {
    InetSocketAddress address = new InetSocketAddress(dn.getIpAddr(), RdmaPorts.pluginPort(dn, conf));
    DataNodeConnection c = cache.get(key(dn, address));
    return c != null && c.segment() != null;
  }

  /** Beyond {@value #MAX_CONNECTIONS_KEY}: closes the least recently used idle connections. */
  private void evictIdle(DataNodeConnection keep) {
    while (cache.size() > maxConnections) {
      DataNodeConnection lru = null;
      for (DataNodeConnection x : cache.values()) {
        if (x != keep && x.pendingCount() == 0 && (lru == null || x.lastUsed() < lru.lastUsed())) {
          lru = x;
        }
      }
      if (lru == null) {
        return;
      }
      forget(lru);
      lru.close();
    }
  }

  /** A connection closed: drop it from the cache. Never blocks (I/O threads call it). */
  void forget(DataNodeConnection c) {
    cache.values().remove(c);
    ClientGate g = c.gate();
    if (g != null && g.refusedUnprotected() != null) {
      protectionFallback(g.refusedUnprotected());
    }
  }

  String clientName() {
    return clientName;
  }

  long requestBytes() {
    return requestBytes;
  }

  int requestsInFlight() {
    return requestsInFlight;
  }

  long timeoutMs() {
    return timeoutMs;
  }

  /** Connections in the cache that are open. */
  public int openConnections() {
    return (int) cache.values().stream().filter(DataNodeConnection::isOpen).count();
  }

  /** Open connections per transport name (metrics). */
  java.util.Map<String, Integer> connectionsByTransport() {
    java.util.Map<String, Integer> m = new java.util.TreeMap<>();
    for (DataNodeConnection c : cache.values()) {
      String t = c.isOpen() ? c.transportName() : null;
      if (t != null) {
        m.merge(t, 1, Integer::sum);
      }
    }
    return m;
  }

  /** The transports this client connects with, by name, once used (tests: whether they are the JVM's shared ones). */
  java.util.Map<String, Transport> transports() {
    return connector.transports();
  }

  /** Registered buffers handed out and not returned, per transport name (metrics). */
  java.util.Map<String, Long> buffersByTransport() {
    java.util.Map<String, Long> m = new java.util.TreeMap<>();
    for (java.util.Map.Entry<String, Transport> e : connector.transports().entrySet()) {
      m.put(e.getKey(), e.getValue().allocator().buffersOutstanding());
    }
    return m;
  }

  /**
   * Registered buffers this client's transports handed out and did not get back (leak checks); on the
   * JVM's shared transports ({@value HrdmaClientKeys#SHARE_TRANSPORTS_KEY}), those of every holder.
   */
  public long buffersOutstanding() {
    long n = 0;
    for (Transport t : connector.transports().values()) {
      n += t.allocator().buffersOutstanding();
    }
    return n;
  }

  /** The transport of the cached connection to {@code dn}, or null. */
  public String transportTo(DatanodeInfo dn) {
    InetSocketAddress address = new InetSocketAddress(dn.getIpAddr(), RdmaPorts.pluginPort(dn, conf));
    DataNodeConnection c = cache.get(key(dn, address));
    return c == null ? null : c.transportName();
  }

  /** Closes every cached connection (readers on them fail); the client stays usable. */
  public void closeConnections() {
    List<DataNodeConnection> all = new ArrayList<>(cache.values());
    for (DataNodeConnection c : all) {
      forget(c);
      c.close();
    }
  }

  /** Closes the connections and the transports. Idempotent. */
  @Override
  public void close() {
    synchronized (connectLock) {
      if (closed) {
        return;
      }
      closed = true;
    }
    closeConnections();
    connector.close();
    shortCircuit.close();
    replicas.close();
    if (localVerifier != null) {
      // windows queued still run (readers not closed yet may wait for them); idle threads end now
      localVerifier.shutdown();
    }
    if (opener != null) {
      // opens queued still run: their streams close what they open (or take it)
      opener.shutdown();
    }
  }

  /** Name prefix of the threads that open the next blocks' readers ahead. */
  static final String OPENER_THREAD_PREFIX = "hrdma-open-ahead-";

  /** Name prefix of the verifier's threads. */
  static final String VERIFIER_THREAD_PREFIX = "hrdma-local-verify-";

  /** Verifier threads started so far (tests). */
  int verifierThreadsStarted() {
    return localVerifier == null ? 0 : localVerifier.getLargestPoolSize();
  }

  /** Waits until the verifier's threads have ended after {@link #close()} (tests); true if they have. */
  boolean awaitVerifierTermination(long timeoutMs) throws InterruptedException {
    return localVerifier == null || localVerifier.awaitTermination(timeoutMs, TimeUnit.MILLISECONDS);
  }
}
