package org.hdfsrdma.nativelib;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The JNI side of hrdma_fd_pread_verify ({@link NativeFiles.Fd#readVerified}): into an array (pinned
 * for the call) at an offset and into a direct buffer, a bad chunk's offset, no sums, a short file,
 * the bounds checked before anything is pinned.
 */
class NativeReadVerifiedTest {
  private static final int BPC = 512;
  private static final int SIZE = 64 * BPC + 100; // the last chunk short

  @TempDir
  Path dir;
  private byte[] data;
  private ByteBuffer sums;
  private Path file;

  @BeforeEach
  void replica() throws Exception {
    assumeTrue(HrdmaNative.isAvailable(), "libhrdma");
    data = new byte[SIZE];
    new Random(3).nextBytes(data);
    file = dir.resolve("blk");
    Files.write(file, data);
    int chunks = (SIZE + BPC - 1) / BPC;
    sums = ByteBuffer.allocateDirect(chunks * 4);
    CRC32C crc = new CRC32C();
    for (int at = 0; at < SIZE; at += BPC) {
      crc.reset();
      crc.update(data, at, Math.min(BPC, SIZE - at));
      sums.putInt((int) crc.getValue());
    }
    sums.flip();
  }

  private NativeFiles.Fd open() throws Exception {
    return NativeFiles.adopt(NativeFiles.openForPassing(file.toString()));
  }

  private ByteBuffer sumsFrom(int chunk, int chunks) {
    return sums.slice(chunk * 4, chunks * 4);
  }

  @Test
  void intoAnArrayAtAnOffsetAndIntoADirectBuffer() throws Exception {
    try (NativeFiles.Fd fd = open()) {
      byte[] b = new byte[SIZE + 10];
      assertEquals(SIZE, fd.readVerified(0, b, 7, SIZE, BPC, sumsFrom(0, 65)));
      assertArrayEquals(data, Arrays.copyOfRange(b, 7, 7 + SIZE));
      assertEquals(0, b[0]);
      ByteBuffer d = ByteBuffer.allocateDirect(8 * BPC).position(BPC).limit(5 * BPC);
      assertEquals(4 * BPC, fd.readVerified(3 * BPC, d, BPC, sumsFrom(3, 4)));
      assertEquals(BPC, d.position(), "the buffer's position is not moved");
      byte[] got = new byte[4 * BPC];
      d.get(got);
      assertArrayEquals(Arrays.copyOfRange(data, 3 * BPC, 7 * BPC), got);
    }
  }

  @Test
  void aBadChunkIsItsOffsetInTheRange() throws Exception {
    try (NativeFiles.Fd fd = open()) {
      ByteBuffer s = ByteBuffer.allocateDirect(8 * 4).put(sumsFrom(2, 8)).flip();
      s.put(5 * 4 + 2, (byte) (s.get(5 * 4 + 2) ^ 1));
      assertEquals(-2 - 5 * BPC, fd.readVerified(2 * BPC, new byte[8 * BPC], 0, 8 * BPC, BPC, s));
      assertEquals(8 * BPC, fd.readVerified(2 * BPC, new byte[8 * BPC], 0, 8 * BPC, BPC, null), "no sums: read");
    }
  }

  @Test
  void aFileShorterThanTheRangeIsAShortCount() throws Exception {
    try (NativeFiles.Fd fd = open()) {
      try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
        f.setLength(10 * BPC + 200);
      }
      byte[] b = new byte[16 * BPC];
      assertEquals(10 * BPC + 200, fd.readVerified(0, b, 0, 16 * BPC, BPC, sumsFrom(0, 16)));
      assertArrayEquals(Arrays.copyOf(data, 10 * BPC + 200), Arrays.copyOf(b, 10 * BPC + 200));
    }
  }

  @Test
  void boundsAreCheckedBeforeAnythingIsPinned() throws Exception {
    try (NativeFiles.Fd fd = open()) {
      byte[] b = new byte[4 * BPC];
      assertThrows(IndexOutOfBoundsException.class, () -> fd.readVerified(0, b, 1, 4 * BPC, BPC, null));
      assertThrows(IndexOutOfBoundsException.class, () -> fd.readVerified(0, b, -1, BPC, BPC, null));
      assertThrows(IllegalArgumentException.class,
          () -> fd.readVerified(0, new byte[NativeFiles.Fd.READ_VERIFIED_MAX + 1], 0,
              NativeFiles.Fd.READ_VERIFIED_MAX + 1, BPC, null));
      assertThrows(IllegalArgumentException.class, () -> fd.readVerified(0, b, 0, BPC, BPC, ByteBuffer.allocate(4)));
      assertThrows(NativeException.class, () -> fd.readVerified(0, b, 0, 4 * BPC, BPC, sumsFrom(0, 2)),
          "sums short of the chunks read");
    }
    NativeFiles.Fd closed = open();
    closed.close();
    assertThrows(NativeException.class, () -> closed.readVerified(0, new byte[BPC], 0, BPC, BPC, null));
  }
}
