package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.zip.CRC32C;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.server.datanode.BlockMetadataHeader;
import org.apache.hadoop.util.DataChecksum;
import org.junit.jupiter.api.Test;

/**
 * The short-circuit readers' chunk verification ({@link LocalBlockReader#verifyChunks}): on direct
 * data CRC32C goes to libhrdma, on heap data to the JDK; both accept good chunks and fail
 * a bad one with the same ChecksumException, at the bad chunk's position in the block.
 */
class ChunkVerifyTest {
  private static final int BPC = 512;
  private static final ExtendedBlock BLOCK = new ExtendedBlock("bp", 7, 0, 1);

  @Test
  void nativeAndJdkPathsAgreeOnGoodAndBadChunks() throws Exception {
    assertTrue(LocalBlockReader.NATIVE_CRC, "libhrdma is loaded in the tests: the native path is the one taken");
    int len = 64 * BPC + 100; // the last chunk short
    byte[] data = new byte[len];
    new Random(5).nextBytes(data);
    DataChecksum c = DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, BPC);
    long at = 3L * BPC * 1000; // the window's offset in the block
    ByteBuffer meta = sums(meta(c, data), at, len);
    for (boolean direct : new boolean[] {true, false}) {
      LocalBlockReader.verifyChunks(c, meta, buffer(data, direct), at, "r", BLOCK);
    }
    for (int badByte : new int[] {0, 17 * BPC + 3, len - 1}) {
      byte[] bad = data.clone();
      bad[badByte] ^= 0x40;
      ChecksumException n = assertThrows(ChecksumException.class,
          () -> LocalBlockReader.verifyChunks(c, meta, buffer(bad, true), at, "r", BLOCK));
      ChecksumException j = assertThrows(ChecksumException.class,
          () -> LocalBlockReader.verifyChunks(c, meta, buffer(bad, false), at, "r", BLOCK));
      assertEquals(at + badByte / BPC * BPC, n.getPos(), "byte " + badByte);
      assertEquals(j.getPos(), n.getPos());
      assertEquals(j.getMessage(), n.getMessage());
    }
    // a window from a chunk boundary in the middle of the data: its sums from that chunk on
    ByteBuffer w = buffer(data, true).position(10 * BPC);
    LocalBlockReader.verifyChunks(c, sums(meta(c, data), at + 10L * BPC, len - 10 * BPC), w.slice(),
        at + 10L * BPC, "r", BLOCK);
    // sums that do not match the window's chunks are a caller's bug
    assertThrows(IllegalArgumentException.class, () -> LocalBlockReader.verifyChunks(c, meta, w.slice(),
        at + 10L * BPC, "r", BLOCK));
  }

  /** A .meta file for {@code data} at block offset 3000 chunks in: header, then zeros, then its sums. */
  private static ByteBuffer meta(DataChecksum c, byte[] data) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    BlockMetadataHeader.writeHeader(new DataOutputStream(out), c);
    out.write(new byte[3000 * 4]);
    DataOutputStream d = new DataOutputStream(out);
    for (int off = 0; off < data.length; off += BPC) {
      CRC32C crc = new CRC32C();
      crc.update(data, off, Math.min(BPC, data.length - off));
      d.writeInt((int) crc.getValue());
    }
    byte[] m = out.toByteArray();
    return ByteBuffer.allocateDirect(m.length).put(m).flip();
  }

  /** The sums of the {@code n} bytes from block offset {@code at} in {@code meta}, as the readers read them. */
  private static ByteBuffer sums(ByteBuffer meta, long at, int n) {
    int from = BlockMetadataHeader.getHeaderSize() + (int) (at / BPC * 4);
    return meta.slice(from, (n + BPC - 1) / BPC * 4);
  }

  private static ByteBuffer buffer(byte[] b, boolean direct) {
    return direct ? ByteBuffer.allocateDirect(b.length).put(b).flip() : ByteBuffer.wrap(b);
  }
}
