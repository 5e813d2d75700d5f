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
      java.util.zip.CRC32C computed = new java.util.zip.CRC32C();
      assertEquals(at / BPC, ChunkSums.firstBad(computed, data, sums, BPC));
      assertNotEquals(stored, (int) computed.getValue(), "the sum is left at the bad chunk's value");
      ByteBuffer chunk = data.duplicate();
      chunk.position(7 + at / BPC * BPC).limit(7 + len);
      java.util.zip.CRC32C recomputed = new java.util.zip.CRC32C();
      recomputed.update(chunk);
      assertEquals(recomputed.getValue(), computed.getValue());
      if (len > BPC) {
        data.put(7 + BPC / 2, (byte) (data.get(7 + BPC / 2) + 1)); // an earlier chunk is reported first
        assertEquals(0, ChunkSums.firstBadCrc32c(data, sums, BPC));
      }
    }
  }

  @org.junit.jupiter.api.Test
  void verifyFailsAsHadoopsVerifierAtTheBadChunksPosition() throws Exception {
    ByteBuffer[] s = sample(3 * BPC, true, 2);
    ChunkSums.verifyCrc32c(s[0], s[1], BPC, "blk_1", 4096); // intact: no exception
    s[0].put(7 + BPC + 5, (byte) (s[0].get(7 + BPC + 5) ^ 1));
    org.apache.hadoop.fs.ChecksumException e = assertThrows(org.apache.hadoop.fs.ChecksumException.class,
        () -> ChunkSums.verifyCrc32c(s[0], s[1], BPC, "blk_1", 4096));
    assertEquals(4096 + BPC, e.getPos());
    org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().startsWith("Checksum CRC32C not matched for file blk_1 at position "
        + (4096 + BPC) + ": expected="), e.getMessage());
  }

  /** Older CRC32 replicas go to Hadoop's verifier; direct data with heap checksums too (libhadoop wants both direct). */
  @org.junit.jupiter.api.Test
  void verifyTakesOtherTypesToHadoopsVerifier() throws Exception {
    byte[] bytes = new byte[3 * BPC + 100];
    new Random(9).nextBytes(bytes);
    ByteBuffer data = ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
    ByteBuffer sums = ByteBuffer.allocate(4 * 4);
    DataChecksum crc32 = DataChecksum.newDataChecksum(DataChecksum.Type.CRC32, BPC);
    crc32.calculateChunkedSums(data, sums);
    ChunkSums.verify(crc32, data, sums, "blk_2", 0); // intact: no exception
    assertEquals(0, data.position());
    assertEquals(0, sums.position());
    data.put(2 * BPC + 1, (byte) (data.get(2 * BPC + 1) ^ 4));
    org.apache.hadoop.fs.ChecksumException e = assertThrows(org.apache.hadoop.fs.ChecksumException.class,
        () -> ChunkSums.verify(crc32, data, sums, "blk_2", 1024));
    assertEquals(1024 + 2 * BPC, e.getPos());
    org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("CRC32"), e.getMessage());
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
