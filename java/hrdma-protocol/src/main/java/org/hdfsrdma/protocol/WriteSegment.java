package org.hdfsrdma.protocol;

import java.io.IOException;
import java.net.ProtocolException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.hdfsrdma.nativelib.NativeFiles;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.transport.BufferAllocator;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sender's side of same-host writes by reference (a client, or a DataNode forwarding
 * downstream): its read-write mapping of the segment the receiving DataNode granted the
 * connection (WRITE_SHM_GRANT, the descriptor fetched with {@link SegmentFetch}), cut into
 * slots of {@code slotBytes}. A write's DATA_PACKET is built straight in a free slot
 * ({@link #allocate}); {@link #send} then sends WRITE_REF (the slot's offset, the message's
 * length) in the message's place. The slot is the receiver's until its WRITE_SHM_RELEASE
 * ({@link #released}), which the receiver sends once it has copied the packet out; the sender
 * never writes it meanwhile. When no slot is free, or a packet does not fit one, the packet
 * comes from the transport's allocator and goes by value: the segment never stalls a write.
 *
 * <p>Closing (the connection ended) gives back the slots the receiver held and unmaps once
 * every slot is back (a packet being built holds its slot until it is sent). Thread-safe.
 */
public final class WriteSegment extends SlottedSegment {
  private static final Logger LOG = LoggerFactory.getLogger(WriteSegment.class);
  /** Write segments mapped and not unmapped yet in this process (a leak check for tests). */
  private static final AtomicLong LIVE = new AtomicLong();

  private final NativeFiles.Mapping mem;
  private final BufferAllocator fallback;
  private final HashMap<Long, Slot> refs = new HashMap<>();    // guarded by this: offset -> sent, not released
  private final AtomicLong byReference = new AtomicLong();
  private final AtomicLong byValue = new AtomicLong();

  /**
   * @param mem the read-write mapping of the granted segment (the segment unmaps it)
   * @param fallback where packets come from when no slot is free (the connection's transport)
   */
  public WriteSegment(NativeFiles.Mapping mem, int slotBytes, BufferAllocator fallback) {
    this(mem, slotBytes, fallback, () -> { });
  }

  /** As {@link #WriteSegment(NativeFiles.Mapping, int, BufferAllocator)}; {@code unmapped} runs once, after the unmap. */
  public WriteSegment(NativeFiles.Mapping mem, int slotBytes, BufferAllocator fallback, Runnable unmapped) {
    super(mem.buffer(), mem.address(), mem.length(), checkedSlotBytes(mem.length(), slotBytes), () -> {
      mem.close();
      LIVE.decrementAndGet();
    }, unmapped);
    this.mem = mem;
    this.fallback = fallback;
    LIVE.incrementAndGet();
  }

  private static int checkedSlotBytes(long bytes, int slotBytes) {
    if (slotBytes < MessageCodec.FIXED_BYTES || bytes / slotBytes < 1) {
      throw new IllegalArgumentException("segment of " + bytes + " bytes with slots of " + slotBytes);
    }
    return slotBytes;
  }

  /** Write segments of this process not unmapped yet. */
  public static long live() {
    return LIVE.get();
  }

  /**
   * Checks a grant, fetches its descriptor from the DataNode's Unix domain socket and maps it
   * read-write; the descriptor is closed again (the mapping stays).
   *
   * @throws IOException a bad grant, the socket refused, or the descriptor cannot be mapped
   */
  public static WriteSegment open(HrdmaProtos.WriteShmGrant g, SegmentFetch.Request request,
      BufferAllocator fallback) throws IOException {
    return open(g, request, fallback, () -> { });
  }

  /** As {@link #open(HrdmaProtos.WriteShmGrant, SegmentFetch.Request, BufferAllocator)}; {@code unmapped} runs after the unmap. */
  public static WriteSegment open(HrdmaProtos.WriteShmGrant g, SegmentFetch.Request request,
      BufferAllocator fallback, Runnable unmapped) throws IOException {
    if (g.getBytes() < 1 || g.getBytes() > Integer.MAX_VALUE || g.getSlotBytes() < MessageCodec.FIXED_BYTES
        || g.getSlotBytes() > g.getBytes() || g.getGrant().size() < 16) {
      throw new ProtocolException("WRITE_SHM_GRANT of a " + g.getBytes() + "-byte segment with "
          + g.getSlotBytes() + "-byte slots and a " + g.getGrant().size() + "-byte id");
    }
    try (NativeFiles.Fd fd = SegmentFetch.fetch(request, g.getGrant().toByteArray())) {
      if (fd.size() < g.getBytes()) {
        throw new ProtocolException("the write segment has " + fd.size() + " bytes, not " + g.getBytes());
      }
      NativeFiles.Mapping m = fd.mapShared(g.getBytes());
      try {
        return new WriteSegment(m, g.getSlotBytes(), fallback, unmapped);
      } catch (RuntimeException e) {
        m.close();
        throw e;
      }
    }
  }

  /** WRITE_SHM_REQUEST's header: this host, and the write's block and token, which the DataNode checks for WRITE. */
  public static HrdmaProtos.ShmRequest request(org.apache.hadoop.hdfs.protocol.ExtendedBlock block,
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

  public int slotBytes() {
    return slotBytes;
  }

  /** Packets sent by reference so far. */
  public long byReference() {
    return byReference.get();
  }

  /** Packets that went by value for want of a free slot (or too large for one). */
  public long byValue() {
    return byValue.get();
  }

  @Override
  public RegisteredBuffer allocate(int size) throws TransportException {
    RegisteredBuffer s = trySlot(size);
    return s != null ? s : fallback.allocate(size);
  }

  /**
   * A free slot for a message of {@code size} bytes (position 0, limit {@code size}), or null
   * when none is free or it does not fit one (counted as a packet by value).
   */
  public RegisteredBuffer trySlot(int size) {
    Slot s = takeSlot(size);
    if (s == null) {
      byValue.incrementAndGet();
    }
    return s;
  }

  @Override
  public long footprint(int size) {
    return size <= slotBytes ? slotBytes : fallback.footprint(size);
  }

  @Override
  public long bytesRegistered() {
    return fallback.bytesRegistered();
  }

  @Override
  public long buffersOutstanding() {
    return fallback.buffersOutstanding();
  }

  /**
   * Sends message {@code m} (position to limit) of request {@code id} on {@code ep}: by
   * reference when it lies in a slot of {@code seg} (the segment of {@code ep}'s connection;
   * may be null), else by value (a slot of another connection's segment is copied into a
   * transport buffer first). Takes over the reference to {@code m}. The future completes when
   * the message, or its reference, has gone.
   */
  public static CompletableFuture<Void> send(Endpoint ep, WriteSegment seg, long id, RegisteredBuffer m) {
    if (m instanceof Slot s) {
      if (s.owner() == seg) {
        return seg.sendRef(ep, id, s);
      }
      RegisteredBuffer copy;
      try {
        copy = ep.transport().allocator().allocate(m.readableBytes());
      } catch (TransportException e) {
        m.release();
        return CompletableFuture.failedFuture(e);
      }
      copy.nio().clear();
      copy.nio().put(m.nio().duplicate()).flip();
      copy.placeAligned(m.placeAligned());
      m.release();
      return ep.send(copy);
    }
    return ep.send(m);
  }

  private CompletableFuture<Void> sendRef(Endpoint ep, long id, Slot s) {
    long offset = s.offset();
    if (s.nio().position() != 0) { // a reference names a message at its slot's start
      RegisteredBuffer copy;
      try {
        copy = ep.transport().allocator().allocate(s.readableBytes());
      } catch (TransportException e) {
        s.release();
        return CompletableFuture.failedFuture(e);
      }
      copy.nio().clear();
      copy.nio().put(s.nio().duplicate()).flip();
      copy.placeAligned(s.placeAligned());
      s.release();
      byValue.incrementAndGet();
      return ep.send(copy);
    }
    HrdmaProtos.ShmRef ref = HrdmaProtos.ShmRef.newBuilder().setOffset(offset).setLength(s.readableBytes())
        .setPlace(s.placeAligned() + 1).build();
    synchronized (this) {
      if (isClosed()) {
        s.release();
        return CompletableFuture.failedFuture(new TransportException("connection to " + ep.remoteAddress()
            + " closed"));
      }
      refs.put(offset, s);
    }
    byReference.incrementAndGet();
    CompletableFuture<Void> f;
    try {
      f = ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.WRITE_REF, id, ref));
    } catch (TransportException | RuntimeException e) {
      broken(ep, e);
      return CompletableFuture.failedFuture(e);
    }
    return f.whenComplete((v, t) -> {
      if (t != null) {
        broken(ep, t);
      }
    });
  }

  /**
   * A WRITE_REF could not be sent: the receiver may read the slot or not, so it is never written
   * again; the segment and the connection close (the write fails over to its recovery).
   */
  private void broken(Endpoint ep, Throwable why) {
    LOG.warn("hrdma: cannot send a packet reference to {}, closing the connection: {}", ep.remoteAddress(),
        why.toString());
    close();
    ep.close();
  }

  /**
   * The receiver's WRITE_SHM_RELEASE of the packet at {@code offset}.
   *
   * @return false when the receiver held no packet there (a bad or repeated release)
   */
  public boolean released(long offset) {
    Slot s;
    synchronized (this) {
      s = refs.remove(offset);
    }
    if (s == null) {
      return false;
    }
    s.release();
    return true;
  }

  /**
   * The connection ended: the slots the receiver held come back, no slot is handed out again,
   * and the mapping goes once every slot is back. Idempotent.
   */
  public void close() {
    List<Slot> outstanding;
    synchronized (this) {
      if (!markClosed()) {
        return;
      }
      outstanding = new ArrayList<>(refs.values());
      refs.clear();
    }
    for (Slot s : outstanding) {
      s.release();
    }
    unmapIfIdle();
  }

  @Override
  public String toString() {
    return "WriteSegment[" + mem.length() + " bytes, slots of " + slotBytes + "]";
  }
}
