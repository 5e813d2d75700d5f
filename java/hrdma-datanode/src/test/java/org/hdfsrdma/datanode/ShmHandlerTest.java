package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.SameHost;
import org.hdfsrdma.transport.BufferPool;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.SlabAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shared-memory handler's order against the connection's other requests: a client sends
 * SHM_MAPPED and its first read right behind it, and the read is served on another thread (its
 * volume's). SHM_MAPPED must take effect before the handler returns, on the I/O thread, so
 * that the read's first packet goes by reference however late the read executor runs; only
 * the file's removal waits for that executor. Without this, a loaded DataNode sent a new
 * connection's first packets by value.
 */
class ShmHandlerTest {
  private static final int SLOT = 1 << 20;

  @TempDir
  Path dir;

  private final BufferPool pool = new BufferPool(SlabAllocator.DIRECT, 1 << 20, 16 << 20);

  @AfterEach
  void closePool() {
    assertEquals(0, pool.buffersOutstanding(), "every buffer back");
    pool.close();
  }

  /** An executor that runs nothing until told: a read executor busy with other work. */
  private static final class Held extends AbstractExecutorService {
    final ArrayDeque<Runnable> queued = new ArrayDeque<>();

    @Override
    public void execute(Runnable r) {
      queued.add(r);
    }

    void runAll() {
      while (!queued.isEmpty()) {
        queued.poll().run();
      }
    }

    @Override
    public void shutdown() {}

    @Override
    public List<Runnable> shutdownNow() {
      return new ArrayList<>(queued);
    }

    @Override
    public boolean isShutdown() {
      return false;
    }

    @Override
    public boolean isTerminated() {
      return false;
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) {
      return true;
    }
  }


  private OpContext context(Held readExecutor) {
    Configuration c = new Configuration(false);
    c.setLong(ReadSettings.SHM_SEGMENT_BYTES_KEY, 4L * SLOT);
    c.set(ReadSettings.SHM_DIR_KEY, dir.toString());
    return new OpContext(null, ReadSettings.of(c), DataNodeLimits.defaults(), readExecutor, null, null, null, 1,
        null, null, null);
  }

  private Message message(MessageKind kind, long id) throws Exception {
    return MessageCodec.decode(MessageCodec.encode(pool, kind, id, null));
  }

  @Test
  void aMappedSegmentTakesTheNextRequestsPacketsBeforeTheReadExecutorRuns() throws Exception {
    Held readExecutor = new Held();
    OpContext ctx = context(readExecutor);
    List<MessageKind> sent = new ArrayList<>();
    RecordingWire ep = new RecordingWire(pool, m -> sent.add(m.kind()), e -> {
      throw new AssertionError(e);
    });
    Connection c = new Connection(ep, 4);
    ShmSegment s = ctx.shm().grant(SameHost.name(), "user a", pool, SLOT);
    assertTrue(c.segment(s));
    assertSame(pool, c.packetAllocator(), "granted, not mapped yet: packets by value");

    new ShmHandler(ctx).handle(c, message(MessageKind.SHM_MAPPED, 7));
    // the read executor has not run: a read dispatched after SHM_MAPPED allocates its first packet now
    assertSame(s, c.packetAllocator(), "mapped as SHM_MAPPED is handled, not when the read executor gets to it");
    RegisteredBuffer packet = c.packetAllocator().allocate(SLOT - 100);
    assertEquals(1, s.slotsHeld(), "the first packet takes a slot: it goes by reference");
    packet.release();

    assertTrue(Files.exists(s.path()), "the file's removal waits for the read executor");
    readExecutor.runAll();
    assertFalse(Files.exists(s.path()), "then the mapped segment's file goes");
    assertEquals(List.of(), sent, "nothing to answer");
    c.close();
    ep.close();
    assertTrue(ep.closeFuture().isDone(), "the fake connection closed: nothing left for the suite's leak check");
    assertEquals(0, ctx.shm().bytesMapped(), "the segment goes with the connection");
  }

  @Test
  void mappedWithoutASegmentIsRefusedAndDeclinedFreesItOnTheReadExecutor() throws Exception {
    Held readExecutor = new Held();
    OpContext ctx = context(readExecutor);
    List<MessageKind> sent = new ArrayList<>();
    RecordingWire ep = new RecordingWire(pool, m -> sent.add(m.kind()), e -> {
      throw new AssertionError(e);
    });
    Connection c = new Connection(ep, 4);
    ShmHandler h = new ShmHandler(ctx);
    h.handle(c, message(MessageKind.SHM_MAPPED, 3));
    assertEquals(List.of(MessageKind.ERROR), sent, "SHM_MAPPED without a segment");

    ShmSegment s = ctx.shm().grant(SameHost.name(), "user a", pool, SLOT);
    assertTrue(c.segment(s));
    h.handle(c, message(MessageKind.SHM_DECLINED, 4));
    assertEquals(4L * SLOT, ctx.shm().bytesMapped(), "freed off the I/O thread");
    readExecutor.runAll();
    assertEquals(0, ctx.shm().bytesMapped(), "a declined segment is freed");
    assertFalse(Files.exists(s.path()));
    assertSame(pool, c.packetAllocator(), "its packets go by value");
    c.close();
    ep.close();
    assertTrue(ep.closeFuture().isDone(), "the fake connection closed: nothing left for the suite's leak check");
  }
}
