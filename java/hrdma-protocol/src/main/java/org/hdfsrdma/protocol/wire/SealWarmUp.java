package org.hdfsrdma.protocol.wire;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Brings the JIT's compiled AEAD (the AES-CTR and GHASH intrinsics the JDK uses only from
 * C2-compiled callers) up before the first protected connection needs it. Measured with JFR on
 * a loaded machine: a fresh DataNode opened and sealed its first writes' packets in the JDK's
 * interpreted GHASH (VarHandle long views, 25-100 MB/s) for tens of seconds, which cost a 1 GiB
 * write at replication 3 about 3x the CPU of the same write once warm. The JIT compiles by
 * invocation and loop counts: a protected connection's 1 MiB packets call the cipher too few
 * times to get there soon, so this seals and opens throw-away messages (a random key of its own,
 * never a connection's) of the sizes and buffers the connections use, once per cipher and JVM,
 * on a daemon thread, until it runs at {@link #WARM_MB_PER_CPU_SECOND} MB per CPU-second or has
 * put the byte budget ({@code hrdma.wire.warm-up-mb}) through the cipher.
 *
 * <p>Thread-safe.
 */
final class SealWarmUp {
  private static final Logger LOG = LoggerFactory.getLogger(SealWarmUp.class);
  /** Bytes through the cipher (every seal and open counted) per CPU-second at which it counts as compiled (warm: about 2000, interpreted: under 300). */
  static final double WARM_MB_PER_CPU_SECOND = 1000;
  private static final int LARGE = 1 << 20;
  private static final int SMALL = 16 << 10;
  /** One round: this many large messages, then this many small ones, each sealed in place, opened, sealed across. */
  private static final int LARGE_PER_ROUND = 4;
  private static final int SMALL_PER_ROUND = 64;
  private static final Set<String> STARTED = ConcurrentHashMap.newKeySet();
  private static final AtomicLong SEALED = new AtomicLong();

  private SealWarmUp() {}

  /** Bytes the warm-ups of this JVM have put through the cipher, seals and opens (tests, status). */
  static long bytesSealed() {
    return SEALED.get();
  }

  /**
   * Starts the warm-up of {@code cipher} at {@code keyBits} on a daemon thread unless one was
   * started before in this JVM or {@code maxBytes} is 0; true when it started one.
   */
  static boolean start(String cipher, int keyBits, long maxBytes) {
    if (maxBytes <= 0 || !STARTED.add(cipher + "/" + keyBits)) {
      return false;
    }
    Thread t = new Thread(() -> {
      try {
        long t0 = System.nanoTime();
        Result r = run(cipher, keyBits, maxBytes);
        LOG.info("hrdma wire: {} ({}-bit) warmed up: {} MB through the cipher in {} ms ({} CPU ms), last {} MB/CPU-s", cipher,
            keyBits, r.bytes() / 1_000_000, (System.nanoTime() - t0) / 1_000_000, r.cpuNanos() / 1_000_000,
            Math.round(r.lastMBps()));
      } catch (GeneralSecurityException | RuntimeException e) {
        LOG.warn("hrdma wire: warming up {} failed (connections run cold): {}", cipher, e.toString());
      }
    }, "hrdma-wire-warm-up");
    t.setDaemon(true);
    t.setPriority(Thread.MIN_PRIORITY);
    t.start();
    return true;
  }

  /** What a warm-up did: bytes through the cipher (seals and opens), the CPU it took, its last round's MB/CPU-s. */
  record Result(long bytes, long cpuNanos, double lastMBps) {}

  /** The warm-up itself, on the calling thread: rounds until warm or {@code maxBytes} through the cipher. */
  static Result run(String cipher, int keyBits, long maxBytes) throws GeneralSecurityException {
    byte[] key = new byte[cipher.startsWith("AES") ? keyBits / 8 : 32];
    new SecureRandom().nextBytes(key);
    // one direction each, as a connection has: the counters of the two pairs stay in step
    Sealer sealIn = new Sealer(cipher, key, true);
    Sealer openIn = new Sealer(cipher, key, false);
    ByteBuffer a = ByteBuffer.allocateDirect(LARGE + Sealer.TAG_BYTES);
    ByteBuffer b = ByteBuffer.allocateDirect(LARGE + Sealer.TAG_BYTES);
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    boolean cpu = mx.isCurrentThreadCpuTimeSupported();
    long bytes = 0;
    long cpuTotal = 0;
    double last = 0;
    while (bytes < maxBytes) {
      long c0 = cpu ? mx.getCurrentThreadCpuTime() : System.nanoTime();
      long round = 0;
      for (int i = 0; i < LARGE_PER_ROUND + SMALL_PER_ROUND; i++) {
        int size = i < LARGE_PER_ROUND ? LARGE : SMALL;
        round += pass(sealIn, openIn, a, b, size);
      }
      long c = (cpu ? mx.getCurrentThreadCpuTime() : System.nanoTime()) - c0;
      bytes += round;
      cpuTotal += c;
      SEALED.addAndGet(round);
      last = round / 1e6 / Math.max(c, 1) * 1e9;
      if (last >= WARM_MB_PER_CPU_SECOND) {
        break;
      }
    }
    return new Result(bytes, cpuTotal, last);
  }

  /** Seals a message in place and opens it, then seals it into the other buffer and opens that: the paths a connection takes. */
  private static long pass(Sealer seal, Sealer open, ByteBuffer a, ByteBuffer b, int size)
      throws GeneralSecurityException {
    a.clear().limit(size);
    ByteBuffer dst = a.duplicate();
    dst.clear();
    seal.seal(a.duplicate(), dst);
    a.clear().limit(size + Sealer.TAG_BYTES);
    if (open.open(a) != size) {
      throw new IllegalStateException("opened a different length");
    }
    a.clear().limit(size);
    b.clear();
    seal.seal(a.duplicate(), b);
    b.flip();
    if (open.open(b) != size) {
      throw new IllegalStateException("opened a different length");
    }
    return 4L * size;
  }
}
