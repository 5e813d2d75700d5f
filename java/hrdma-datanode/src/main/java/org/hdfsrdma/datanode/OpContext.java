package org.hdfsrdma.datanode;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.hdfsrdma.datanode.compat.DataNodeAccess;
import org.hdfsrdma.datanode.disk.DiskIo;
import org.hdfsrdma.transport.select.HrdmaConnector;

/**
 * What every operation handler of the plugin works with: the DataNode, the settings, the
 * executors, the disk schedulers, the registry of replicas being written and the counters.
 * Made once by the plugin and never changed: handlers get it instead of calling back into
 * the {@link RequestDispatcher} (stock hands each DataXceiver its DataNode and DNConf the
 * same way). Thread-safe: every part is.
 */
final class OpContext {
  private final DataNodeAccess dn;
  private final ReadSettings settings;
  private final DataNodeLimits limits;
  private final ExecutorService readExecutor;
  private final VolumeExecutors volumeExecutors;
  private final ExecutorService writeExecutor;
  private final Supplier<HrdmaConnector> connector;
  private final long setupTimeoutMs;
  private final DiskIo disk;
  private final ShmGrants shm;
  private final WriteShmGrants writeShm;
  private final WriterRegistry writers;
  private final MirrorPool mirrors;
  private final AtomicLong preparedAhead = new AtomicLong();
  private final AtomicLong stockForwards = new AtomicLong();
  // next DataNodes (uuid) whose writes went over stock's protocol since they last took one over ours:
  // the reason is logged once per such DataNode, not per block
  private final java.util.Set<String> stockNextNodes = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private final java.util.concurrent.atomic.AtomicBoolean connectorPrepared =
      new java.util.concurrent.atomic.AtomicBoolean();

  OpContext(DataNodeAccess dn, ReadSettings settings, DataNodeLimits limits, ExecutorService readExecutor,
      VolumeExecutors volumeExecutors, ExecutorService writeExecutor, Supplier<HrdmaConnector> connector, long setupTimeoutMs, DiskIo disk,
      WriteShmGrants writeShm, MirrorPool mirrors) {
    this.dn = dn;
    this.settings = settings;
    this.limits = limits;
    this.readExecutor = readExecutor;
    this.volumeExecutors = volumeExecutors;
    this.writeExecutor = writeExecutor;
    this.connector = connector;
    this.setupTimeoutMs = setupTimeoutMs;
    this.disk = disk;
    this.shm = new ShmGrants(settings, ShmGrants.orOwnThread(readExecutor));
    this.writeShm = writeShm;
    this.writers = new WriterRegistry(setupTimeoutMs);
    this.mirrors = mirrors;
  }

  DataNodeAccess dn() {
    return dn;
  }

  ReadSettings settings() {
    return settings;
  }

  DataNodeLimits limits() {
    return limits;
  }

  /**
   * Where the small requests (shared-memory grants) and the first step of a block
   * read (finding its replica's volume, in memory) run; never disk reads.
   */
  ExecutorService readExecutor() {
    return readExecutor;
  }

  /** Where the block reads of volume {@code storageId} run (its own threads). */
  ExecutorService volumeExecutor(String storageId) {
    return volumeExecutors.of(storageId);
  }

  /** Where a block write's set-up runs (block token, replica creation, the downstream); no disk I/O. */
  ExecutorService writeExecutor() {
    return writeExecutor;
  }

  /** Where the packets of a block write to volume {@code storageId} are written (its own threads). */
  ExecutorService volumeWriteExecutor(String storageId) {
    return volumeExecutors.writesOf(storageId);
  }

  /** The connector to the next DataNode of a write pipeline (made on first use). */
  HrdmaConnector connector() {
    return connector.get();
  }

  /**
   * Once, at this DataNode's first write (any: the last of a pipeline forwards nothing yet):
   * makes the forwarding connector and its transports on a thread of its own, so that the first
   * write this DataNode forwards does not wait for them ({@link HrdmaConnector#prepare}).
   * Decided at a write, not at start, because the connector shares the JVM's transports only
   * when other DataNode plugins run in it, which is known once the DataNodes have started.
   * Never blocks (called on an I/O thread).
   */
  void prepareConnector() {
    if (!connectorPrepared.compareAndSet(false, true)) {
      return;
    }
    Thread t = new Thread(() -> {
      try {
        connector.get().prepare();
      } catch (RuntimeException e) { // stopping: the connector is made on use, if ever
        org.slf4j.LoggerFactory.getLogger(OpContext.class).debug("hrdma datanode: no connector prepared: {}",
            e.toString());
      }
    }, "hrdma-dn-connector-prepare");
    t.setDaemon(true);
    t.start();
  }

  long setupTimeoutMs() {
    return setupTimeoutMs;
  }

  /** The per-volume disk schedulers every block read and write goes through. */
  DiskIo disk() {
    return disk;
  }

  ShmGrants shm() {
    return shm;
  }

  /** Same-host writes by reference: the segments this DataNode grants, and whether it forwards by reference. */
  WriteShmGrants writeShm() {
    return writeShm;
  }

  /** The connections to next DataNodes kept between the blocks of write pipelines. */
  MirrorPool mirrors() {
    return mirrors;
  }

  WriterRegistry writers() {
    return writers;
  }

  void preparedAhead() {
    preparedAhead.incrementAndGet();
  }

  /** Reads whose disk reads started before their turn (prepared while the read before drained). */
  long readsPreparedAhead() {
    return preparedAhead.get();
  }

  /**
   * A write was forwarded to {@code nextUuid} over stock's DataTransferProtocol: counted; true
   * when this is the first since that DataNode last took a write over our transports (log it).
   */
  boolean forwardedOverStock(String nextUuid) {
    stockForwards.incrementAndGet();
    return stockNextNodes.add(nextUuid);
  }

  /** A write was forwarded to {@code nextUuid} over our transports. */
  void forwardedOverHrdma(String nextUuid) {
    if (!stockNextNodes.isEmpty()) {
      stockNextNodes.remove(nextUuid);
    }
  }

  /** Writes forwarded to the next DataNode over stock's DataTransferProtocol. */
  long stockForwards() {
    return stockForwards.get();
  }

  /** "DataNode uuid" for messages sent to clients. */
  String who() {
    return "DataNode " + dn.datanodeUuid();
  }
}
