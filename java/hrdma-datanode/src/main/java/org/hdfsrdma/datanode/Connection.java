package org.hdfsrdma.datanode;

import java.io.IOException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.hdfsrdma.transport.BufferAllocator;
import org.hdfsrdma.transport.Endpoint;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One admitted connection's state: its reads (served in order, {@link ReadQueue}), its open
 * writes by request id, its shared-memory segment, and when it last did anything (for the
 * idle timeout). Made by the {@link RequestDispatcher} when the connection is admitted and
 * handed to the operation handlers with every message; tasks report back to it, not to the
 * dispatcher. Thread-safe.
 */
final class Connection {
  private static final Logger LOG = LoggerFactory.getLogger(Connection.class);

  private final Endpoint ep;
  private final ReadQueue reads;
  private boolean closed;              // guarded by this
  private volatile ShmSegment segment; // set under this, read without (I/O workers allocate packets)
  private volatile WriteShmSegment writeSegment; // set under this, read without (the I/O thread copies out)
  private final ConcurrentHashMap<Long, BlockWriteTask> writes = new ConcurrentHashMap<>();
  private volatile long lastActive = System.nanoTime();
  private final java.util.concurrent.atomic.AtomicBoolean sweptClosed = new java.util.concurrent.atomic.AtomicBoolean();
  /** Writes open on all the plugin's connections, and how many may be. */
  private final AtomicInteger openWritesAll;
  private final int maxWrites;

  Connection(Endpoint ep, int maxQueued) {
    this(ep, maxQueued, new AtomicInteger(), Integer.MAX_VALUE);
  }

  /** {@code openWritesAll}: the plugin's count of open writes, shared by its connections; at most {@code maxWrites}. */
  Connection(Endpoint ep, int maxQueued, AtomicInteger openWritesAll, int maxWrites) {
    this.ep = ep;
    this.reads = new ReadQueue(maxQueued);
    this.openWritesAll = openWritesAll;
    this.maxWrites = maxWrites;
  }

  Endpoint endpoint() {
    return ep;
  }

  /** A message arrived (I/O thread). */
  void touch() {
    lastActive = System.nanoTime();
  }

  long lastActiveNanos() {
    return lastActive;
  }

  /**
   * For how long, at {@code now}, what this connection sends has waited with none of it taken:
   * its endpoint's sends ({@link Endpoint#sendStallNanos}) or, over a shared-memory segment,
   * packets sent by reference and not released ({@link ShmSegment#stallNanos}); 0 when nothing waits.
   */
  long sendStallNanos(long now) {
    long n = ep.sendStallNanos(now);
    ShmSegment s = segment;
    return s == null ? n : Math.max(n, s.stallNanos(now));
  }

  /**
   * The sweep closes this connection for a timeout: true the first time only, so that a
   * connection whose close takes a while is logged and counted once.
   */
  boolean closingForTimeout() {
    return sweptClosed.compareAndSet(false, true);
  }

  /** Whether an operation is in progress: a read served or queued, a write open. */
  boolean busy() {
    return !writes.isEmpty() || reads.busy();
  }

  synchronized boolean isClosed() {
    return closed;
  }

  // ------------------------------------------------------------------ reads

  void submit(BlockReadTask t) {
    reads.submit(t);
  }

  void done(BlockReadTask t) {
    reads.done(t);
    touch(); // idle from the end of its last operation
  }

  /** {@code t} has sent its last packet: the connection's next read may start. */
  void handOn(BlockReadTask t) {
    reads.handOn(t);
  }

  /** {@code t} has issued all its disk reads: the connection's next read may prepare. */
  void ahead(BlockReadTask t) {
    reads.ahead(t);
  }

  void cancelRead(long id) {
    reads.cancel(id);
  }

  // ----------------------------------------------------------------- writes

