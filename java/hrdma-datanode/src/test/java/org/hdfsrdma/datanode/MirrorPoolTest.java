package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PipelineAckProto;
import org.hdfsrdma.protocol.wire.WireProtection;
import org.hdfsrdma.transport.Endpoint;
import org.junit.jupiter.api.Test;

/**
 * {@link MirrorPool}: which kept connection a write gets, when one is closed instead of kept,
 * and that every connection it made is closed in the end (its live count back to 0).
 */
class MirrorPoolTest {
  private static final MirrorPool.Key A = new MirrorPool.Key(new InetSocketAddress("127.0.0.1", 5001),
      WireProtection.Mode.NONE, "BP-1");
  private static final MirrorPool.Key A_OTHER_USER = new MirrorPool.Key(new InetSocketAddress("127.0.0.1", 5001),
      WireProtection.Mode.SASL, "BP-1/user bob");
  private static final MirrorPool.Key A_USER = new MirrorPool.Key(new InetSocketAddress("127.0.0.1", 5001),
      WireProtection.Mode.SASL, "BP-1/user alice");

  /** An endpoint that is open until closed. */
  private static Endpoint endpoint() {
    CompletableFuture<Void> closed = new CompletableFuture<>();
    return (Endpoint) Proxy.newProxyInstance(Endpoint.class.getClassLoader(), new Class<?>[] {Endpoint.class},
        (proxy, m, args) -> switch (m.getName()) {
          case "closeFuture" -> closed;
          case "close" -> {
            closed.complete(null);
            yield null;
          }
          case "remoteAddress" -> new InetSocketAddress("127.0.0.1", 5001);
          case "toString" -> "endpoint";
          case "hashCode" -> System.identityHashCode(proxy);
          case "equals" -> proxy == args[0];
          default -> throw new UnsupportedOperationException(m.getName());
        });
  }

  private static MirrorPool.Pooled connected(MirrorPool pool, MirrorPool.Key key) {
    MirrorPool.Pooled p = pool.newConnection(key, "dn2");
    p.ep = endpoint();
    return p;
  }

  private static final WriteMirror.Listener QUIET = new WriteMirror.Listener() {
    @Override
    public void onDownstreamAck(PipelineAckProto ack) {}

    @Override
    public void onDownstreamFailed(String why) {}
  };

  @Test
  void aConnectionGivenBackIsLentAgainForTheSameKeyOnly() {
    MirrorPool pool = new MirrorPool(4, 60_000);
    MirrorPool.Pooled p = connected(pool, A_USER);
    p.lend(null, 7);
    pool.give(p, true);
    assertEquals(1, pool.idleConnections());
    assertNull(pool.take(A, 8), "another protection: not this connection");
    assertNull(pool.take(A_OTHER_USER, 8), "proved with another user's token: not this connection");
    assertSame(p, pool.take(A_USER, 8));
    assertEquals(1, pool.reused());
    assertEquals(0, pool.idleConnections());
    pool.give(p, false);
    assertFalse(p.isOpen(), "a write that did not end cleanly closes its connection");
    assertEquals(0, pool.liveConnections());
  }

  @Test
  void aConnectionIsNotLentToAWriteOfTheRequestIdItLastCarried() {
    MirrorPool pool = new MirrorPool(4, 60_000);
    MirrorPool.Pooled p = connected(pool, A);
    p.lend(null, 7);
    pool.give(p, true);
    assertNull(pool.take(A, 7), "the next DataNode may still hold request 7 of this connection");
    assertSame(p, pool.take(A, 9));
    pool.close();
    pool.give(p, true);
    assertFalse(p.isOpen(), "given back to a closed pool: closed");
    assertEquals(0, pool.liveConnections());
  }

  @Test
  void aConnectionThatClosedWhileIdleIsNeverLent() {
    MirrorPool pool = new MirrorPool(4, 60_000);
    MirrorPool.Pooled p = connected(pool, A);
    pool.give(p, true);
    p.ep.close(); // the next DataNode went away
    assertNull(pool.take(A, 1), "a closed connection is dropped, not lent");
    assertEquals(0, pool.idleConnections());
    assertEquals(0, pool.liveConnections());
  }

  @Test
  void beyondItsCapacityConnectionsAreClosed() {
    MirrorPool pool = new MirrorPool(2, 60_000);
    MirrorPool.Pooled[] ps = {connected(pool, A), connected(pool, A), connected(pool, A)};
    for (MirrorPool.Pooled p : ps) {
      pool.give(p, true);
    }
    assertEquals(2, pool.idleConnections());
    assertFalse(ps[2].isOpen(), "the third is closed");
    assertEquals(2, pool.liveConnections());
    pool.close();
    assertEquals(0, pool.liveConnections());
  }

