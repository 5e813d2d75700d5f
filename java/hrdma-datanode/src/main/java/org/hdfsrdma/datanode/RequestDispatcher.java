package org.hdfsrdma.datanode;

import java.io.IOException;
import java.net.ProtocolException;
import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.hdfsrdma.datanode.compat.DataNodeAccess;
import org.hdfsrdma.datanode.disk.DiskIo;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.InfoReply;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.SameHost;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.transport.BufferAllocator;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;
import org.hdfsrdma.transport.select.HrdmaConnector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plugin's handler on every transport of its {@link org.hdfsrdma.transport.select.HrdmaServer}.
 * Runs on the transports' I/O threads and never blocks there: INFO is
 * answered in place from memory; a READ_REQUEST becomes a
 * {@link BlockReadTask} (which owns the request's buffer until it is done)
 * queued on its connection and run on the plugin's read executor; a
 * READ_STATUS ends or cancels a read; a WRITE_REQUEST becomes a
 * {@link BlockWriteTask} run on the plugin's write executor, and the
 * DATA_PACKETs that follow with its request id go to it (packets of writes
 * that ended are dropped); anything else gets an ERROR naming what was
 * wrong, and the connection stays open.
 *
 * <p>A connection's reads are served one after the other, in arrival order
 * ({@link ReadQueue}), so a client's read-ahead requests queue up behind the
 * current one and the next starts without a round trip, as soon as the one
 * before has handed its last packet to the transport; connections are
 * served concurrently.
 */
final class RequestDispatcher implements EndpointHandler {
  private static final Logger LOG = LoggerFactory.getLogger(RequestDispatcher.class);

  private final DataNodeAccess dn;
  private final ReadSettings settings;
  private final AtomicLong preparedAhead = new AtomicLong();
  private final ExecutorService executor;
  private final ExecutorService writeExecutor;
  private final java.util.function.Supplier<HrdmaConnector> connector;
  private final long setupTimeoutMs;
  private final DiskIo disk;
  private final ConcurrentHashMap<Endpoint, Conn> conns = new ConcurrentHashMap<>();
  private final ShmGrants shm;

  RequestDispatcher(DataNodeAccess dn, ReadSettings settings, ExecutorService executor,
      ExecutorService writeExecutor, java.util.function.Supplier<HrdmaConnector> connector, long setupTimeoutMs,
      DiskIo disk) {
    this.dn = dn;
    this.settings = settings;
    this.executor = executor;
    this.writeExecutor = writeExecutor;
    this.connector = connector;
    this.setupTimeoutMs = setupTimeoutMs;
    this.disk = disk;
    this.shm = new ShmGrants(settings);
    shm.removeStale();
  }

  /** Connections open now. */
  int connections() {
    return conns.size();
  }

  private Conn conn(Endpoint ep) {
    return conns.computeIfAbsent(ep, e -> new Conn(e, settings.maxQueuedPerConnection()));
  }

  @Override
  public void onConnected(Endpoint endpoint) {
    conn(endpoint);
  }

  @Override
  public void onClosed(Endpoint endpoint, Throwable cause) {
    Conn c = conns.remove(endpoint);
    if (c != null) {
      c.close();
    }
  }

  @Override
  public void onMessage(Endpoint ep, RegisteredBuffer buffer) {
    Message m;
    try {
      m = MessageCodec.decode(buffer);
    } catch (ProtocolException e) {
      long id = peekRequestId(buffer.nio());
      buffer.release();
      LOG.info("hrdma datanode: bad message from {}: {}", ep.remoteAddress(), e.getMessage());
      sendError(ep, id, Status.ERROR_INVALID, "DataNode " + dn.datanodeUuid() + " refused a bad message: "
          + e.getMessage());
      return;
    } catch (RuntimeException e) {
      buffer.release();
      throw e;
    }
    switch (m.kind()) {
      case INFO_REQUEST -> {
        m.release();
        try {
          ep.send(MessageCodec.encodeInfoReply(ep.transport().allocator(), m.requestId(),
              new InfoReply(dn.datanodeUuid(), dn.xferPort(), dn.blockPoolIds())));
        } catch (TransportException | RuntimeException e) {
          LOG.warn("hrdma datanode: cannot answer {}, closing the connection: {}", ep.remoteAddress(),
              e.toString());
          ep.close();
        }
      }
      case READ_REQUEST -> conn(ep).submit(new BlockReadTask(this, ep, m));
      case WRITE_REQUEST -> conn(ep).startWrite(new BlockWriteTask(this, ep, m));
      case DATA_PACKET -> {
        BlockWriteTask w = conn(ep).write(m.requestId());
        if (w == null) {
          m.release(); // a write that ended (its error ack told the client)
          LOG.debug("hrdma datanode: DATA_PACKET for no open write (request {}) from {}", m.requestId(),
              ep.remoteAddress());
        } else {
          w.onPacket(m);
        }
      }
      case SHM_REQUEST -> {
        try {
          executor.execute(() -> grantSegment(ep, m)); // makes a file: not on the I/O thread
        } catch (RejectedExecutionException e) {
          m.release();
          sendError(ep, m.requestId(), Status.ERROR, "DataNode " + dn.datanodeUuid() + " is stopping");
        }
      }
      case SHM_MAPPED, SHM_DECLINED -> {
        m.release();
        Conn c = conns.get(ep);
        if (c != null) { // else closed: its segment went with it
          c.segmentAnswered(m.requestId(), m.kind() == MessageKind.SHM_MAPPED);
        }
      }
      case SHM_RELEASE -> {
        long offset;
        try {
          offset = m.shmRelease().getOffset();
        } catch (ProtocolException e) {
          throw new AssertionError(e); // the kind was checked
        } finally {
          m.release();
        }
        Conn c = conns.get(ep);
        if (c != null) { // else closed: every slot came back with it
          c.segmentReleased(m.requestId(), offset);
        }
      }
      case READ_STATUS -> {
        Status s;
        try {
          s = m.readStatus().getStatus();
        } catch (ProtocolException e) {
          throw new AssertionError(e); // the kind was checked
        } finally {
          m.release();
        }
        conn(ep).status(m.requestId(), s);
      }
      default -> {
        m.release();
        sendError(ep, m.requestId(), Status.ERROR_UNSUPPORTED, "DataNode " + dn.datanodeUuid()
            + " does not accept " + m.kind() + " messages");
      }
    }
  }

  /**
   * SHM_REQUEST (read executor): a shared-memory segment for this connection's read packets,
   * for a client on this host (SHM_GRANT); else an ERROR saying why (ERROR_UNSUPPORTED), after
   * which the client goes on reading by value.
   */
  private void grantSegment(Endpoint ep, Message m) {
    long id = m.requestId();
    try {
      HrdmaProtos.ShmRequest req = m.shmRequest();
      Conn c = conns.get(ep);
      if (c == null) {
        return; // closed while the request waited: nothing to answer
      }
      if (c.segment() != null) {
        sendError(ep, id, Status.ERROR_INVALID, "this connection already has a shared-memory segment");
        return;
      }
      if (!SameHost.isLocal(ep.remoteAddress())) {
        throw new ShmGrants.Refused("the client " + ep.remoteAddress() + " is not on this DataNode's host");
      }
      String client = shm.authorize(dn, req, ep.remoteAddress());
      BufferAllocator alloc = ep.transport().allocator();
      ShmSegment s = shm.grant(req.getHost(), client, alloc, (int) alloc.footprint(settings.packetBytes()));
      if (!c.segment(s)) { // the connection closed meanwhile, or a second request raced this one
        s.close();
        sendError(ep, id, Status.ERROR_INVALID, "this connection already has a shared-memory segment, or closed");
        return;
      }
      ep.send(MessageCodec.encode(alloc, MessageKind.SHM_GRANT, id, HrdmaProtos.ShmGrant.newBuilder()
          .setPath(s.path().toString()).setBytes(s.bytes()).build()));
    } catch (ShmGrants.Refused e) {
      sendError(ep, id, e.status(), "DataNode " + dn.datanodeUuid() + ": " + e.getMessage());
    } catch (ProtocolException e) {
      throw new AssertionError(e); // the kind was checked
    } catch (TransportException | RuntimeException e) {
      LOG.warn("hrdma datanode: cannot answer the shared-memory request of {}: {}", ep.remoteAddress(),
          e.toString());
      sendError(ep, id, Status.ERROR, "DataNode " + dn.datanodeUuid() + ": " + e);
    } finally {
      m.release();
    }
  }

  /**
   * Where {@code ep}'s read packets are made: its shared-memory segment once the client has
   * mapped it (which falls back to the transport's allocator when full), else the transport's.
   */
  BufferAllocator packetAllocator(Endpoint ep) {
    Conn c = conns.get(ep);
    ShmSegment s = c == null ? null : c.segment();
    return s != null && s.isMapped() ? s : ep.transport().allocator();
  }

  /** Read packets sent by reference to same-host clients. */
  long packetsByReference() {
    return shm.packetsByReference();
  }

  /** Shared-memory segments granted so far. */
  long segmentsGranted() {
    return shm.granted();
  }

  /** Shared-memory requests refused so far (token, budgets, not this host). */
  long segmentsRefused() {
    return shm.refused();
  }

  /** Granted segments freed because their client did not map them in time. */
  long segmentMapTimeouts() {
    return shm.mapTimeouts();
  }

  /** Bytes of shared-memory segments mapped now. */
  long segmentBytesMapped() {
    return shm.bytesMapped();
  }

  /** The request id of a message too broken to decode, when its fixed header is there; else 0. */
  private static long peekRequestId(ByteBuffer b) {
    return b.remaining() >= MessageCodec.FIXED_BYTES ? b.getLong(b.position() + 8) : 0;
  }

  /** Sends an ERROR; never blocks. A failure to allocate closes the connection. */
  static void sendError(Endpoint ep, long requestId, Status status, String message) {
    BlockOpResponseProto h = BlockOps.error(status, message);
    try {
      ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.ERROR, requestId, h, null));
    } catch (TransportException | RuntimeException e) {
      LOG.warn("hrdma datanode: cannot send an error to {}, closing the connection: {}", ep.remoteAddress(),
          e.toString());
      ep.close();
    }
  }

  DataNodeAccess dn() {
    return dn;
  }

  ReadSettings settings() {
    return settings;
  }

  ExecutorService executor() {
    return executor;
  }

  ExecutorService writeExecutor() {
    return writeExecutor;
  }

  HrdmaConnector connector() {
    return connector.get();
  }

  long setupTimeoutMs() {
    return setupTimeoutMs;
  }

  /** A replica by block pool and block id (the generation stamp changes in a recovery). */
  private record ReplicaKey(String pool, long id) {}

  /** The write that owns each replica being written here over hrdma. */
  private final ConcurrentHashMap<ReplicaKey, BlockWriteTask> writers = new ConcurrentHashMap<>();

  /**
   * Makes {@code t} the writer of {@code block}'s replica. A write already
   * there (the pipeline a recovery replaces) is stopped first, as stock
   * stops a replica's writer before recoverRbw.
   *
   * @return false when the earlier write did not stop within the setup timeout
   */
  boolean takeOverBlock(ExtendedBlock block, BlockWriteTask t) {
    BlockWriteTask old = writers.put(new ReplicaKey(block.getBlockPoolId(), block.getBlockId()), t);
    return old == null || old == t || old.stop(setupTimeoutMs);
  }

  void releaseBlock(ExtendedBlock block, BlockWriteTask t) {
    writers.remove(new ReplicaKey(block.getBlockPoolId(), block.getBlockId()), t);
  }

  /** The per-volume disk schedulers every block read and write goes through. */
  DiskIo disk() {
    return disk;
  }

  void writeDone(Endpoint ep, BlockWriteTask t) {
    Conn c = conns.get(ep);
    if (c != null) {
      c.writes.remove(t.requestId(), t);
    }
  }

  /** Reads whose disk reads started before their turn (prepared while the read before drained). */
  long readsPreparedAhead() {
    return preparedAhead.get();
  }

  void preparedAhead() {
    preparedAhead.incrementAndGet();
  }

  /** Writes open on all connections (tests). */
  int openWrites() {
    return conns.values().stream().mapToInt(c -> c.writes.size()).sum();
  }

  /** {@code t} has sent its last packet: the connection's next read may start. */
  void handOn(Endpoint ep, BlockReadTask t) {
    Conn c = conns.get(ep);
    if (c != null) {
      c.handOn(t);
    }
  }

  /** {@code t} has issued all its disk reads: the connection's next read may prepare. */
  void ahead(Endpoint ep, BlockReadTask t) {
    Conn c = conns.get(ep);
    if (c != null) {
      c.ahead(t);
    }
  }

  void done(Endpoint ep, BlockReadTask t) {
    Conn c = conns.get(ep);
    if (c != null) {
      c.done(t);
    }
  }

  /** One connection's reads: the one being served and those queued behind it. */
  private static final class Conn {
    private final Endpoint ep;
    private final ReadQueue reads;
    private boolean closed;        // guarded by this
    private volatile ShmSegment segment; // set under this, read without (I/O workers allocate packets)
    final ConcurrentHashMap<Long, BlockWriteTask> writes = new ConcurrentHashMap<>();

    Conn(Endpoint ep, int maxQueued) {
      this.ep = ep;
      this.reads = new ReadQueue(maxQueued);
    }

    void submit(BlockReadTask t) {
      reads.submit(t);
    }

    void startWrite(BlockWriteTask t) {
      synchronized (this) {
        if (!closed && writes.putIfAbsent(t.requestId(), t) == null) {
          t.start();
          return;
        }
      }
      if (closed) {
        t.abort();
        t.start();
      } else {
        sendError(ep, t.requestId(), Status.ERROR_INVALID, "a write with request id " + t.requestId()
            + " is already open on this connection");
        t.abort();
        t.start();
      }
    }

    BlockWriteTask write(long id) {
      return writes.get(id);
    }

    void done(BlockReadTask t) {
      reads.done(t);
    }

    void handOn(BlockReadTask t) {
      reads.handOn(t);
    }

    void ahead(BlockReadTask t) {
      reads.ahead(t);
    }

    /**
     * The client's READ_STATUS: SUCCESS/CHECKSUM_OK end a read normally, anything
     * else cancels it; for an open write, a non-success status abandons it.
     */
    synchronized void status(long id, Status s) {
      if (s == Status.SUCCESS || s == Status.CHECKSUM_OK) {
        return;
      }
      BlockWriteTask w = writes.get(id);
      if (w != null) { // the client gives up a write
        w.abort();
        return;
      }
      if (s == Status.ERROR_CHECKSUM) {
        LOG.warn("hrdma datanode: client {} reports a checksum error in request {}", ep.remoteAddress(), id);
      }
      reads.cancel(id);
    }

    ShmSegment segment() {
      return segment;
    }

    /** Gives the connection its segment; false when it has closed. */
    synchronized boolean segment(ShmSegment s) {
      if (closed || segment != null) {
        return false;
      }
      segment = s;
      return true;
    }

    /**
     * SHM_MAPPED: the client has mapped the segment; its file goes and packets go by reference.
     * SHM_DECLINED: it cannot; the segment goes now.
     */
    void segmentAnswered(long id, boolean mapped) {
      ShmSegment s = segment();
      if (s == null) {
        sendError(ep, id, Status.ERROR_INVALID, (mapped ? "SHM_MAPPED" : "SHM_DECLINED")
            + ", but this connection has no shared-memory segment");
        return;
      }
      if (!mapped) {
        s.close(); // packets go by value; its file and memory go now
        return;
      }
      try {
        s.clientMapped();
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
        sendError(ep, id, Status.ERROR_INVALID, "SHM_RELEASE of offset " + offset + ": no packet is held there");
      }
    }

    void close() {
      ShmSegment s;
      synchronized (this) {
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
    }
  }
}
