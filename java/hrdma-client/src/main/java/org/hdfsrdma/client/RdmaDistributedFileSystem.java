package org.hdfsrdma.client;

import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.UnresolvedLinkException;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;
import org.apache.hadoop.net.NetUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link DistributedFileSystem} whose block reads go over hrdma transports
 * to DataNodes that run the plugin. Set {@code fs.hdfs.impl} to this class:
 * every metadata call is the superclass's (the stock NameNode client), and so
 * is every stream this class does not handle itself (writes, encrypted and
 * erasure-coded files, files whose last block is still being written).
 *
 * <p>{@link #open(Path, int)} returns an {@link RdmaInputStream}. A DataNode
 * whose plugin cannot be reached, or whose transport fails, is read through
 * the stock data path for {@value #FALLBACK_RETRY_KEY} ms; each such DataNode
 * is logged once and counted in {@link #stockFallbacks()}.
 */
public class RdmaDistributedFileSystem extends DistributedFileSystem {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaDistributedFileSystem.class);

  /** false: every read takes the stock path (this class is then a plain DistributedFileSystem). */
  public static final String ENABLED_KEY = "hrdma.client.enabled";
  /** How long a DataNode that failed over hrdma is read through the stock path before it is tried again. */
  public static final String FALLBACK_RETRY_KEY = "hrdma.client.fallback.retry-ms";
  public static final long FALLBACK_RETRY_DEFAULT = 600_000;

  private boolean enabled;
  private long fallbackRetryNanos;
  private volatile RdmaBlockClient blockClient;
  private final Object clientLock = new Object();
  /** DataNode uuid -> System.nanoTime() until which it is read through the stock path. */
  private final ConcurrentHashMap<String, Long> stockUntil = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, Boolean> localIps = new ConcurrentHashMap<>();
  private final AtomicLong stockFallbacks = new AtomicLong();
  private final AtomicLong rdmaBytes = new AtomicLong();
  private final AtomicLong stockBytes = new AtomicLong();
  private final AtomicLong checksumErrors = new AtomicLong();
  private final AtomicLong badReplicasReported = new AtomicLong();

  @Override
  public void initialize(URI uri, Configuration conf) throws IOException {
    super.initialize(uri, conf);
    enabled = conf.getBoolean(ENABLED_KEY, true);
    fallbackRetryNanos = TimeUnit.MILLISECONDS.toNanos(conf.getLong(FALLBACK_RETRY_KEY, FALLBACK_RETRY_DEFAULT));
  }

  @Override
  public FSDataInputStream open(Path f, int bufferSize) throws IOException {
    if (!enabled) {
      return super.open(f, bufferSize);
    }
    Path abs = fixRelativePart(f);
    checkPath(abs);
    String src = abs.toUri().getPath();
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
    statistics.incrementReadOps(1);
    return new FSDataInputStream(new RdmaInputStream(this, abs, src, bufferSize, located, statistics));
  }

  /** The stock stream for {@code path} (the fallback path). */
  FSDataInputStream openStock(Path path, int bufferSize) throws IOException {
    return super.open(path, bufferSize);
  }

  /** The block client, made on first use (transports start then). */
  RdmaBlockClient blockClient() throws IOException {
    RdmaBlockClient c = blockClient;
    if (c == null) {
      synchronized (clientLock) {
        c = blockClient;
        if (c == null) {
          c = new RdmaBlockClient(getConf(), getClient().getClientName());
          blockClient = c;
        }
      }
    }
    return c;
  }

  /** True while {@code dn} is read through the stock path. */
  boolean onStockPath(DatanodeInfo dn) {
    Long until = stockUntil.get(dn.getDatanodeUuid());
    if (until == null) {
      return false;
    }
    if (System.nanoTime() - until > 0) {
      stockUntil.remove(dn.getDatanodeUuid(), until);
      return false;
    }
    return true;
  }

  /** {@code dn} failed over hrdma: read it through the stock path for a while (logged and counted once). */
  void fallBack(DatanodeInfo dn, IOException why) {
    long until = System.nanoTime() + fallbackRetryNanos;
    Long before = stockUntil.put(dn.getDatanodeUuid(), until);
    if (before == null || System.nanoTime() - before > 0) {
      stockFallbacks.incrementAndGet();
      LOG.warn("hrdma: DataNode {} ({}) is read through the stock data path for the next {} ms: {}",
          dn.getXferAddr(), dn.getDatanodeUuid(), TimeUnit.NANOSECONDS.toMillis(fallbackRetryNanos),
          why.toString());
    }
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

  void countStockBytes(long n) {
    stockBytes.addAndGet(n);
  }

  void countChecksumError() {
    checksumErrors.incrementAndGet();
  }

  void countBadReplicaReported() {
    badReplicasReported.incrementAndGet();
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

  /** The block client if one was made (tests look at its connections and buffers). */
  public RdmaBlockClient blockClientIfStarted() {
    return blockClient;
  }

  @Override
  public void close() throws IOException {
    try {
      super.close();
    } finally {
      RdmaBlockClient c;
      synchronized (clientLock) {
        c = blockClient;
        blockClient = null;
      }
      if (c != null) {
        c.close();
      }
    }
  }
}
