package org.hdfsrdma.client;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeShm;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.SameHost;
import org.hdfsrdma.transport.BufferPool;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One negotiated connection to a DataNode's plugin, shared by every reader
 * of that DataNode. Requests carry ids from this connection's counter; the
 * handler (I/O thread, never blocks) routes each arriving message to its
 * {@link PendingRead} and releases messages of requests nobody waits for
 * any more (the tail of a cancelled read).
 */
final class DataNodeConnection implements EndpointHandler {
  private static final Logger LOG = LoggerFactory.getLogger(DataNodeConnection.class);

  private final String name;
  private final InetSocketAddress address;
  private final RdmaBlockClient client;
  private final ConcurrentHashMap<Long, PendingRead> pending = new ConcurrentHashMap<>();
  private final AtomicLong ids = new AtomicLong();
  private volatile Endpoint endpoint;
  private volatile String transport;
  private volatile IOException closedCause;
  private volatile long lastUsed = System.nanoTime();
  private volatile ClientSegment segment; // same-host reads by reference, once mapped
  private volatile long segmentBytes; // the segment's size, once granted
  private final AtomicInteger unsentReleases = new AtomicInteger(); // SHM_RELEASEs whose send has not completed
  private final AtomicBoolean releaseBacklog = new AtomicBoolean(); // closed for unsent releases past the limit
  private volatile org.hdfsrdma.protocol.WriteSegment writeSegment; // same-host writes by reference, once mapped
  private final java.util.concurrent.atomic.AtomicBoolean writeSegmentAsked = new java.util.concurrent.atomic.AtomicBoolean();
  private volatile org.hdfsrdma.protocol.wire.ClientGate gate;

  DataNodeConnection(String name, InetSocketAddress address, RdmaBlockClient client) {
    this.name = name;
    this.address = address;
    this.client = client;
  }

  void connected(Endpoint ep, String transportName, org.hdfsrdma.protocol.wire.ClientGate gate) {
    this.endpoint = ep;
    this.transport = transportName;
    this.gate = gate;
  }

  /** The protection gate this connection's messages pass (the DataNode's refusal, if any). */
  org.hdfsrdma.protocol.wire.ClientGate gate() {
    return gate;
  }

  void touch() {
    lastUsed = System.nanoTime();
  }

  long lastUsed() {
    return lastUsed;
  }

  Endpoint endpoint() {
    return endpoint;
  }

  InetSocketAddress address() {
    return address;
  }

  String transportName() {
    return transport;
  }

  boolean isOpen() {
    return closedCause == null && endpoint != null;
  }

  /** Requests waiting for answers. */
  int pendingCount() {
    return pending.size();
  }

  /** A new request id and the queue its answers go to. */
  PendingRead register() throws IOException {
    IOException c = closedCause;
    if (c != null) {
      throw new IOException(c.getMessage(), c);
    }
    PendingRead p = new PendingRead(ids.incrementAndGet(), this);
    pending.put(p.id(), p);
    if (closedCause != null) { // closed meanwhile: onClosed may have missed it
      p.fail(closedCause);
    }
    return p;
  }

  void unregister(PendingRead p) {
    pending.remove(p.id(), p);
  }

  /** Sends; a failed send fails {@code p}. Takes over the buffer's reference. */
  void send(RegisteredBuffer m, PendingRead p) {
    endpoint.send(m).whenComplete((v, t) -> {
      if (t != null && p != null) {
        p.fail(new IOException("sending to " + this + " failed: " + t.getMessage(), t));
      }
    });
  }

