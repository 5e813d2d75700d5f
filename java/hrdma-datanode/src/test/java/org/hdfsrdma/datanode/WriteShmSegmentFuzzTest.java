package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import java.net.ProtocolException;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicBoolean;
import org.hdfsrdma.nativelib.NativeShm;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.transport.BufferPool;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.SlabAllocator;
import org.junit.jupiter.api.AfterAll;

/**
 * Coverage-guided fuzzing of the DataNode's side of writes by reference ({@link WriteShmSegment}):
 * a WRITE_REF's offset, length and placement hint are the sender's bytes. Properties: a copy
 * exactly when the segment's descriptor was handed over, it is open, and the reference names at
 * most a slot from a slot's start (at least a message header), else {@link ProtocolException}; the
 * copy holds the segment's bytes there, page-aligned at the hint when the hint lies inside; the
 * segment is unmapped once closed, and every copy's buffer is back in the pool.
 * Seeds: {@code WriteShmSegmentFuzzTestInputs/references/}.
 */
class WriteShmSegmentFuzzTest {
  private static final BufferPool POOL = new BufferPool(SlabAllocator.DIRECT, 1 << 16, 16 << 20);

  @AfterAll
  static void cleanUp() {
    assertEquals(0, POOL.buffersOutstanding());
    POOL.close();
  }

  @FuzzTest(maxDuration = "30s")
  void references(FuzzedDataProvider data) throws Exception {
    int slotBytes = 4096 * data.consumeInt(1, 4);
    int slots = data.consumeInt(1, 8);
    long mappedBefore = NativeShm.mappedBytes();
    NativeShm.Segment mem = NativeShm.createSealed((long) slotBytes * slots);
    ByteBuffer all = mem.buffer();
    for (int i = 0; i < all.capacity(); i++) {
      all.put(i, (byte) (i * 31 + 7));
    }
    AtomicBoolean unmapped = new AtomicBoolean();
    WriteShmSegment seg = new WriteShmSegment(mem, slotBytes, "fuzz", () -> unmapped.set(true));
    boolean fetched = data.consumeBoolean();
    if (fetched) {
      int fd = seg.takeDescriptor();
      assertTrue(fd >= 0, "the descriptor, once");
      NativeShm.Segment.closeDescriptor(fd);
      assertEquals(-1, seg.takeDescriptor(), "a second time");
    }
    boolean closed = false;
    int steps = data.consumeInt(0, 32);
    for (int i = 0; i < steps; i++) {
      if (data.consumeInt(0, 15) == 0) {
        seg.close();
        closed = true;
        continue;
      }
      long offset = data.consumeBoolean() ? (long) slotBytes * data.consumeInt(-1, slots + 1) : data.consumeLong();
      int length = data.consumeBoolean() ? data.consumeInt(0, slotBytes + 16) : data.consumeInt();
      int place = data.consumeInt();
      HrdmaProtos.ShmRef r = HrdmaProtos.ShmRef.newBuilder().setOffset(offset).setLength(length).setPlace(place)
          .build();
      long uLength = Integer.toUnsignedLong(length);
      boolean valid = fetched && !closed && offset >= 0 && offset % slotBytes == 0 && offset / slotBytes < slots
          && uLength >= MessageCodec.FIXED_BYTES && uLength <= slotBytes;
      RegisteredBuffer copy;
      try {
        copy = seg.copyOut(r, POOL);
      } catch (ProtocolException e) {
        assertTrue(!valid, "refused a good reference: " + e.getMessage());
        continue;
      }
      try {
        if (!valid) {
          fail("copied a bad reference: offset " + offset + ", length " + uLength + ", fetched " + fetched
              + ", closed " + closed);
        }
        ByteBuffer b = copy.nio();
        assertEquals(length, b.remaining());
        for (int k = 0; k < length; k++) {
          assertEquals((byte) ((offset + k) * 31 + 7), b.get(b.position() + k), "byte " + k);
        }
        long hint = Integer.toUnsignedLong(place) - 1;
        if (hint >= 0 && hint < length) {
          assertEquals(0, (copy.address() + b.position() + hint) % RegisteredBuffer.PLACE_PAGE, "placed");
        }
      } finally {
        copy.release();
      }
    }
    seg.close();
    assertTrue(unmapped.get(), "the segment was not unmapped");
    assertEquals(mappedBefore, NativeShm.mappedBytes(), "mapped bytes");
    assertEquals(0, POOL.buffersOutstanding(), "buffers leaked");
  }
}