  /**
   * Registers and starts {@code t}; a duplicate request id or a closed connection refuses it, as
   * does a write past the plugin's bound on open writes (the connection cap's figure, as stock's
   * dfs.datanode.max.transfer.threads bounds its DataXceivers, writes among them): each open write
   * holds a replica's files, and one connection could otherwise open any number.
   */
  void startWrite(BlockWriteTask t) {
    boolean full = false;
    synchronized (this) {
      if (!closed && !writes.containsKey(t.requestId())) {
        int n = openWritesAll.getAndIncrement();
        if (n < maxWrites) {
          writes.put(t.requestId(), t);
          t.start();
          return;
        }
        openWritesAll.decrementAndGet();
        full = true;
      }
    }
    if (full) {
      LOG.info("hrdma datanode: refusing a write from {}: {} writes open ({})", ep.remoteAddress(), maxWrites,
          HrdmaDataNodeKeys.MAX_CONNECTIONS_KEY);
      t.refuseOpen("DataNode has " + maxWrites + " writes open, its limit (" + HrdmaDataNodeKeys.MAX_CONNECTIONS_KEY
          + ", as stock's dfs.datanode.max.transfer.threads); write not served");
      t.start();
      return;
    }
    if (!isClosed()) {
      Replies.error(ep, t.requestId(), Status.ERROR_INVALID, "a write with request id " + t.requestId()
          + " is already open on this connection");
    }
    t.abort();
    t.start();
  }

  BlockWriteTask write(long id) {
    return writes.get(id);
  }

  void writeDone(BlockWriteTask t) {
    if (writes.remove(t.requestId(), t)) {
      openWritesAll.decrementAndGet();
    }
    touch();
  }

  int openWrites() {
    return writes.size();
  }

  Iterable<BlockWriteTask> writes() {
    return writes.values();
  }

  // ------------------------------------------------------------ shared memory

  ShmSegment segment() {
    return segment;
  }

  /** Gives the connection its segment; false when it has closed or has one. */
  synchronized boolean segment(ShmSegment s) {
    if (closed || segment != null) {
      return false;
    }
    segment = s;
    return true;
  }

  /**
   * Where this connection's read packets are made: its shared-memory segment once the client
   * has mapped it (which falls back to the transport's allocator when full), else the
   * transport's.
   */
  BufferAllocator packetAllocator() {
    ShmSegment s = segment;
    return s != null && s.isMapped() ? s : ep.transport().allocator();
  }

  /**
   * SHM_MAPPED (I/O thread, in order with the connection's other requests): the client has
   * mapped the segment; the packets of every request after this one go by reference. Returns the
   * segment, whose file the caller removes off the I/O thread, or null (no segment: answered
   * with an ERROR; closed meanwhile: nothing to do).
   */
  ShmSegment segmentMapped(long id) {
    ShmSegment s = segment();
    if (s == null) {
      Replies.error(ep, id, Status.ERROR_INVALID, "SHM_MAPPED, but this connection has no shared-memory segment");
      return null;
    }
    return s.clientMapped() ? s : null;
  }

  /** SHM_DECLINED: the client cannot map the segment; it goes now (its packets go by value). */
  void segmentDeclined(long id) {
    ShmSegment s = segment();
    if (s == null) {
      Replies.error(ep, id, Status.ERROR_INVALID, "SHM_DECLINED, but this connection has no shared-memory segment");
      return;
    }
    s.close(); // its file and memory go now
  }

  /** The file of a segment the client has mapped goes (read executor: the directory may be on a disk). */
  void removeSegmentFile(ShmSegment s) {
    try {
      s.removeFile();
    } catch (IOException e) {
      LOG.warn("hrdma datanode: cannot remove the file of {}'s segment {}: {}", ep.remoteAddress(), s.path(),
          e.toString());
    }
  }

  /** SHM_RELEASE: the client gives back a packet's slot. */
  void segmentReleased(long id, long offset) {
    ShmSegment s = segment();
    if (s == null || !s.released(offset)) {
      LOG.info("hrdma datanode: {} released a shared-memory packet it does not hold (offset {})",
          ep.remoteAddress(), offset);
      Replies.error(ep, id, Status.ERROR_INVALID, "SHM_RELEASE of offset " + offset + ": no packet is held there");
    }
  }

  WriteShmSegment writeSegment() {
    return writeSegment;
  }

  /** Gives the connection its write segment; false when it has closed or has one. */
  synchronized boolean writeSegment(WriteShmSegment s) {
    if (closed || writeSegment != null) {
      return false;
    }
    writeSegment = s;
    return true;
  }

  /** The connection closed: every write aborts, every read stops, the segments go. */
  void close() {
    ShmSegment s;
    WriteShmSegment ws;
    synchronized (this) {
      ws = writeSegment;
      closed = true;
      for (BlockWriteTask w : writes.values()) {
        w.abort();
      }
      reads.close();
      s = segment;
    }
    if (s != null) { // outside the lock: failing its references runs reads' completions
      s.close();
    }
    if (ws != null) {
      ws.close();
    }
  }
}
