package org.hdfsrdma.nativelib;

import java.nio.ByteBuffer;

/**
 * CRC32C (ISA-L) in the HDFS layout, for data that never enters Java: one
 * big-endian checksum per {@code bytesPerChecksum} chunk. Java code should
 * use {@link java.util.zip.CRC32C}, which is as fast for data on the heap.
 * Thread-safe.
 */
public final class NativeCrc32c {
  private NativeCrc32c() {}

  /** CRC32C of {@code data} from position to limit; equals java.util.zip.CRC32C. */
  public static int crc32c(ByteBuffer data) {
    check(data);
    return Jni.crc32c0(0, address(data) + data.position(), data.remaining());
  }

  /** Writes the chunk checksums of {@code data} (position..limit) at {@code sums}' position. */
  public static void compute(ByteBuffer data, int bytesPerChecksum, ByteBuffer sums)
      throws NativeException {
    check(data);
    check(sums);
    int st = Jni.crc32cChunksCompute0(address(data) + data.position(), data.remaining(),
        bytesPerChecksum, address(sums) + sums.position(), sums.remaining());
    if (st < 0) {
      throw new NativeException("crc32c compute: " + Jni.statusString0(st), st);
    }
  }

  /**
   * Verifies {@code data} against {@code sums}. Returns -1 when all chunks
   * match, else the offset (from data's position) of the first bad chunk.
   */
  public static long verify(ByteBuffer data, int bytesPerChecksum, ByteBuffer sums)
      throws NativeException {
    check(data);
    check(sums);
    long r = Jni.crc32cChunksVerify0(address(data) + data.position(), data.remaining(),
        bytesPerChecksum, address(sums) + sums.position(), sums.remaining());
    if (r < -1) {
      int st = (int) (r + 1000);
      throw new NativeException("crc32c verify: " + Jni.statusString0(st), st);
    }
    return r;
  }

  private static void check(ByteBuffer b) {
    if (!b.isDirect()) {
      throw new IllegalArgumentException("native checksums need direct buffers");
    }
    HrdmaNative.ensureAvailable();
  }

  private static long address(ByteBuffer b) {
    return DirectAddress.of(b);
  }
}
