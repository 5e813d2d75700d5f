package org.hdfsrdma.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.util.Random;
import org.apache.hadoop.util.DataChecksum;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ChunkSumsTest {
  private static final int BPC = 512;

  /** Data at a non-zero position and its checksums as Hadoop computes them. */
  private static ByteBuffer[] sample(int len, boolean direct, long seed) {
    byte[] bytes = new byte[len + 7];
    new Random(seed).nextBytes(bytes);
    ByteBuffer data = direct ? ByteBuffer.allocateDirect(bytes.length) : ByteBuffer.allocate(bytes.length);
    data.put(bytes).position(7);
    int chunks = (len + BPC - 1) / BPC;
    ByteBuffer sums = ByteBuffer.allocate(3 + 4 * chunks);
    sums.position(3);
    DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, BPC).calculateChunkedSums(data, sums.slice());
    return new ByteBuffer[] {data, sums};
  }

  @ParameterizedTest
  @ValueSource(ints = {0, 1, BPC - 1, BPC, BPC + 1, 1 << 20, (1 << 20) + 3})
  void agreesWithHadoopAndFindsTheBadChunk(int len) {
    for (boolean direct : new boolean[] {false, true}) {
      ByteBuffer[] s = sample(len, direct, len);
      ByteBuffer data = s[0];
      ByteBuffer sums = s[1];
      assertEquals(-1, ChunkSums.firstBadCrc32c(data, sums, BPC));
      assertEquals(7, data.position());
      assertEquals(3, sums.position());
      if (len == 0) {
        continue;
      }
      int at = len - 1; // the last byte: the last, possibly short, chunk
      data.put(7 + at, (byte) (data.get(7 + at) ^ 0x10));
      assertEquals(at / BPC, ChunkSums.firstBadCrc32c(data, sums, BPC));
      int stored = sums.getInt(3 + 4 * (at / BPC));
      assertNotEquals(stored, ChunkSums.crc32cOfChunk(data, at / BPC, BPC));
      if (len > BPC) {
        data.put(7 + BPC / 2, (byte) (data.get(7 + BPC / 2) + 1)); // an earlier chunk is reported first
        assertEquals(0, ChunkSums.firstBadCrc32c(data, sums, BPC));
      }
    }
  }

  @org.junit.jupiter.api.Test
  void tooFewChecksumsIsAnError() {
    ByteBuffer[] s = sample(3 * BPC, true, 1);
    ByteBuffer shortSums = s[1].duplicate();
    shortSums.limit(shortSums.limit() - 1);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ChunkSums.firstBadCrc32c(s[0], shortSums, BPC));
    assertEquals("3 chunks of 512 bytes need 12 checksum bytes; 11 given", e.getMessage());
  }
}