  /**
   * Asks the DataNode for a shared-memory segment (SHM_REQUEST), for read packets by reference,
   * and maps it read-only; waits at most {@code timeoutMs}. When the DataNode refuses
   * (another host, off, out of room) or the segment cannot be mapped (another user's file),
   * the connection reads by value, as before.
   */
  void mapSegment(long timeoutMs, org.apache.hadoop.hdfs.protocol.ExtendedBlock block,
      org.apache.hadoop.security.token.Token<org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier> token) {
    if (SameHost.name().isEmpty() || !HrdmaNative.isAvailable()) {
      return;
    }
    PendingRead p;
    try {
      p = register();
    } catch (IOException e) {
      return;
    }
    try {
      send(MessageCodec.encode(endpoint.transport().allocator(), MessageKind.SHM_REQUEST, p.id(),
          shmRequest(block, token)), p);
      Message m = p.take(timeoutMs);
      try {
        if (m.kind() == MessageKind.ERROR) {
          client.sharedMemoryRefused(this, m.error().getStatus() + ": " + m.error().getMessage());
          return;
        }
        HrdmaProtos.ShmGrant g = m.shmGrant();
        try {
          if (g.getBytes() < 1 || g.getBytes() > Integer.MAX_VALUE) {
            throw new ProtocolException("SHM_GRANT of a " + g.getBytes() + "-byte segment");
          }
          segmentBytes = g.getBytes();
          segment = new ClientSegment(NativeShm.open(Path.of(g.getPath()), g.getBytes()));
        } catch (IOException | RuntimeException e) {
          decline(p.id()); // the DataNode frees it now, not when the connection ends
          throw e;
        }
      } finally {
        m.release();
      }
      // the DataNode removes the file and sends packets by reference from now on
      send(MessageCodec.encode(endpoint.transport().allocator(), MessageKind.SHM_MAPPED, p.id(), null),
          null);
      if (closedCause != null) { // closed meanwhile: onClosed may have missed the segment
        closeSegment();
      }
    } catch (IOException | RuntimeException e) {
      LOG.warn("hrdma client: {} reads by value: no shared-memory segment: {}", this, e.toString());
    } finally {
      p.close();
    }
  }

  /** Whether no write segment was asked for on this connection yet. */
  boolean wantsWriteSegment() {
    return !writeSegmentAsked.get() && HrdmaNative.isAvailable() && !SameHost.name().isEmpty();
  }

  /**
   * Asks the DataNode for a write segment (WRITE_SHM_REQUEST, once per connection; later callers
   * get null): the request to finish with {@link #awaitWriteSegment}, which the caller must call
   * (it may send a write's own request in between: the DataNode answers the two apart, so the
   * segment's grant and descriptor fetch overlap the write's pipeline set-up). Null also when the
   * request could not be sent; the packets then go by value. Never throws.
   */
  PendingRead requestWriteSegment(org.apache.hadoop.hdfs.protocol.ExtendedBlock block,
      org.apache.hadoop.security.token.Token<org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier> token) {
    if (!writeSegmentAsked.compareAndSet(false, true)) {
      return null;
    }
    PendingRead p;
    try {
      p = register();
    } catch (IOException e) {
      return null;
    }
    try {
      send(MessageCodec.encode(endpoint.transport().allocator(), MessageKind.WRITE_SHM_REQUEST, p.id(),
          shmRequest(block, token)), p);
    } catch (IOException | RuntimeException e) {
      LOG.warn("hrdma client: {} writes by value: no write segment: {}", this, e.toString());
      p.close();
      return null;
    }
    return p;
  }

  /**
   * Finishes the request {@code p} of {@link #requestWriteSegment}: waits at most {@code timeoutMs}
   * for the grant, fetches the segment's descriptor from the DataNode's domain socket with the
   * grant's one-time id and maps it read-write; packets built after it go by reference. Any
   * refusal or failure leaves the connection's packets going by value. Closes {@code p}; never throws.
   */
  void awaitWriteSegment(PendingRead p, long timeoutMs, org.hdfsrdma.protocol.SegmentFetch.Request fetch) {
    try {
      Message m = p.take(timeoutMs);
      try {
        if (m.kind() == MessageKind.ERROR) {
          LOG.debug("hrdma client: {} writes by value: {}", this, m.error().getMessage());
          return;
        }
        Runnable hook = beforeSegmentFetch;
        if (hook != null) {
          hook.run();
        }
        // the DataNode frees a grant whose descriptor is not fetched in time
        writeSegment = org.hdfsrdma.protocol.WriteSegment.open(m.writeShmGrant(), fetch,
            endpoint.transport().allocator());
      } finally {
        m.release();
      }
      if (closedCause != null) { // closed meanwhile: onClosed may have missed the segment
        writeSegment.close();
      }
    } catch (IOException | RuntimeException e) {
      LOG.warn("hrdma client: {} writes by value: no write segment: {}", this, e.toString());
    } finally {
      p.close();
    }
  }

  /** Tests: runs on the writing thread between a write segment's grant and its descriptor's fetch. */
  static volatile Runnable beforeSegmentFetch;

  /** The connection's write segment, or null (tests). */
  org.hdfsrdma.protocol.WriteSegment writeSegment() {
    return writeSegment;
  }

