package org.hdfsrdma.protocol.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Random;
import javax.crypto.AEADBadTagException;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeGcm;
import org.junit.jupiter.api.Test;

/**
 * AES-GCM in libhrdma (OpenSSL) against the JDK's: the same bytes both ways, in place and
 * across buffers, for the message sizes connections send; refusals as the JDK's.
 */
class SealNativeTest {
  private static final String GCM = "AES/GCM/NoPadding";

  @Test
  void libhrdmaSealsWhereItIsBuiltWithLibcrypto() throws Exception {
    // this build links libcrypto (native/CMakeLists.txt finds it here); a loaded library without it is a build fault
    assertTrue(HrdmaNative.isAvailable(), "libhrdma not loaded: " + HrdmaNative.unavailabilityCause());
    assertTrue(NativeGcm.available(), "libhrdma was built without libcrypto");
    assertTrue(new Sealer(GCM, new byte[32], true).isNative());
    assertFalse(new Sealer(GCM, new byte[32], true, 0, false).isNative());
    assertFalse(new Sealer("ChaCha20-Poly1305", new byte[32], true).isNative());
  }

  @Test
  void nativeAndJdkAgreeEveryWay() throws Exception {
    Random rnd = new Random(11);
    for (int bits : new int[] {128, 256}) {
      byte[] key = new byte[bits / 8];
      rnd.nextBytes(key);
      Sealer nSeal = new Sealer(GCM, key, true, 0, true);
      Sealer jSeal = new Sealer(GCM, key, true, 0, false);
      Sealer nOpen = new Sealer(GCM, key, false, 0, true);
      Sealer jOpen = new Sealer(GCM, key, false, 0, false);
      assertTrue(nSeal.isNative() && nOpen.isNative());
      int n = 0;
      for (int size : new int[] {0, 1, 15, 16, 17, 1000, 65_536 + 33, (1 << 20) + 8_192 + 77}) {
        byte[] plain = new byte[size];
        rnd.nextBytes(plain);
        // in place by libhrdma, across buffers by the JDK: the same ciphertext and tag
        ByteBuffer a = ByteBuffer.allocateDirect(size + Sealer.TAG_BYTES);
        a.put(plain).flip();
        ByteBuffer dst = a.duplicate();
        dst.clear();
        nSeal.seal(a.duplicate(), dst);
        assertEquals(size + Sealer.TAG_BYTES, dst.position());
        ByteBuffer src = ByteBuffer.allocateDirect(size);
        src.put(plain).flip();
        ByteBuffer b = ByteBuffer.allocateDirect(size + Sealer.TAG_BYTES);
        jSeal.seal(src, b);
        b.flip();
        a.clear();
        assertEquals(b, a, "size " + size);
        if (size > 0) {
          assertNotEquals(ByteBuffer.wrap(plain), a.duplicate().limit(size), "size " + size + " was not encrypted");
        }
        // each opens the other's, in place
        assertEquals(size, jOpen.open(a));
        assertEquals(ByteBuffer.wrap(plain), a.duplicate().limit(size));
        assertEquals(size, nOpen.open(b));
        assertEquals(ByteBuffer.wrap(plain), b.duplicate().limit(size));
        n++;
      }
      // across buffers by libhrdma too (a forwarded packet someone else holds)
      byte[] plain = new byte[4097];
      rnd.nextBytes(plain);
      ByteBuffer src = ByteBuffer.allocateDirect(plain.length);
      src.put(plain).flip();
      ByteBuffer out = ByteBuffer.allocateDirect(plain.length + Sealer.TAG_BYTES);
      nSeal.seal(src.duplicate(), out);
      out.flip();
      assertEquals(ByteBuffer.wrap(plain), src, "the source is left as it was");
      jSeal.seal(ByteBuffer.allocateDirect(0), ByteBuffer.allocateDirect(Sealer.TAG_BYTES)); // keep the counters in step
      assertEquals(plain.length, jOpen.open(out));
      assertEquals(ByteBuffer.wrap(plain), out.duplicate().limit(plain.length));
      assertTrue(n > 0);
    }
  }

  @Test
  void nativeRefusesWhatTheJdkRefuses() throws Exception {
    byte[] key = new byte[32];
    new Random(3).nextBytes(key);
    byte[] plain = new byte[70_000];
    new Random(4).nextBytes(plain);
    // altered data, altered tag, the wrong message number (replayed or reordered), another key
    for (int fault = 0; fault < 4; fault++) {
      Sealer s = new Sealer(GCM, key, true, 0, false);
      byte[] otherKey = key.clone();
      otherKey[0] ^= 1;
      Sealer o = new Sealer(GCM, fault == 3 ? otherKey : key, false, fault == 2 ? 1 : 0, true);
      assertTrue(o.isNative());
      ByteBuffer src = ByteBuffer.allocateDirect(plain.length);
      src.put(plain).flip();
      ByteBuffer m = ByteBuffer.allocateDirect(plain.length + Sealer.TAG_BYTES);
      s.seal(src, m);
      m.flip();
      if (fault == 0) {
        m.put(1234, (byte) (m.get(1234) ^ 0x10));
      } else if (fault == 1) {
        m.put(m.limit() - 1, (byte) (m.get(m.limit() - 1) ^ 0x01));
      }
      final ByteBuffer msg = m;
      assertThrows(AEADBadTagException.class, () -> o.open(msg), "fault " + fault);
    }
    Sealer o = new Sealer(GCM, key, false, 0, true);
    assertThrows(AEADBadTagException.class, () -> o.open(ByteBuffer.allocateDirect(Sealer.TAG_BYTES - 1)));
  }
}
