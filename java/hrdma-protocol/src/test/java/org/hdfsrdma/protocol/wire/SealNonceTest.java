package org.hdfsrdma.protocol.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;

/** A connection's nonces: its message numbers 0, 1, 2... in order, never one twice; and the cipher's warm-up. */
class SealNonceTest {
  private static final String GCM = "AES/GCM/NoPadding";

  private static byte[] seal(Sealer s, byte[] plain) throws Exception {
    ByteBuffer src = ByteBuffer.allocateDirect(plain.length);
    src.put(plain).flip();
    ByteBuffer dst = ByteBuffer.allocateDirect(plain.length + Sealer.TAG_BYTES);
    s.seal(src, dst);
    dst.flip();
    byte[] out = new byte[dst.remaining()];
    dst.get(out);
    return out;
  }

  @Test
  void messageNumberIsTheNonceAndNoneComesTwice() throws Exception {
    byte[] key = new byte[32];
    new Random(7).nextBytes(key);
    Sealer s = new Sealer(GCM, key, true);
    byte[] plain = "the same bytes every time".getBytes();
    Set<String> seen = new HashSet<>();
    for (int n = 0; n < 500; n++) {
      byte[] sealed = seal(s, plain);
      assertTrue(seen.add(java.util.Arrays.toString(sealed)), "message " + n + " sealed as an earlier one");
      // the JDK's own cipher opens it with nonce = 4 zero bytes, then n big-endian, and with no other
      byte[] iv = new byte[12];
      ByteBuffer.wrap(iv, 4, 8).putLong(n);
      Cipher c = Cipher.getInstance(GCM);
      c.init(Cipher.DECRYPT_MODE, new SecretKeySpec(key, "AES"), new GCMParameterSpec(128, iv));
      assertArrayEquals(plain, c.doFinal(sealed), "message " + n);
      if (n > 0) {
        byte[] prev = new byte[12];
        ByteBuffer.wrap(prev, 4, 8).putLong(n - 1);
        Cipher d = Cipher.getInstance(GCM);
        d.init(Cipher.DECRYPT_MODE, new SecretKeySpec(key, "AES"), new GCMParameterSpec(128, prev));
        assertThrows(javax.crypto.AEADBadTagException.class, () -> d.doFinal(sealed), "not the previous nonce");
      }
    }
  }

  @Test
  void theCounterStopsAtItsEndAndStaysThere() throws Exception {
    byte[] key = new byte[16];
    Sealer s = new Sealer(GCM, key, true, -3L);
    Sealer o = new Sealer(GCM, key, false, -3L);
    for (int i = 0; i < 2; i++) { // numbers 2^64-3 and 2^64-2
      byte[] sealed = seal(s, new byte[] {(byte) i});
      ByteBuffer b = ByteBuffer.allocateDirect(sealed.length);
      b.put(sealed).flip();
      assertEquals(1, o.open(b));
      assertEquals((byte) i, b.get(0));
    }
    for (int i = 0; i < 3; i++) { // the last number is not used, and nothing wraps round to 0 after a refusal
      assertThrows(IllegalStateException.class, () -> seal(s, new byte[1]));
    }
  }

  @Test
  void warmUpRunsOncePerCipherOnItsOwnKey() throws Exception {
    long before = SealWarmUp.bytesSealed();
    SealWarmUp.Result r = SealWarmUp.run(GCM, 128, 1 << 20);
    assertTrue(r.bytes() >= 1 << 20, "ran at least its budget's first round: " + r);
    assertTrue(r.cpuNanos() > 0);
    assertTrue(SealWarmUp.bytesSealed() - before >= r.bytes());
    assertFalse(SealWarmUp.start(GCM, 128, 0), "a budget of 0 is no warm-up");
    assertTrue(SealWarmUp.start("ChaCha20-Poly1305", 256, 1 << 20));
    assertFalse(SealWarmUp.start("ChaCha20-Poly1305", 256, 1 << 20), "once per cipher and JVM");
  }

  @Test
  void onlyProtectionThatSealsWarmsUp() {
    Configuration plain = new Configuration(false);
    assertFalse(WireProtection.forClient(plain, false, 0).maySeal());
    assertFalse(WireProtection.forClient(plain, false, 0).warmUp(), "an unprotected client warms nothing");
    Configuration enc = new Configuration(false);
    enc.setInt(WireProtection.WARM_UP_MB_KEY, 0);
    assertTrue(WireProtection.forClient(enc, true, 0).maySeal());
    assertFalse(WireProtection.forClient(enc, true, 0).warmUp(), "hrdma.wire.warm-up-mb=0 turns it off");
    Configuration auth = new Configuration(false);
    auth.set("hadoop.security.authentication", "kerberos");
    auth.set("dfs.data.transfer.protection", "authentication");
    assertEquals(WireProtection.Mode.SASL, WireProtection.forClient(auth, false, 5000).mode());
    assertFalse(WireProtection.forClient(auth, false, 5000).maySeal(), "authentication alone is not sealed");
    auth.set("dfs.data.transfer.protection", "authentication,privacy");
    assertTrue(WireProtection.forClient(auth, false, 5000).maySeal());
  }
}