  @Test
  void idleConnectionsExpire() throws InterruptedException {
    MirrorPool pool = new MirrorPool(4, 50);
    MirrorPool.Pooled old = connected(pool, A);
    pool.give(old, true);
    Thread.sleep(120);
    MirrorPool.Pooled fresh = connected(pool, A);
    pool.give(fresh, true);
    pool.expire();
    assertFalse(old.isOpen(), "idle longer than the pool keeps one");
    assertTrue(fresh.isOpen(), "just given back");
    assertEquals(1, pool.expired());
    assertEquals(1, pool.idleConnections());
    pool.close();
    assertEquals(0, pool.liveConnections());
  }

  @Test
  void aWriteGivesItsConnectionBackOnlyWhenNothingFailedDownstream() {
    MirrorPool pool = new MirrorPool(4, 60_000);
    Endpoint up = endpoint();
    MirrorPool.Pooled p = connected(pool, A);
    WriteMirror clean = new WriteMirror("dn2", up, QUIET, new java.util.concurrent.atomic.AtomicLong(), pool, p);
    p.lend(clean, 1);
    clean.close(true);
    assertSame(p, pool.take(A, 2), "a clean write's connection is kept");

    WriteMirror failed = new WriteMirror("dn2", up, QUIET, new java.util.concurrent.atomic.AtomicLong(), pool, p);
    p.lend(failed, 2);
    failed.failed("injected");
    failed.close(true);
    assertFalse(p.isOpen(), "a connection whose write failed downstream is closed");

    assertEquals(0, pool.liveConnections());
  }

