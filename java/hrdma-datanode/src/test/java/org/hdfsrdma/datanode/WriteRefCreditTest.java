package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeShm;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.transport.BufferPool;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.SlabAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * A packet written by reference holds its sender's credit as a packet sent by value does: the
 * WRITE_REF message (which took one of the connection's credits) is released only with the
 * DataNode's copy of the packet it names, when the write is done with it. Before, the reference
 * was released as soon as it was copied (and its slot given back), so a sender could keep
 * sending references while the copies waited for the disk: nothing but the transport pool's
 * global limit, which every connection shares, bounded the copies one connection made.
 */
class WriteRefCreditTest {
  private static final int SLOT = 1 << 16;
  private final BufferPool pool = new BufferPool(SlabAllocator.DIRECT, 1 << 16, 16 << 20);

  @AfterEach
  void closePool() {
    assertEquals(0, pool.buffersOutstanding(), "every buffer back");
    pool.close();
  }

  @Test
  void aReferenceIsReleasedOnlyWithItsCopy() throws Exception {
    Assumptions.assumeTrue(HrdmaNative.isAvailable(), "libhrdma (shared memory)");
    OpContext ctx = new OpContext(null, ReadSettings.of(new Configuration(false)), DataNodeLimits.defaults(), null,
        null, null, null, 1, null, null, null);
    List<MessageKind> sent = new ArrayList<>();
    RecordingWire ep = new RecordingWire(pool, m -> sent.add(m.kind()), e -> {
      throw new AssertionError(e);
    });
    Connection c = new Connection(ep, 4);
    NativeShm.Segment mem = NativeShm.createSealed(4L * SLOT);
    WriteShmSegment seg = new WriteShmSegment(mem, SLOT, "test", () -> { });
    NativeShm.Segment.closeDescriptor(seg.takeDescriptor()); // handed over
    assertTrue(c.writeSegment(seg));
    // a DATA_PACKET in slot 1, as the sender lays it out
    RegisteredBuffer packet = MessageCodec.encode(pool, MessageKind.DATA_PACKET, 9,
        BlockOps.packetHeader(0, 0, false, 100, false), ByteBuffer.allocate(104));
    int n = packet.readableBytes();
    mem.buffer().put(SLOT, packet.nio(), packet.nio().position(), n);
    packet.release();

    WriteShmHandler h = new WriteShmHandler(ctx);
    AtomicInteger refsReleased = new AtomicInteger();
    List<RegisteredBuffer> copies = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      RegisteredBuffer refBuf = MessageCodec.encode(pool, MessageKind.WRITE_REF, 9,
          HrdmaProtos.ShmRef.newBuilder().setOffset(SLOT).setLength(n).build());
      refBuf.onRelease(refsReleased::incrementAndGet); // as a transport counts the credit it took
      Message ref = MessageCodec.decode(refBuf);
      RegisteredBuffer copy = h.copyOut(c, ref);
      assertNotNull(copy, "a good reference");
      assertEquals(MessageKind.DATA_PACKET, MessageCodec.decode(copy).kind());
      copies.add(copy);
    }
    assertEquals(List.of(MessageKind.WRITE_SHM_RELEASE, MessageKind.WRITE_SHM_RELEASE,
        MessageKind.WRITE_SHM_RELEASE), sent, "each slot goes back at once: the sender may rewrite it");
    assertEquals(0, refsReleased.get(), "a reference whose copy waits for the disk holds its credit");
    copies.remove(0).release();
    assertEquals(1, refsReleased.get(), "released with its copy");
    for (RegisteredBuffer b : copies) {
      b.release();
    }
    assertEquals(3, refsReleased.get());
    c.close();
    ep.close();
  }
}
