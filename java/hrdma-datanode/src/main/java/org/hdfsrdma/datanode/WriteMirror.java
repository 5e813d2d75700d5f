package org.hdfsrdma.datanode;

import java.io.IOException;
import java.net.ProtocolException;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PipelineAckProto;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.WriteSegment;
import org.hdfsrdma.protocol.wire.ProtectedEndpoint;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;

/**
 * A write's connection to the next DataNode of its pipeline (stock: the mirror socket of
 * DataXceiver#writeBlock): forwards each received packet, and reports the downstream's
 * WRITE_RESPONSE, its acks and its failure. Its handler runs on the connector's I/O thread;
 * {@link #forward} never blocks. Thread-safe.
 */
final class WriteMirror implements EndpointHandler, DownstreamMirror {
  /** What the write hears from downstream. */
  interface Listener {
    void onDownstreamAck(PipelineAckProto ack);

    void onDownstreamFailed(String why);

    /** The downstream's connection closed (its end, or it failed); by default a failure. */
    default void onDownstreamClosed(String why) {
      onDownstreamFailed(why);
    }
  }

  /** The request id of the mirror's WRITE_SHM_REQUEST: apart from the write's own (ids upstream are positive). */
  static final long SEGMENT_REQUEST_ID = -2;

  final CompletableFuture<BlockOpResponseProto> response = new CompletableFuture<>();
  /** The answer to WRITE_SHM_REQUEST: a WRITE_SHM_GRANT or an ERROR (the mirror forwards by value then). */
  private final CompletableFuture<Message> segmentAnswer = new CompletableFuture<>();
  /** The answer was taken by the set-up, or dropped: whoever flips it owns (releases) the message. */
  private final java.util.concurrent.atomic.AtomicBoolean answerTaken = new java.util.concurrent.atomic.AtomicBoolean();
  private final String name;
  private final Endpoint up;
  private final Listener listener;
  volatile Endpoint ep;
  /** The write's request id downstream (a WRITE_REF carries it). */
  volatile long requestId;
  /** Same-host writes by reference downstream: the next DataNode's segment, once mapped; else null. */
  private volatile WriteSegment segment;
  private boolean closed; // guarded by this
  // the set-up maps the segment after its WRITE_RESPONSE: an answer that came is the mapper's to take
  private boolean mapping; // guarded by this
  private final AtomicLong forwardedByReference;
  private final MirrorPool pool;           // null: the connection is this write's own
  private final MirrorPool.Pooled pooled;  // the pool's connection this write borrows, or null
  private volatile boolean broken;         // something failed downstream: the connection is not reused

  WriteMirror(String name, Endpoint up, Listener listener) {
    this(name, up, listener, new AtomicLong());
  }

  WriteMirror(String name, Endpoint up, Listener listener, AtomicLong forwardedByReference) {
    this(name, up, listener, forwardedByReference, null, null);
  }

  /**
   * A mirror over {@code pooled}, a connection of {@code pool} (null: a connection of its own,
   * closed with the mirror): the connection and its write segment outlive the write, which gives
   * them back on {@link #close(boolean)}.
   */
  WriteMirror(String name, Endpoint up, Listener listener, AtomicLong forwardedByReference, MirrorPool pool,
      MirrorPool.Pooled pooled) {
    this.name = name;
    this.up = up;
    this.forwardedByReference = forwardedByReference;
    this.pool = pool;
    this.pooled = pooled;
    Listener l = listener;
    // whatever goes wrong downstream makes the connection unfit for another write
    this.listener = new Listener() {
      @Override
      public void onDownstreamAck(PipelineAckProto ack) {
        for (org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status s : ack.getReplyList()) {
          if (s != org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status.SUCCESS) {
            broken = true;
          }
        }
        l.onDownstreamAck(ack);
      }

      @Override
      public void onDownstreamFailed(String why) {
        broken = true;
        l.onDownstreamFailed(why);
      }

      @Override
      public void onDownstreamClosed(String why) {
        broken = true;
        l.onDownstreamClosed(why);
      }
    };
  }

  /** Gives the mirror the next DataNode's write segment; false (and it is closed) when the mirror closed meanwhile. */
  boolean segment(WriteSegment s) {
    if (pooled != null && !pooled.segment(s)) { // the connection owns it from now on
      return false;
    }
    synchronized (this) {
      if (!closed) {
        segment = s;
        return true;
      }
    }
    if (pooled == null) {
      s.close();
    }
    return false;
  }

  WriteSegment segment() {
    return segment;
  }

  /**
   * {@code on}: the segment answer is taken by a mapper after the set-up ({@link #close} leaves
   * an answer that came to it); off: the mapper is done, and an answer it left is dropped if the
   * write closed meanwhile.
   */
  void mapping(boolean on) {
    boolean drop;
    synchronized (this) {
      mapping = on;
      drop = !on && closed;
    }
    if (drop) {
      dropSegmentAnswer();
    }
  }