  /** Where a write's packet messages are built: a slot of the write segment when one is free, else the transport's memory. */
  org.hdfsrdma.transport.BufferAllocator packetAllocator() {
    org.hdfsrdma.protocol.WriteSegment w = writeSegment;
    return w != null ? w : endpoint.transport().allocator();
  }

  /**
   * Sends a write's packet message {@code m} of request {@code p}: by reference when it was built
   * in this connection's write segment, else by value. A failed send fails {@code p}. Takes over
   * the buffer's reference.
   */
  void sendPacket(RegisteredBuffer m, PendingRead p) {
    org.hdfsrdma.protocol.WriteSegment.send(endpoint, writeSegment, p.id(), m).whenComplete((v, t) -> {
      if (t != null) {
        p.fail(new IOException("sending to " + this + " failed: " + t.getMessage(), t));
      }
    });
  }

  /** A WRITE_SHM_RELEASE: the DataNode has copied a packet out; its slot is ours again. */
  private void writeReleased(Endpoint ep, Message m) throws ProtocolException {
    try {
      long offset = m.writeShmRelease().getOffset();
      org.hdfsrdma.protocol.WriteSegment w = writeSegment;
      if (w == null || !w.released(offset)) {
        throw new ProtocolException("WRITE_SHM_RELEASE of offset " + offset + ", which the DataNode does not hold");
      }
    } finally {
      m.release();
    }
  }

  /** SHM_REQUEST: this host, and the block and token the DataNode checks when tokens are on. */
  static HrdmaProtos.ShmRequest shmRequest(org.apache.hadoop.hdfs.protocol.ExtendedBlock block,
      org.apache.hadoop.security.token.Token<org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier> token) {
    HrdmaProtos.ShmRequest.Builder b = HrdmaProtos.ShmRequest.newBuilder().setHost(SameHost.name())
        .setBlock(com.google.protobuf.ByteString.copyFrom(
            org.apache.hadoop.hdfs.protocolPB.PBHelperClient.convert(block).toByteArray()));
    if (token != null) {
      b.setToken(com.google.protobuf.ByteString.copyFrom(
          org.apache.hadoop.hdfs.protocolPB.PBHelperClient.convert(token).toByteArray()));
    }
    return b.build();
  }

