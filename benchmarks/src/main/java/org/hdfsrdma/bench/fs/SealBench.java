package org.hdfsrdma.bench.fs;

import java.util.List;
import org.hdfsrdma.protocol.wire.SealProbe;

/**
 * {@code hrdma bench seal}: the data transfer protection layer's AEAD on this JVM and CPU,
 * in place in direct buffers as the protected connections use it (docs/security.md), one
 * thread, so it can be set beside bench fs --encrypt figures.
 */
public final class SealBench {
  private SealBench() {}

  public static void main(String[] args) {
    if (args.length > 0) {
      System.out.println("usage: hrdma bench seal   (no options: AES-GCM 128/256 and ChaCha20-Poly1305, 1 MiB and 64 KiB messages)");
      System.exit(List.of("-h", "--help", "help").contains(args[0]) ? 0 : 2);
    }
    System.out.printf("%-20s %5s %9s %14s %14s %14s  %s%n", "cipher", "bits", "message", "seal MB/cpu-s",
        "open MB/cpu-s", "heap B/message", "implementation");
    for (int size : new int[] {1 << 20, 64 << 10}) {
      // AES-GCM in libhrdma where it has it (what connections use), and the JDK's beside it
      for (Object[] c : new Object[][] {{"AES/GCM/NoPadding", 128, true}, {"AES/GCM/NoPadding", 256, true},
          {"AES/GCM/NoPadding", 256, false}, {"ChaCha20-Poly1305", 256, false}}) {
        if ((Boolean) c[2] && !SealProbe.nativeAvailable()) {
          continue;
        }
        int n = (int) Math.max(64, (256L << 20) / size);
        SealProbe.Result r;
        try {
          r = SealProbe.run((String) c[0], (Integer) c[1], size, n, (Boolean) c[2]);
        } catch (java.security.GeneralSecurityException e) {
          System.out.println(c[0] + " " + c[1] + ": not available in this JVM: " + e);
          continue;
        }
        System.out.printf("%-20s %5d %9d %14.0f %14.0f %14d  %s%n", r.cipher(), r.keyBits(), r.messageBytes(),
            r.sealMBps(), r.openMBps(), r.heapBytesPerMessage(), r.implementation());
      }
    }
  }
}