  /**
   * The next DataNode's answer to WRITE_SHM_REQUEST (the caller releases it), waiting at most
   * {@code timeoutMs}.
   *
   * @throws IOException no answer in time, or the connection closed
   */
  Message takeSegmentAnswer(long timeoutMs) throws IOException, InterruptedException {
    Message m;
    try {
      m = segmentAnswer.get(timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      dropSegmentAnswer();
      throw new IOException("no answer from " + name + " to the write segment request within " + timeoutMs + " ms");
    } catch (java.util.concurrent.ExecutionException e) {
      throw new IOException(e.getCause().getMessage(), e.getCause());
    }
    if (!answerTaken.compareAndSet(false, true)) {
      throw new IOException("the connection to " + name + " closed");
    }
    return m;
  }

  /** Nobody will take the answer: one that came (or comes) is released. */
  private void dropSegmentAnswer() {
    segmentAnswer.completeExceptionally(new IOException("connection to " + name + " closed"));
    if (!segmentAnswer.isCompletedExceptionally() && answerTaken.compareAndSet(false, true)) {
      segmentAnswer.join().release();
    }
  }

  private void closeSegment() {
    WriteSegment s;
    synchronized (this) {
      closed = true;
      s = segment;
    }
    if (s != null && pooled == null) { // a pooled connection's segment is the connection's
      s.close();
    }
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public void forward(Message packet, int dataOffset) {
    forward(packet.buffer(), dataOffset);
  }

  /**
   * Sends the received packet on; never blocks. {@code dataOffset}: where its data starts (from
   * the message's first byte), which the next node's transport is asked to place page-aligned so
   * that it can write it O_DIRECT without a copy; -1 for none. Sealing keeps the layout (the tag
   * follows the message), so a sealed connection carries the hint too.
   */
  void forward(RegisteredBuffer received, int dataOffset) {
    Endpoint e = ep;
    WriteSegment seg = segment;
    if (seg != null && forwardByReference(e, seg, received, dataOffset)) {
      return;
    }
    // A copy (sealed, or into another transport's memory) keeps the received packet until the copy is
    // sent, as the cut-through does by sending the packet itself: the packet holds the upstream's credit,
    // so a downstream that takes nothing stops the upstream after its window (stock's BlockReceiver stops
    // reading while its mirror's socket takes nothing); released once written here, the credit went back
    // and the copies queued for the downstream without bound, in the pool every connection draws from.
    if (e instanceof ProtectedEndpoint p) {
      // sealed into the connector's own buffer in one pass: no plain copy first
      received.placeAligned(dataOffset);
      received.retain(); // until the sealed copy is sent
      p.sendCopy(received.retain()).whenComplete((v, t) -> {
        received.release();
        if (t != null) {
          listener.onDownstreamFailed("forwarding to " + name + " failed: " + t.getMessage());
        }
      });
      return;
    }
    RegisteredBuffer out;
    ByteBuffer src = received.nio();
    boolean copied = false;
    // cut-through when the buffer is the downstream transport's own memory (one transport shared by the
    // server and the connector), or on tcp, which sends from any direct buffer
    if (e.transport() == up.transport() || "tcp".equals(e.transport().name())) {
      out = received.retain(); // cut-through: the very buffer we received
    } else {
      // another transport's registered memory: copy into one of ours
      try {
        out = e.transport().allocator().allocate(src.remaining());
      } catch (TransportException ex) {
        listener.onDownstreamFailed("out of registered memory forwarding to " + name + ": " + ex.getMessage());
        return;
      }
      ByteBuffer o = out.nio();
      o.clear();
      o.put(src.duplicate());
      o.flip();
      received.retain(); // until the copy is sent
      copied = true;
    }
    out.placeAligned(dataOffset);
    boolean held = copied;
    e.send(out).whenComplete((v, t) -> {
      if (held) {
        received.release();
      }
      if (t != null) {
        listener.onDownstreamFailed("forwarding to " + name + " failed: " + t.getMessage());
      }
    });
  }

  /**
   * The next DataNode is on this host and granted a segment: the packet is copied into a free slot
   * (one copy, where the loopback would copy it twice and seal it on an encrypted cluster) and
   * only its place goes (WRITE_REF), in order with every other message of the write. False when
   * no slot is free: it goes by value.
   */
  private boolean forwardByReference(Endpoint e, WriteSegment seg, RegisteredBuffer received, int dataOffset) {
    RegisteredBuffer slot = seg.trySlot(received.readableBytes());
    if (slot == null) {
      return false;
    }
    slot.nio().clear();
    slot.nio().put(received.nio().duplicate()).flip();
    slot.placeAligned(dataOffset);
    forwardedByReference.incrementAndGet();
    WriteSegment.send(e, seg, requestId, slot).whenComplete((v, t) -> {
      if (t != null) {
        listener.onDownstreamFailed("forwarding to " + name + " failed: " + t.getMessage());
      }
    });
    return true;
  }

  /**
   * Whether sends to the downstream wait (for its credits, or handed to the transport and not
   * done): this node is held up by the downstream, as stock's BlockReceiver blocked writing to its
   * mirror.
   */
  @Override
  public boolean sendsWaiting(long now) {
    return sendStallNanos(now) > 0;
  }

  /** For how long sends to the downstream have waited with none completed ({@link Endpoint#sendStallNanos}). */
  @Override
  public long sendStallNanos(long now) {
    Endpoint e = ep;
    return e == null ? 0 : e.sendStallNanos(now);
  }

  /**
   * Sending to the downstream failed here (an injected fault), or it owed acks for too long: the
   * write goes on without it.
   */
  @Override
  public void failed(String why) {
    listener.onDownstreamFailed(why);
  }

  void close() {
    close(false);
  }

  /**
   * The write is over: its own connection closes; a pooled one goes back to the pool when
   * {@code cleanly} (every packet acknowledged) and nothing failed downstream, else closes.
   */
  @Override
  public void close(boolean cleanly) {
    closeSegment();
    boolean mapper;
    synchronized (this) {
      // an answer still to come would go to the connection's next write: nobody waits for it then
      mapper = mapping && segmentAnswer.isDone();
    }
    if (!mapper) {
      dropSegmentAnswer();
    }
    if (pooled != null) {
      pool.give(pooled, cleanly && !broken);
      return;
    }
    Endpoint e = ep;
    if (e != null) {
      e.close();
    }
  }

  /** Whether this write borrowed a pooled connection (tests, logs). */
  boolean pooled() {
    return pooled != null;
  }

  @Override
  public void onMessage(Endpoint endpoint, RegisteredBuffer buffer) {
    Message m;
    try {
      m = MessageCodec.decode(buffer);
    } catch (ProtocolException e) {
      buffer.release();
      String why = "bad message from " + name + ": " + e.getMessage();
      response.completeExceptionally(new IOException(why));
      listener.onDownstreamFailed(why);
      endpoint.close();
      return;
    }
    onDecoded(endpoint, m);
  }

  /**
   * Frees the slot of {@code s} that a WRITE_SHM_RELEASE from {@code name} names.
   *
   * @throws ProtocolException no segment, or a slot it does not hold: the peer's error
   */
  static void release(WriteSegment s, Message m, String name) throws ProtocolException {
    long offset = m.writeShmRelease().getOffset();
    if (s == null || !s.released(offset)) {
      throw new ProtocolException("WRITE_SHM_RELEASE of offset " + offset + ", which " + name + " does not hold");
    }
  }

  /** A message from downstream, decoded (the connection's I/O thread); takes it over. */
  void onDecoded(Endpoint endpoint, Message m) {
    if (m.requestId() == SEGMENT_REQUEST_ID && !segmentAnswer.isDone() && (m.kind() == MessageKind.WRITE_SHM_GRANT
        || m.kind() == MessageKind.ERROR)) {
      if (!segmentAnswer.complete(m)) {
        m.release(); // came after the set-up stopped waiting: the DataNode frees the grant unfetched
      }
      return;
    }
    if (m.kind() == MessageKind.WRITE_SHM_RELEASE) {
      try {
        release(segment, m, name);
      } catch (ProtocolException e) {
        String why = "bad message from " + name + ": " + e.getMessage();
        listener.onDownstreamFailed(why);
        endpoint.close();
      } finally {
        m.release();
      }
      return;
    }
    try {
      switch (m.kind()) {
        case WRITE_RESPONSE -> {
          // one per write, as stock's: a repeated one is the peer's error, and would restart the
          // pooled connection's count of messages of no write here (MirrorPool.Pooled.MAX_STRAYS)
          boolean answered = response.isDone() && !response.isCompletedExceptionally();
          if (answered) {
            listener.onDownstreamFailed(name + " sent a second WRITE_RESPONSE for request " + m.requestId());
          } else {
            response.complete(m.writeResponse());
          }
        }
        case PIPELINE_ACK -> listener.onDownstreamAck(m.pipelineAck());
        case ERROR -> {
          String why = name + " answered " + m.error().getStatus() + ": " + m.error().getMessage();
          response.completeExceptionally(new IOException(why));
          listener.onDownstreamFailed(why);
        }
        default -> listener.onDownstreamFailed(name + " sent an unexpected " + m.kind());
      }
    } catch (ProtocolException e) {
      throw new AssertionError(e); // the kind was checked
    } finally {
      m.release();
    }
  }

  @Override
  public void onClosed(Endpoint endpoint, Throwable cause) {
    closeSegment();
    dropSegmentAnswer();
    String why = "connection to " + name + " closed" + (cause == null ? "" : ": " + cause.getMessage());
    response.completeExceptionally(new IOException(why));
    listener.onDownstreamClosed(why);
  }
}