  /** Tells the DataNode that its segment will not be used (SHM_DECLINED). */
  private void decline(long id) {
    Endpoint ep = endpoint;
    try {
      ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.SHM_DECLINED, id, null));
    } catch (TransportException | RuntimeException e) {
      // the connection is going away; the segment goes with it
    }
  }

  /** The connection's shared-memory segment, or null (tests). */
  ClientSegment segment() {
    return segment;
  }

  private void closeSegment() {
    ClientSegment s = segment;
    if (s != null) {
      s.close();
    }
  }

  /** A DATA_REF: the DATA_PACKET it names, read in place in the segment. */
  private Message byReference(Message ref) throws ProtocolException {
    ClientSegment s = segment;
    if (s == null) {
      throw new ProtocolException("DATA_REF on a connection without a shared-memory segment");
    }
    HrdmaProtos.ShmRef r = ref.shmRef();
    long id = ref.requestId();
    RegisteredBuffer view = s.view(r.getOffset(), r.getLength(), offset -> release(id, offset));
    try {
      Message m = MessageCodec.decode(view);
      if (m.kind() != MessageKind.DATA_PACKET || m.requestId() != id) {
        throw new ProtocolException("DATA_REF of request " + id + " names a " + m.kind() + " of request "
            + m.requestId());
      }
      return m;
    } catch (ProtocolException | RuntimeException e) {
      view.release();
      throw e;
    }
  }

  /**
   * The most SHM_RELEASEs that may wait unsent on a segment of {@code segmentBytes}: the slots it
   * can hold at the smallest. The DataNode cuts its segment into slots of its transport's
   * footprint of a packet (ShmHandler), whole pages of at least {@link BufferPool#MIN_CLASS}
   * bytes on every transport, and reuses a slot only once its release arrived: an honest
   * DataNode has at most that many packets out, so at most that many releases owed to it.
   */
  static int releaseLimit(long segmentBytes) {
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, segmentBytes / BufferPool.MIN_CLASS));
  }

  /** SHM_RELEASEs sent and not yet gone (waiting for the DataNode's credits); tests. */
  int unsentReleases() {
    return unsentReleases.get();
  }

  /** The most SHM_RELEASEs that may wait unsent before the connection closes; tests. */
  int releaseLimit() {
    return releaseLimit(segmentBytes);
  }

  /** Gives a packet's slot back to the DataNode; nothing to do once the connection is gone. */
  private void release(long id, long offset) {
    Endpoint ep = endpoint;
    if (closedCause != null || ep == null || releaseBacklog.get()) {
      return;
    }
    int unsent = unsentReleases.incrementAndGet();
    if (unsent > releaseLimit()) {
      unsentReleases.decrementAndGet();
      releaseBacklog(ep, unsent);
      return;
    }
    try {
      ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.SHM_RELEASE, id,
          HrdmaProtos.ShmRelease.newBuilder().setOffset(offset).build())).whenComplete((v, t) -> {
            unsentReleases.decrementAndGet();
            if (t != null) {
              releaseFailed(ep, t);
            }
          });
    } catch (TransportException | RuntimeException e) {
      unsentReleases.decrementAndGet();
      releaseFailed(ep, e);
    }
  }

  /**
   * The DataNode sent more packets by reference than its segment holds while it took none of
   * their releases (granted no credits for them): an honest one reuses a slot only once its
   * release arrived. Rather than queue a release per packet for as long as it sends, the
   * connection closes (the DataNode frees the segment with it, the readers read on elsewhere).
   */
  private void releaseBacklog(Endpoint ep, int unsent) {
    if (releaseBacklog.compareAndSet(false, true)) {
      client.sharedMemoryReleaseBacklog();
      LOG.warn("hrdma client: {} grants no credits for shared-memory releases: {} not yet sent, more than its "
          + "segment of {} bytes can have outstanding ({} packets at most), closing the connection", this, unsent,
          segmentBytes, releaseLimit());
      ep.close();
    }
  }

  /**
   * A release that did not reach the DataNode would hold its slot, and the read waiting for
   * it, for the connection's life: the connection closes instead (the DataNode frees the
   * segment with it, the readers read on elsewhere).
   */
  private void releaseFailed(Endpoint ep, Throwable t) {
    if (closedCause == null) {
      LOG.warn("hrdma client: cannot give a shared-memory packet back to {}, closing the connection: {}", this,
          t.toString());
      ep.close();
    }
  }

  @Override
  public void onMessage(Endpoint ep, RegisteredBuffer buffer) {
    Message m;
    try {
      m = MessageCodec.decode(buffer);
    } catch (ProtocolException e) {
      buffer.release();
      badMessage(ep, e);
      return;
    } catch (RuntimeException e) {
      buffer.release();
      throw e;
    }
    if (m.kind() == MessageKind.WRITE_SHM_RELEASE) {
      try {
        writeReleased(ep, m);
      } catch (ProtocolException e) {
        badMessage(ep, e);
      }
      return;
    }
    if (m.kind() == MessageKind.DATA_REF) {
      try {
        m = byReference(m);
      } catch (ProtocolException e) {
        badMessage(ep, e);
        return;
      } finally {
        buffer.release(); // the reference; the packet's view is the message now
      }
    }
    PendingRead p = pending.get(m.requestId());
    if (p == null) {
      if (m.kind() == MessageKind.SHM_GRANT) {
        decline(m.requestId()); // came after mapSegment gave up waiting
      }
      m.release(); // a cancelled request's tail
      return;
    }
    p.offer(m);
  }

  private void badMessage(Endpoint ep, ProtocolException e) {
    LOG.warn("hrdma client: bad message from {}, closing the connection: {}", this, e.getMessage());
    ep.close();
  }

  @Override
  public void onClosed(Endpoint ep, Throwable cause) {
    IOException why = new IOException("connection to " + this + " closed"
        + (cause == null ? "" : ": " + cause.getMessage()), cause);
    closedCause = why;
    closeSegment(); // views readers still hold keep the mapping until they are released
    org.hdfsrdma.protocol.WriteSegment w = writeSegment;
    if (w != null) {
      w.close(); // packets being built keep the mapping until they are sent or dropped
    }
    List<PendingRead> all = new ArrayList<>(pending.values());
    for (PendingRead p : all) {
      p.fail(why);
    }
    client.forget(this);
  }

  void close() {
    Endpoint ep = endpoint;
    if (ep != null) {
      ep.close();
    }
  }

  @Override
  public String toString() {
    return "DataNode " + name + " at " + address + (transport == null ? "" : " over " + transport);
  }
}
