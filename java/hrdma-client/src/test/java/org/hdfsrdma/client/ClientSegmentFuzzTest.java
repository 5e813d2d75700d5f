package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import java.io.IOException;
import java.net.ProtocolException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.hdfsrdma.nativelib.NativeShm;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Coverage-guided fuzzing of the client's side of reads by reference ({@link ClientSegment}):
 * a DATA_REF's offset and length are the DataNode's bytes. Properties: a reference is a view
 * exactly when it lies whole inside the segment (at least a message header long) and the
 * connection is open, else a {@link ProtocolException}; a view is the bytes at that offset;
 * each view's release tells its offset once; the mapping goes when the connection and every
 * view have let go, and not before. Seeds: {@code ClientSegmentFuzzTestInputs/views/}.
 */
class ClientSegmentFuzzTest {
  private static final int BYTES = 64 << 10;
  private static Path file;
  private static NativeShm.Segment writer;

  @BeforeAll
  static void segment() throws IOException {
    Path dir = Path.of(Files.isDirectory(Path.of("/dev/shm")) ? "/dev/shm" : "/tmp");
    file = Files.createTempFile(dir, "hrdma-client-fuzz", ".seg");
    Files.delete(file);
    writer = NativeShm.create(file, BYTES);
    for (int i = 0; i < BYTES; i++) {
      writer.buffer().put(i, (byte) (i * 31 + (i >> 8)));
    }
  }

  @AfterAll
  static void cleanUp() throws IOException {
    writer.close();
    Files.deleteIfExists(file);
  }

  @FuzzTest(maxDuration = "30s")
  void views(FuzzedDataProvider data) throws Exception {
    long mappedBefore = NativeShm.mappedBytes();
    ClientSegment seg = new ClientSegment(NativeShm.open(file, BYTES));
    List<RegisteredBuffer> views = new ArrayList<>();
    List<Long> told = new ArrayList<>();
    List<Long> expectTold = new ArrayList<>();
    boolean closed = false;
    int steps = data.consumeInt(0, 32);
    for (int i = 0; i < steps; i++) {
      switch (data.consumeInt(0, 3)) {
        case 0, 1 -> {
          long offset = data.consumeBoolean() ? data.consumeLong(0, BYTES) : data.consumeLong();
          int length = data.consumeBoolean() ? data.consumeInt(0, BYTES) : data.consumeInt(); // a uint32 on the wire
          boolean inside = offset >= 0 && length >= MessageCodec.FIXED_BYTES && offset + length <= BYTES;
          RegisteredBuffer v;
          try {
            v = seg.view(offset, length, told::add);
          } catch (ProtocolException e) {
            assertTrue(!inside || closed, "refused a reference inside the segment: " + e.getMessage());
            continue;
          }
          if (!inside || closed) {
            v.release();
            fail("took a reference of " + length + " bytes at " + offset + (closed ? " after close" : ""));
          }
          assertEquals(length, v.readableBytes());
          for (int k : new int[] {0, length / 2, length - 1}) {
            assertEquals(writer.buffer().get((int) offset + k), v.nio().get(v.nio().position() + k));
          }
          views.add(v);
          expectTold.add(offset);
        }
        case 2 -> {
          if (!views.isEmpty()) {
            RegisteredBuffer v = views.remove(data.consumeInt(0, views.size() - 1));
            v.release();
          }
        }
        default -> {
          seg.close();
          closed = true;
        }
      }
    }
    seg.close();
    if (!views.isEmpty()) {
      assertTrue(NativeShm.mappedBytes() > mappedBefore, "unmapped while views are held");
    }
    views.forEach(RegisteredBuffer::release);
    assertEquals(expectTold.stream().sorted().toList(), told.stream().sorted().toList(), "releases told");
    assertEquals(mappedBefore, NativeShm.mappedBytes(), "the mapping outlived its last view");
  }
}
