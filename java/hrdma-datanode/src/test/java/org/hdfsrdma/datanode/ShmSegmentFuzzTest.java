package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.hdfsrdma.nativelib.NativeShm;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.transport.BufferPool;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.SlabAllocator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Coverage-guided fuzzing of the DataNode's side of reads by reference ({@link ShmSegment}):
 * the client's SHM_RELEASE offsets are the peer's bytes. Properties: a release gives back a
 * slot exactly when the client holds a packet at that offset (any other offset, or a second
 * release, changes nothing); the send of each reference completes once, when released or
 * failed at close; the segment is unmapped and every fallback buffer back once the last slot
 * is. Seeds: {@code ShmSegmentFuzzTestInputs/releases/}.
 */
class ShmSegmentFuzzTest {
  private static final BufferPool POOL = new BufferPool(SlabAllocator.DIRECT, 1 << 16, 16 << 20);
  private static Path dir;

  @BeforeAll
  static void dir() throws IOException {
    dir = Files.createTempDirectory(Path.of(Files.isDirectory(Path.of("/dev/shm")) ? "/dev/shm" : "/tmp"),
        "hrdma-shm-fuzz");
  }

  @AfterAll
  static void cleanUp() throws IOException {
    assertEquals(0, POOL.buffersOutstanding());
    POOL.close();
    Files.deleteIfExists(dir.resolve("segment"));
    Files.deleteIfExists(dir);
  }


  @FuzzTest(maxDuration = "30s")
  void releases(FuzzedDataProvider data) throws Exception {
    int slotBytes = 4096 * data.consumeInt(1, 4);
    int slots = data.consumeInt(1, 8);
    long mappedBefore = NativeShm.mappedBytes();
    Path path = dir.resolve("segment");
    Files.deleteIfExists(path);
    NativeShm.Segment mem = NativeShm.create(path, (long) slotBytes * slots);
    AtomicBoolean unmapped = new AtomicBoolean();
    ShmSegment seg = new ShmSegment(mem, POOL, slotBytes, new AtomicLong(), () -> unmapped.set(true), Runnable::run);
    seg.clientMapped();
    List<Long> refs = new ArrayList<>();
    // a packet sent by value (no slot) is raw bytes of zeros here: not a message
    RecordingWire ep = new RecordingWire(POOL, m -> {
      if (m.kind() == MessageKind.DATA_REF) {
        refs.add(m.shmRef().getOffset());
      }
    }, e -> { });
    Map<Long, CompletableFuture<Void>> held = new LinkedHashMap<>();
    List<CompletableFuture<Void>> sends = new ArrayList<>();
    boolean closed = false;
    int steps = data.consumeInt(0, 64);
    for (int i = 0; i < steps; i++) {
      switch (data.consumeInt(0, 3)) {
        case 0 -> {
          int size = data.consumeInt(MessageCodec.FIXED_BYTES, 2 * slotBytes);
          RegisteredBuffer p = seg.allocate(size);
          p.nio().limit(size);
          // zeros: a packet that goes by value (from the pool, whose memory is reused) must
          // not read as a DATA_REF on the wire
          for (int k = 0; k < size; k++) {
            p.nio().put(k, (byte) 0);
          }
          int before = refs.size();
          CompletableFuture<Void> f = ShmSegment.send(ep, i, p);
          sends.add(f);
          if (refs.size() > before) {
            long offset = refs.get(refs.size() - 1);
            assertTrue(offset >= 0 && offset + size <= (long) slotBytes * slots, "a reference outside the segment");
            assertFalse(held.containsKey(offset), "two packets in one slot");
            held.put(offset, f);
          }
        }
        case 1, 2 -> {
          long offset = data.consumeBoolean() && !held.isEmpty()
              ? new ArrayList<>(held.keySet()).get(data.consumeInt(0, held.size() - 1))
              : data.consumeLong();
          boolean holds = held.containsKey(offset);
          assertEquals(holds, seg.released(offset), "release of offset " + offset);
          if (holds) {
            assertTrue(held.remove(offset).isDone(), "a released packet's send did not complete");
          }
        }
        default -> {
          seg.close();
          closed = true;
          for (CompletableFuture<Void> f : held.values()) {
            assertTrue(f.isCompletedExceptionally(), "a held packet did not fail with the segment");
          }
          held.clear();
        }
      }
      assertTrue(seg.slotsHeld() <= slots);
    }
    if (!closed) {
      seg.close();
    }
    for (CompletableFuture<Void> f : sends) {
      assertTrue(f.isDone(), "a send never completed");
    }
    assertEquals(0, seg.slotsHeld(), "slots still held");
    assertTrue(unmapped.get(), "the segment was not unmapped");
    assertEquals(mappedBefore, NativeShm.mappedBytes(), "mapped bytes");
    assertEquals(0, POOL.buffersOutstanding(), "buffers leaked");
    ep.close();
  }
}
