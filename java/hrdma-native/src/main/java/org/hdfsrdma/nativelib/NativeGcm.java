package org.hdfsrdma.nativelib;

import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;

/**
 * AES-GCM in libhrdma (OpenSSL's libcrypto): seals and opens messages in direct buffers in
 * place, no copy and no heap, the same bytes as the JDK's {@code AES/GCM/NoPadding} with a
 * 12-byte nonce (4 zero bytes, then a 64-bit counter) and a 16-byte tag. Why: the JDK's cipher
 * runs fast only once C2 has compiled its callers, which a loaded DataNode reached late (see
 * docs/security.md). One object is one direction of one connection; not thread-safe. The
 * native state is freed when the object becomes unreachable.
 */
public final class NativeGcm {
  public static final int TAG_BYTES = 16;
  private static final Cleaner CLEANER = Cleaner.create();
  private static final boolean AVAILABLE = probe();

  private final long handle;
  private final boolean encrypt;

  /** True when libhrdma is loaded and was built with libcrypto. */
  public static boolean available() {
    return AVAILABLE;
  }

  private static boolean probe() {
    try {
      return HrdmaNative.isAvailable() && Jni.gcmAvailable0();
    } catch (LinkageError e) {
      return false;
    }
  }

  /** A cipher for one direction: {@code key} of 16 or 32 bytes (AES-128, AES-256). */
  public NativeGcm(byte[] key, boolean encrypt) throws NativeException {
    if (!AVAILABLE) {
      throw new IllegalStateException("no native AES-GCM in this process");
    }
    long h = Jni.gcmCreate0(key, encrypt);
    this.handle = h;
    this.encrypt = encrypt;
    CLEANER.register(this, () -> Jni.gcmDestroy0(h));
  }

  /**
   * Seals {@code src} (position to limit) under nonce {@code counter} into {@code dst} at its
   * position: ciphertext then tag. {@code dst} is the same memory as {@code src} (in place) or
   * does not overlap it. Moves both positions, as {@code Cipher.doFinal(ByteBuffer, ByteBuffer)}.
   */
  public void seal(long counter, ByteBuffer src, ByteBuffer dst) throws NativeException {
    int len = src.remaining();
    if (!encrypt || !src.isDirect() || !dst.isDirect() || dst.remaining() < len + TAG_BYTES) {
      throw new IllegalArgumentException("seal needs an encrypting cipher, direct buffers and "
          + (len + TAG_BYTES) + " bytes of room");
    }
    int st = Jni.gcmSeal0(handle, counter, DirectAddress.of(src) + src.position(), len,
        DirectAddress.of(dst) + dst.position());
    java.lang.ref.Reference.reachabilityFence(this);
    if (st != 0) {
      throw new NativeException("gcm seal: " + Jni.statusString0(st), st);
    }
    src.position(src.limit());
    dst.position(dst.position() + len + TAG_BYTES);
  }

  /**
   * Opens {@code buf} (position to limit: ciphertext and tag) under nonce {@code counter} in
   * place; true and the plaintext at the position (remaining - 16 bytes) when the tag matches,
   * false when it does not (the bytes are then garbage). Moves nothing.
   */
  public boolean open(long counter, ByteBuffer buf) throws NativeException {
    if (encrypt || !buf.isDirect()) {
      throw new IllegalArgumentException("open needs a decrypting cipher and a direct buffer");
    }
    if (buf.remaining() < TAG_BYTES) {
      return false;
    }
    int st = Jni.gcmOpen0(handle, counter, DirectAddress.of(buf) + buf.position(), buf.remaining());
    java.lang.ref.Reference.reachabilityFence(this);
    if (st == AUTH_FAILED) {
      return false;
    }
    if (st != 0) {
      throw new NativeException("gcm open: " + Jni.statusString0(st), st);
    }
    return true;
  }

  /** HRDMA_ERR_AUTH in hrdma.h. */
  private static final int AUTH_FAILED = -14;
}
