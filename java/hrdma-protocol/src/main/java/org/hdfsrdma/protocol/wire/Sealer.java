package org.hdfsrdma.protocol.wire;

import java.nio.ByteBuffer;
import java.security.GeneralSecurityException;
import java.security.spec.AlgorithmParameterSpec;
import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.nativelib.NativeGcm;

/**
 * One direction of a protected connection: an AEAD cipher (AES-GCM or ChaCha20-Poly1305, the
 * JDK's) whose nonce is the message's number in that direction (4 zero bytes, then a 64-bit
 * counter), so no nonce travels and a message dropped, replayed or reordered fails its tag.
 * Each key seals one direction of one connection only, so a counter nonce is never reused.
 *
 * <p>AES-GCM on direct buffers (every registered buffer) runs in libhrdma ({@link NativeGcm},
 * OpenSSL's libcrypto) where that is loaded: the same bytes and nonces as the JDK's cipher, in
 * place, without the JDK's warm-up (its fast path needs C2-compiled callers) or its heap
 * chunks. Heap buffers, ChaCha20-Poly1305, and processes without libhrdma use the JDK's.
 *
 * <p>Not thread-safe: a {@link ProtectedEndpoint} serializes sealing under its send lock and
 * opens on the transport's I/O thread, one message at a time, in arrival order.
 */
final class Sealer {
  /** Bytes of authentication tag after each sealed message. */
  static final int TAG_BYTES = 16;

  private final Cipher cipher;
  private final SecretKeySpec key;
  private final boolean gcm;
  private final int mode;
  private final byte[] iv = new byte[12];
  private final NativeGcm fast; // null: the JDK's cipher only
  private long counter;

  Sealer(String algorithm, byte[] keyBytes, boolean encrypt) throws GeneralSecurityException {
    this(algorithm, keyBytes, encrypt, 0);
  }

  /** As a connection's, with its message counter at {@code firstCounter} (tests: the end of the counter's range). */
  Sealer(String algorithm, byte[] keyBytes, boolean encrypt, long firstCounter) throws GeneralSecurityException {
    this(algorithm, keyBytes, encrypt, firstCounter, true);
  }

  /** As above; {@code allowNative} false keeps to the JDK's cipher (tests, {@code hrdma bench seal}). */
  Sealer(String algorithm, byte[] keyBytes, boolean encrypt, long firstCounter, boolean allowNative)
      throws GeneralSecurityException {
    this.gcm = algorithm.startsWith("AES/GCM");
    this.cipher = Cipher.getInstance(algorithm);
    this.key = new SecretKeySpec(keyBytes, gcm ? "AES" : "ChaCha20");
    this.mode = encrypt ? Cipher.ENCRYPT_MODE : Cipher.DECRYPT_MODE;
    this.counter = firstCounter;
    NativeGcm f = null;
    if (allowNative && gcm && NativeGcm.available()) {
      try {
        f = new NativeGcm(keyBytes, encrypt);
      } catch (NativeException | RuntimeException e) {
        f = null; // the JDK's cipher serves: same bytes
      }
    }
    this.fast = f;
  }

  /** True when direct buffers are sealed and opened by libhrdma rather than the JDK. */
  boolean isNative() {
    return fast != null;
  }

  private long nextCounter() {
    // the last number is never used and the counter never moves past it: no nonce comes twice,
    // however often a caller tries again after this refusal
    if (counter == -1L) {
      throw new IllegalStateException("2^64 - 1 messages on one connection: its nonces are used up");
    }
    return counter++;
  }

  private AlgorithmParameterSpec spec(long c) {
    for (int i = 0; i < 8; i++) {
      iv[4 + i] = (byte) (c >>> (56 - 8 * i));
    }
    return gcm ? new GCMParameterSpec(TAG_BYTES * 8, iv) : new IvParameterSpec(iv);
  }

  /**
   * Seals {@code src} (position to limit) into {@code dst} from its position: the ciphertext,
   * then the tag ({@code src.remaining() + TAG_BYTES} bytes). {@code dst} may be the same
   * memory as {@code src} (in place). Moves both positions.
   */
  void seal(ByteBuffer src, ByteBuffer dst) throws GeneralSecurityException {
    long c = nextCounter();
    if (fast != null && src.isDirect() && dst.isDirect()) {
      try {
        fast.seal(c, src, dst);
      } catch (NativeException e) {
        throw new GeneralSecurityException("sealing message " + c + ": " + e.getMessage(), e);
      }
      return;
    }
    cipher.init(mode, key, spec(c));
    cipher.doFinal(src, dst);
  }

  /**
   * Opens {@code buf} (position to limit: ciphertext and tag) in place and returns the
   * plaintext's length; the plaintext starts at the position. Moves nothing.
   *
   * @throws AEADBadTagException the message was altered, replayed, reordered or sealed with another key
   */
  int open(ByteBuffer buf) throws GeneralSecurityException {
    if (buf.remaining() < TAG_BYTES) {
      throw new AEADBadTagException("message of " + buf.remaining() + " bytes is shorter than its tag");
    }
    long c = nextCounter();
    if (fast != null && buf.isDirect()) {
      boolean ok;
      try {
        ok = fast.open(c, buf.duplicate());
      } catch (NativeException e) {
        throw new GeneralSecurityException("opening message " + c + ": " + e.getMessage(), e);
      }
      if (!ok) {
        throw new AEADBadTagException("Tag mismatch");
      }
      return buf.remaining() - TAG_BYTES;
    }
    cipher.init(mode, key, spec(c));
    return cipher.doFinal(buf.duplicate(), buf.duplicate());
  }
}
