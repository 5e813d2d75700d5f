package org.hdfsrdma.protocol;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;
import java.util.zip.Checksum;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.util.DataChecksum;

/**
 * CRC32C of HDFS's chunked layout (one checksum per {@code bytesPerChecksum}
 * bytes, the last chunk possibly shorter; checksums as big-endian ints),
 * computed with the JDK's intrinsic straight on the buffer, heap or direct.
 * Hadoop's own verifier copies each chunk of a direct buffer into an array
 * first when libhadoop is not loaded; this does not.
 */
public final class ChunkSums {
  private ChunkSums() {}

  /**
   * Checks the chunks of {@code data} (position to limit) against the
   * checksums in {@code sums} (from its position). Neither buffer's position
   * moves.
   *
   * @return the index of the first chunk whose CRC32C differs, or -1 when all match
   * @throws IllegalArgumentException {@code sums} holds fewer checksums than {@code data} has chunks
   */
  public static int firstBadCrc32c(ByteBuffer data, ByteBuffer sums, int bytesPerChecksum) {
    return firstBad(new CRC32C(), data, sums, bytesPerChecksum);
  }

  /**
   * {@link #firstBadCrc32c} for any 4-byte checksum of the JDK's
   * ({@code java.util.zip.CRC32} for HDFS's older type); {@code sum} is reset per chunk.
   * When a chunk differs, {@code sum} is left holding the value computed for it.
   */
  public static int firstBad(Checksum sum, ByteBuffer data, ByteBuffer sums, int bytesPerChecksum) {
    if (bytesPerChecksum <= 0) {
      throw new IllegalArgumentException("bytesPerChecksum " + bytesPerChecksum + " is not positive");
    }
    int n = data.remaining();
    int chunks = (n + bytesPerChecksum - 1) / bytesPerChecksum;
    if (sums.remaining() < 4L * chunks) {
      throw new IllegalArgumentException(chunks + " chunks of " + bytesPerChecksum + " bytes need " + 4L * chunks
          + " checksum bytes; " + sums.remaining() + " given");
    }
    ByteBuffer d = data.duplicate();
    int start = data.position();
    int s = sums.position();
    for (int c = 0; c < chunks; c++) {
      int off = start + c * bytesPerChecksum;
      d.limit(Math.min(off + bytesPerChecksum, start + n)).position(off);
      sum.reset();
      sum.update(d);
      if ((int) sum.getValue() != sums.getInt(s + 4 * c)) {
        return c;
      }
    }
    return -1;
  }

  /**
   * {@link #firstBadCrc32c}, failing as Hadoop's verifier does: a
   * ChecksumException naming {@code name} and the bad chunk's position
   * ({@code basePos} is the position of {@code data}'s first byte).
   */
  public static void verifyCrc32c(ByteBuffer data, ByteBuffer sums, int bytesPerChecksum, String name, long basePos)
      throws ChecksumException {
    CRC32C sum = new CRC32C();
    int bad = firstBad(sum, data, sums, bytesPerChecksum);
    if (bad >= 0) {
      long at = basePos + (long) bad * bytesPerChecksum;
      throw new ChecksumException(String.format("Checksum CRC32C not matched for file %s at position %d: "
          + "expected=%X but computed=%X", name, at, sums.getInt(sums.position() + 4 * bad),
          (int) sum.getValue()), at);
    }
  }

  /**
   * Verifies {@code data} against {@code sums} with {@code checksum}'s type and chunk size:
   * CRC32C with {@link #verifyCrc32c}, other types with Hadoop's verifier (given direct data,
   * that goes to libhadoop where it is loaded, which wants direct checksums too: heap ones are
   * copied). {@code checksum} is used, not only read: one per thread.
   */
  public static void verify(DataChecksum checksum, ByteBuffer data, ByteBuffer sums, String name, long basePos)
      throws ChecksumException {
    if (checksum.getChecksumType() == DataChecksum.Type.CRC32C) {
      verifyCrc32c(data, sums, checksum.getBytesPerChecksum(), name, basePos);
      return;
    }
    ByteBuffer s = sums;
    if (data.isDirect() && !sums.isDirect()) {
      s = ByteBuffer.allocateDirect(sums.remaining()).put(sums.duplicate()).flip();
    }
    checksum.verifyChunkedSums(data, s, name, basePos);
  }
}