  /**
   * A new connection's write segment is mapped after the set-up answered upstream: a small write
   * may end (and give its connection back) before its mapper took the next DataNode's answer,
   * which then stays for the mapper; a write that ends with no answer come yet leaves none behind
   * (a late one would go to the connection's next write, which releases it), and nothing is held.
   */
  @Test
  void aSegmentAnswerStaysForItsMapperWhenTheWriteEndsFirst() throws Exception {
    org.hdfsrdma.transport.BufferPool buffers = new org.hdfsrdma.transport.BufferPool(
        org.hdfsrdma.transport.SlabAllocator.DIRECT, 1 << 16, 1 << 20);
    MirrorPool pool = new MirrorPool(4, 60_000);
    MirrorPool.Pooled p = connected(pool, A);
    org.hdfsrdma.proto.HrdmaProtos.WriteShmGrant grant = org.hdfsrdma.proto.HrdmaProtos.WriteShmGrant.newBuilder()
        .setBytes(1 << 20).setSlotBytes(1 << 18).build();

    WriteMirror w = new WriteMirror("dn2", endpoint(), QUIET, new java.util.concurrent.atomic.AtomicLong(), pool, p);
    p.lend(w, 1);
    w.mapping(true);
    p.onMessage(p.ep, org.hdfsrdma.protocol.MessageCodec.encode(buffers,
        org.hdfsrdma.protocol.MessageKind.WRITE_SHM_GRANT, WriteMirror.SEGMENT_REQUEST_ID, grant));
    w.close(true); // the write ended before its mapper ran
    org.hdfsrdma.protocol.Message m = w.takeSegmentAnswer(1000);
    assertEquals(org.hdfsrdma.protocol.MessageKind.WRITE_SHM_GRANT, m.kind(), "the answer is the mapper's");
    m.release();
    w.mapping(false);
    assertSame(p, pool.take(A, 2), "the clean write's connection is kept");

    WriteMirror early = new WriteMirror("dn2", endpoint(), QUIET, new java.util.concurrent.atomic.AtomicLong(), pool,
        p);
    p.lend(early, 2);
    early.mapping(true);
    early.close(true); // no answer yet: nobody waits for it
    org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class, () -> early.takeSegmentAnswer(1000));
    early.mapping(false);
    WriteMirror next = new WriteMirror("dn2", endpoint(), QUIET, new java.util.concurrent.atomic.AtomicLong(), pool,
        pool.take(A, 3));
    p.lend(next, 3);
    p.onMessage(p.ep, org.hdfsrdma.protocol.MessageCodec.encode(buffers,
        org.hdfsrdma.protocol.MessageKind.WRITE_SHM_GRANT, WriteMirror.SEGMENT_REQUEST_ID, grant));
    next.close(true); // the late answer went to the next write, which did not ask: released
    assertEquals(0, buffers.buffersOutstanding(), "no message held");
    pool.close();
    assertEquals(0, pool.liveConnections());
  }

  /**
   * A next DataNode that sends messages of no write here without end has its connection closed
   * after {@link MirrorPool.Pooled#MAX_STRAYS} in a row; one message of the current write between
   * them starts the count again, and nothing is held.
   */
  @Test
  void aNextDataNodeFloodingMessagesOfNoWriteIsClosed() throws Exception {
    org.hdfsrdma.transport.BufferPool buffers = new org.hdfsrdma.transport.BufferPool(
        org.hdfsrdma.transport.SlabAllocator.DIRECT, 1 << 16, 1 << 20);
    MirrorPool pool = new MirrorPool(4, 60_000);
    MirrorPool.Pooled p = connected(pool, A);
    WriteMirror w = new WriteMirror("dn2", endpoint(), QUIET, new java.util.concurrent.atomic.AtomicLong(), pool, p);
    p.lend(w, 5);
    w.requestId = 5;
    PipelineAckProto ack = PipelineAckProto.newBuilder().setSeqno(1).build();
    for (int round = 0; round < 2; round++) {
      for (int i = 0; i < MirrorPool.Pooled.MAX_STRAYS; i++) {
        p.onMessage(p.ep, org.hdfsrdma.protocol.MessageCodec.encode(buffers,
            org.hdfsrdma.protocol.MessageKind.PIPELINE_ACK, 4, ack, null));
      }
      assertTrue(p.isOpen(), "closed within an honest tail, round " + round);
      // one message of the current write: the count starts again
      p.onMessage(p.ep, org.hdfsrdma.protocol.MessageCodec.encode(buffers,
          org.hdfsrdma.protocol.MessageKind.PIPELINE_ACK, 5, ack, null));
    }
    for (int i = 0; i <= MirrorPool.Pooled.MAX_STRAYS; i++) {
      p.onMessage(p.ep, org.hdfsrdma.protocol.MessageCodec.encode(buffers,
          org.hdfsrdma.protocol.MessageKind.PIPELINE_ACK, 4, ack, null));
    }
    assertFalse(p.isOpen(), "a flood of messages of no write here is not closed");
    w.close(false);
    assertEquals(0, buffers.buffersOutstanding(), "a message held");
    pool.close();
    assertEquals(0, pool.liveConnections());
  }

  /**
   * A next DataNode that repeats its WRITE_RESPONSE fails the write (its connection is then not
   * kept): a repeated answer of the current write would otherwise start the count of messages of
   * no write here again, so that a flood interleaving them were never closed.
   */
  @Test
  void aRepeatedWriteResponseFailsTheWrite() throws Exception {
    org.hdfsrdma.transport.BufferPool buffers = new org.hdfsrdma.transport.BufferPool(
        org.hdfsrdma.transport.SlabAllocator.DIRECT, 1 << 16, 1 << 20);
    MirrorPool pool = new MirrorPool(4, 60_000);
    MirrorPool.Pooled p = connected(pool, A);
    java.util.List<String> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
    WriteMirror w = new WriteMirror("dn2", endpoint(), new WriteMirror.Listener() {
      @Override
      public void onDownstreamAck(PipelineAckProto ack) {}

      @Override
      public void onDownstreamFailed(String why) {
        failures.add(why);
      }
    }, new java.util.concurrent.atomic.AtomicLong(), pool, p);
    p.lend(w, 5);
    w.requestId = 5;
    org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto ok =
        org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto.newBuilder()
            .setStatus(org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status.SUCCESS).build();
    PipelineAckProto ack = PipelineAckProto.newBuilder().setSeqno(1).build();
    p.onMessage(p.ep, org.hdfsrdma.protocol.MessageCodec.encode(buffers,
        org.hdfsrdma.protocol.MessageKind.WRITE_RESPONSE, 5, ok, null));
    assertTrue(w.response.isDone());
    assertEquals(java.util.List.of(), failures, "the first WRITE_RESPONSE is the write's answer");
    for (int round = 0; round < 3; round++) {
      for (int i = 0; i < MirrorPool.Pooled.MAX_STRAYS; i++) {
        p.onMessage(p.ep, org.hdfsrdma.protocol.MessageCodec.encode(buffers,
            org.hdfsrdma.protocol.MessageKind.PIPELINE_ACK, 4, ack, null));
      }
      p.onMessage(p.ep, org.hdfsrdma.protocol.MessageCodec.encode(buffers,
          org.hdfsrdma.protocol.MessageKind.WRITE_RESPONSE, 5, ok, null));
    }
    assertFalse(failures.isEmpty(), "a flood between repeated WRITE_RESPONSEs went on unchecked: "
        + 3 * MirrorPool.Pooled.MAX_STRAYS + " messages of no write here, the connection "
        + (p.isOpen() ? "open" : "closed"));
    assertTrue(failures.get(0).contains("second WRITE_RESPONSE"), failures.toString());
    w.close(true);
    assertFalse(p.isOpen(), "a write whose downstream failed keeps no connection");
    assertEquals(0, buffers.buffersOutstanding(), "a message held");
    pool.close();
    assertEquals(0, pool.liveConnections());
  }
}
