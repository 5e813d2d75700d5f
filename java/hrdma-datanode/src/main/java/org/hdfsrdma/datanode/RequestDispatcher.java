package org.hdfsrdma.datanode;

import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plugin's handler on every transport of its {@link org.hdfsrdma.transport.select.HrdmaServer}
 * (stock's counterpart: DataXceiverServer, which admits a connection, then a DataXceiver per
 * operation). In order, on the transports' I/O threads, never blocking:
 *
 * <ol>
 *   <li>admission at the hello ({@link #admit}): at most
 *       {@value DataNodeLimits#MAX_CONNECTIONS_KEY} connections; one more is refused with
 *       HelloReply REFUSED and a message, and counted;
 *   <li>authentication: done by whatever wraps this handler before it is given to the server
 *       (see RdmaDataNodePlugin#connectionHandler); a connection reaches {@link #onConnected}
 *       only once it is authenticated, and only then gets its {@link Connection};
 *   <li>per message: the size is checked against its kind's bound before it is decoded
 *       (4 KiB for INFO, READ_STATUS and SHM_*; {@value DataNodeLimits#MAX_REQUEST_BYTES_KEY}
 *       for READ_REQUEST, WRITE_REQUEST; a DATA_PACKET against
 *       {@value DataNodeLimits#MAX_PACKET_BYTES_KEY}), then it is decoded and handed to the
 *       {@link OpHandler} of its operation: {@link InfoHandler}, {@link ReadHandler},
 *       {@link WriteHandler}, {@link ShmHandler} (short-circuit reads are {@link ShortCircuitServer}'s, on
 *       its own socket). Handlers get the
 *       connection and the plugin's immutable {@link OpContext}, never this dispatcher.
 * </ol>
 *
 * A bad message gets an ERROR naming what was wrong, and the connection stays open; an
 * oversized one closes the connection (its sender cannot be trusted to frame the next).
 * Idle connections, connections whose peers take nothing they are sent, and stalled writes are
 * closed by {@link #sweep} (the plugin's timer).
 * Thread-safe.
 */
final class RequestDispatcher implements EndpointHandler {
  private static final Logger LOG = LoggerFactory.getLogger(RequestDispatcher.class);

  /**
   * Kinds whose header is a few fields (no token, no target list): bounded at
   * {@value #SMALL_BYTES} bytes whatever {@value DataNodeLimits#MAX_REQUEST_BYTES_KEY} says.
   */
  private static final java.util.Set<MessageKind> SMALL = java.util.EnumSet.of(MessageKind.INFO_REQUEST,
      MessageKind.READ_STATUS, MessageKind.SHM_REQUEST, MessageKind.SHM_MAPPED, MessageKind.SHM_DECLINED,
      MessageKind.SHM_RELEASE, MessageKind.WRITE_SHM_REQUEST, MessageKind.WRITE_REF);
  private static final int SMALL_BYTES = 4096;

  private final OpContext ctx;
  private final DataNodeLimits limits;
  private final Map<MessageKind, OpHandler> handlers = new EnumMap<>(MessageKind.class);
  private final WriteShmHandler writeShm;
  private final ConcurrentHashMap<Endpoint, Connection> conns = new ConcurrentHashMap<>();
  /** Connections admitted at the hello and not closed yet. */
  private final AtomicInteger admitted = new AtomicInteger();
  /** Writes open on all connections ({@link Connection#startWrite}), at most the connection cap's figure. */
  private final AtomicInteger openWrites = new AtomicInteger();
  private final AtomicLong refusedConnections = new AtomicLong();
  private final AtomicLong oversizedMessages = new AtomicLong();
  private final AtomicLong idleClosed = new AtomicLong();
  private final AtomicLong stalledClosed = new AtomicLong();

  RequestDispatcher(OpContext ctx) {
    this.ctx = ctx;
    this.limits = ctx.limits();
    OpHandler read = new ReadHandler(ctx);
    OpHandler write = new WriteHandler(ctx);
    OpHandler shm = new ShmHandler(ctx);
    handlers.put(MessageKind.INFO_REQUEST, new InfoHandler(ctx));
    handlers.put(MessageKind.READ_REQUEST, read);
    handlers.put(MessageKind.READ_STATUS, read);
    handlers.put(MessageKind.WRITE_REQUEST, write);
    handlers.put(MessageKind.DATA_PACKET, write);
    handlers.put(MessageKind.SHM_REQUEST, shm);
    handlers.put(MessageKind.SHM_MAPPED, shm);
    handlers.put(MessageKind.SHM_DECLINED, shm);
    handlers.put(MessageKind.SHM_RELEASE, shm);
    writeShm = new WriteShmHandler(ctx);
    handlers.put(MessageKind.WRITE_SHM_REQUEST, writeShm);
    ctx.shm().removeStale();
  }

  OpContext context() {
    return ctx;
  }

  /** Connections open now. */
  int admittedConnections() {
    return admitted.get();
  }

  /** Connections served now (past any handshake). */
  int connections() {
    return conns.size();
  }

  /** Connections refused at the hello for the connection cap. */
  long refusedConnections() {
    return refusedConnections.get();
  }

  /** Messages larger than their kind allows (each closed its connection). */
  long oversizedMessages() {
    return oversizedMessages.get();
  }

  /** Connections closed for the idle timeout. */
  long idleClosed() {
    return idleClosed.get();
  }

  /** Connections closed because their sends made no progress for {@value DataNodeLimits#WRITE_TIMEOUT_KEY}. */
  long stalledClosed() {
    return stalledClosed.get();
  }

  /** Answers waiting for their peers' credits on all connections (a snapshot). */
  int queuedAnswers() {
    int n = 0;
    for (Endpoint ep : conns.keySet()) {
      n += ep.pendingSends();
    }
    return n;
  }

  /** Writes open on all connections (tests). */
  int openWrites() {
    return conns.values().stream().mapToInt(Connection::openWrites).sum();
  }

  @Override
  public String admit(InetSocketAddress remote) {
    while (true) {
      int n = admitted.get();
      if (n >= limits.maxConnections()) {
        refusedConnections.incrementAndGet();
        LOG.info("hrdma datanode: refusing a connection from {}: {} connections open ({})", remote, n,
            DataNodeLimits.MAX_CONNECTIONS_KEY);
        return ctx.who() + " has " + n + " connections open, its limit (" + DataNodeLimits.MAX_CONNECTIONS_KEY
            + "); try again later";
      }
      if (admitted.compareAndSet(n, n + 1)) {
        return null;
      }
    }
  }

  /** Connections open now per transport name (metrics). */
  java.util.Map<String, Integer> connectionsByTransport() {
    java.util.Map<String, Integer> m = new java.util.TreeMap<>();
    for (Endpoint ep : conns.keySet()) {
      m.merge(ep.transport().name(), 1, Integer::sum);
    }
    return m;
  }

  /** Write packets this DataNode forwarded downstream by reference . */
  long forwardedByReference() {
    return ctx.writeShm().forwardedByReference();
  }

  /** Write segments this DataNode maps now as a sender downstream. */
  long forwardSegments() {
    return ctx.writeShm().forwardSegments();
  }

  /** Shared-memory segment requests refused so far (token, budgets, not this host). */
  long segmentsRefused() {
    return ctx.shm().refused();
  }

  /** Granted segments freed because their client did not map them in time. */
  long segmentMapTimeouts() {
    return ctx.shm().mapTimeouts();
  }

  @Override
  public void onAbandoned(InetSocketAddress remote) {
    admitted.decrementAndGet();
  }

  @Override
  public void onConnected(Endpoint endpoint) {
    conns.computeIfAbsent(endpoint, e -> new Connection(e, ctx.settings().maxQueuedPerConnection(), openWrites,
        limits.maxConnections()));
  }

  @Override
  public void onClosed(Endpoint endpoint, Throwable cause) {
    Connection c = conns.remove(endpoint);
    if (c != null) {
      admitted.decrementAndGet();
      c.close();
    }
  }

  @Override
  public void onMessage(Endpoint ep, RegisteredBuffer buffer) {
    Connection c = conns.get(ep);
    if (c == null) { // not admitted (a transport that does not ask) or closed meanwhile
      buffer.release();
      return;
    }
    c.touch();
    ByteBuffer b = buffer.nio();
    MessageKind k = b.remaining() >= 2 ? MessageKind.of(b.get(b.position() + 1) & 0xff) : null;
    long bound = k == MessageKind.DATA_PACKET ? limits.maxPacketMessageBytes()
        : SMALL.contains(k) ? Math.min(SMALL_BYTES, limits.maxRequestBytes()) : limits.maxRequestBytes();
    if (b.remaining() > bound) {
      int n = b.remaining();
      buffer.release();
      oversizedMessages.incrementAndGet();
      LOG.warn("hrdma datanode: closing the connection of {}: a {} message of {} bytes, more than {} allows",
          ep.remoteAddress(), k, n, k == MessageKind.DATA_PACKET ? DataNodeLimits.MAX_PACKET_BYTES_KEY
              : DataNodeLimits.MAX_REQUEST_BYTES_KEY);
      ep.close();
      return;
    }
    Message m;
    try {
      m = MessageCodec.decode(buffer);
    } catch (ProtocolException e) {
      long id = peekRequestId(buffer.nio());
      buffer.release();
      LOG.info("hrdma datanode: bad message from {}: {}", ep.remoteAddress(), e.getMessage());
      Replies.error(ep, id, Status.ERROR_INVALID, ctx.who() + " refused a bad message: " + e.getMessage());
      return;
    } catch (RuntimeException e) {
      buffer.release();
      throw e;
    }
    if (m.kind() == MessageKind.WRITE_REF) {
      m = byReference(c, ep, m);
      if (m == null) {
        return; // refused: the connection is closing
      }
    }
    OpHandler h = handlers.get(m.kind());
    if (h == null) {
      m.release();
      Replies.error(ep, m.requestId(), Status.ERROR_UNSUPPORTED, ctx.who() + " does not accept " + m.kind()
          + " messages");
      return;
    }
    h.handle(c, m);
  }

  /**
   * Closes connections idle for {@value DataNodeLimits#IDLE_TIMEOUT_KEY} (no operation in
   * progress), closes connections whose sends wait and none of which completed for
   * {@value DataNodeLimits#WRITE_TIMEOUT_KEY} (a peer that takes nothing it is sent: stock's
   * DataXceiver writes with that timeout; busy or not), fails writes that received no packet
   * for {@value DataNodeLimits#PACKET_TIMEOUT_KEY}, and reports the downstream of a write failed
   * when it owed acks and sent none for that, or took nothing for the write timeout, and 5 s per
   * DataNode downstream. Run by the plugin's timer; never blocks.
   */
  void sweep() {
    long now = System.nanoTime();
    long idleNs = limits.idleTimeoutMs() * 1_000_000L;
    long packetNs = limits.packetTimeoutMs() * 1_000_000L;
    long writeNs = limits.writeTimeoutMs() * 1_000_000L; // 0: none
    for (Connection c : conns.values()) {
      for (BlockWriteTask w : c.writes()) {
        w.checkPacketTimeout(now, packetNs);
        w.checkDownstreamTimeouts(now, packetNs, writeNs);
      }
      long stalledNs = writeNs > 0 ? c.sendStallNanos(now) : 0;
      if (stalledNs > writeNs && writeNs > 0) {
        if (c.closingForTimeout()) {
          stalledClosed.incrementAndGet();
          LOG.info("hrdma datanode: closing the connection of {}: it took none of what it was sent for {} ms"
              + " ({} sends waiting for its credits, others for the transport or its releases), more than {} ms"
              + " ({})",
              c.endpoint().remoteAddress(), TimeUnit.NANOSECONDS.toMillis(stalledNs), c.endpoint().pendingSends(),
              limits.writeTimeoutMs(), DataNodeLimits.WRITE_TIMEOUT_KEY);
          c.endpoint().close();
        }
        continue;
      }
      if (!c.busy() && now - c.lastActiveNanos() > idleNs && c.closingForTimeout()) {
        idleClosed.incrementAndGet();
        LOG.info("hrdma datanode: closing the connection of {}: idle for more than {} ms ({})",
            c.endpoint().remoteAddress(), limits.idleTimeoutMs(), DataNodeLimits.IDLE_TIMEOUT_KEY);
        c.endpoint().close();
      }
    }
  }

  /**
   * Evicts every write in progress here ({@code dfsadmin -evictWriters}, after the DataNode
   * evicted its own xceivers' writes); returns how many.
   */
  int evictWriters() {
    int n = 0;
    for (Connection c : conns.values()) {
      for (BlockWriteTask w : c.writes()) {
        if (w.evict()) {
          n++;
        }
      }
    }
    LOG.info("hrdma datanode: evicted {} writes (evictWriters)", n);
    return n;
  }

  /**
   * The DataNode shuts down for an upgrade (stock: DataXceiverServer#sendOOBToPeers, then each
   * BlockReceiver's restart handling): every client's write in progress here sends its
   * OOB_RESTART ack upstream and leaves its replica RBW with a restart marker valid for
   * {@code expiryMs}. Waits until those writes are cleaned up (markers written; at most
   * {@value #RESTART_WAIT_MS} ms) and, as stock's BlockReceiver, until a second has passed
   * since the acks went, so that a writer reads its ack before the connection closes.
   *
   * @return how many writes were restarted
   */
  int restartWritersForUpgrade(long expiryMs) {
    long sent = System.nanoTime();
    long until = org.apache.hadoop.util.Time.now() + expiryMs;
    List<BlockWriteTask> restarted = new ArrayList<>();
    for (Connection c : conns.values()) {
      for (BlockWriteTask w : c.writes()) {
        if (w.restartForUpgrade(until)) {
          restarted.add(w);
        }
      }
    }
    LOG.info("hrdma datanode: shutting down for an upgrade: {} writes restarted", restarted.size());
    if (restarted.isEmpty()) {
      return 0;
    }
    long deadline = sent + TimeUnit.MILLISECONDS.toNanos(RESTART_WAIT_MS);
    try {
      for (BlockWriteTask w : restarted) {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (left <= 0 || !w.awaitCleanedUp(left)) {
          LOG.warn("hrdma datanode: a restarted write did not end within {} ms", RESTART_WAIT_MS);
          break;
        }
      }
      long pause = RESTART_ACK_DELAY_MS - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sent);
      if (pause > 0) {
        Thread.sleep(pause);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return restarted.size();
  }

  /** How long a shutdown for an upgrade waits for its restarted writes to end. */
  static final long RESTART_WAIT_MS = 10_000;
  /** Stock BlockReceiver: the pause after an OOB_RESTART ack before the connection closes. */
  static final long RESTART_ACK_DELAY_MS = 1_000;

  /**
   * A WRITE_REF: the DATA_PACKET it names, copied out of the connection's write segment, checked
   * as a DATA_PACKET that arrived by value would be (its size bound, its decoding), and of the
   * reference's own request; null when refused (the connection is closed then).
   */
  private Message byReference(Connection c, Endpoint ep, Message ref) {
    long id = ref.requestId();
    RegisteredBuffer copy = writeShm.copyOut(c, ref);
    if (copy == null) {
      return null;
    }
    if (copy.readableBytes() > limits.maxPacketMessageBytes()) {
      int n = copy.readableBytes();
      copy.release();
      writeShm.refuse(ep, "a WRITE_REF of " + n + " bytes, more than " + DataNodeLimits.MAX_PACKET_BYTES_KEY
          + " allows");
      return null;
    }
    Message m;
    try {
      m = MessageCodec.decode(copy);
    } catch (ProtocolException e) {
      copy.release();
      writeShm.refuse(ep, "a WRITE_REF naming a bad message: " + e.getMessage());
      return null;
    } catch (RuntimeException e) {
      copy.release();
      throw e;
    }
    if (m.kind() != MessageKind.DATA_PACKET || m.requestId() != id) {
      String why = "a WRITE_REF of request " + id + " naming a " + m.kind() + " of request " + m.requestId();
      m.release();
      writeShm.refuse(ep, why);
      return null;
    }
    ctx.writeShm().countReference();
    return m;
  }

  /** The request id of a message too broken to decode, when its fixed header is there; else 0. */
  private static long peekRequestId(ByteBuffer b) {
    return b.remaining() >= MessageCodec.FIXED_BYTES ? b.getLong(b.position() + 8) : 0;
  }
}
