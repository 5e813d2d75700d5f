package org.hdfsrdma.protocol.wire;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;

/**
 * Measures the seal layer's cipher alone on this JVM and CPU (for {@code hrdma bench seal}):
 * one thread seals then opens messages of a given size in place in one direct buffer, as
 * {@link ProtectedEndpoint} does, and reports MB per CPU-second of that thread each way (so
 * that other load on the machine does not count) and the heap bytes the provider allocates
 * per message (a copy of the message would show as its size). The JIT compiles the cipher's
 * intrinsics only after a while: the first rounds are warm-up, the last is reported. Stateless.
 */
public final class SealProbe {
  private SealProbe() {}

  /** One measurement. */
  public record Result(String cipher, int keyBits, int messageBytes, double sealMBps, double openMBps,
      long heapBytesPerMessage, String implementation) {}

  /** True when AES-GCM on direct buffers runs in libhrdma (OpenSSL) in this process. */
  public static boolean nativeAvailable() {
    return org.hdfsrdma.nativelib.NativeGcm.available();
  }

  /** Runs {@code messages} messages of {@code messageBytes} after three rounds as many for warm-up. */
  public static Result run(String cipher, int keyBits, int messageBytes, int messages)
      throws GeneralSecurityException {
    return run(cipher, keyBits, messageBytes, messages, true);
  }

  /** As above; {@code allowNative} false measures the JDK's cipher even where libhrdma has AES-GCM. */
  public static Result run(String cipher, int keyBits, int messageBytes, int messages, boolean allowNative)
      throws GeneralSecurityException {
    byte[] key = new byte[keyBits / 8];
    new SecureRandom().nextBytes(key);
    Sealer seal = new Sealer(cipher, key, true, 0, allowNative);
    Sealer open = new Sealer(cipher, key, false, 0, allowNative);
    ByteBuffer buf = ByteBuffer.allocateDirect(messageBytes + Sealer.TAG_BYTES);
    com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long tid = Thread.currentThread().getId();
    long sealNs = 0;
    long openNs = 0;
    long heap = 0;
    for (int round = 0; round < 4; round++) {
      sealNs = 0;
      openNs = 0;
      long h0 = mx.getThreadAllocatedBytes(tid);
      for (int i = 0; i < messages; i++) {
        buf.clear().limit(messageBytes);
        ByteBuffer dst = buf.duplicate();
        dst.clear();
        long t0 = mx.getCurrentThreadCpuTime();
        seal.seal(buf.duplicate(), dst);
        long t1 = mx.getCurrentThreadCpuTime();
        buf.clear().limit(messageBytes + Sealer.TAG_BYTES);
        open.open(buf);
        long t2 = mx.getCurrentThreadCpuTime();
        sealNs += t1 - t0;
        openNs += t2 - t1;
      }
      heap = (mx.getThreadAllocatedBytes(tid) - h0) / (2L * messages);
    }
    double mb = (double) messageBytes * messages / 1e6;
    return new Result(cipher, keyBits, messageBytes, mb / (sealNs / 1e9), mb / (openNs / 1e9), heap,
        seal.isNative() ? "libcrypto" : "jdk");
  }
}
