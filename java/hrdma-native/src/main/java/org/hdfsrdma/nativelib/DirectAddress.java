package org.hdfsrdma.nativelib;

import java.nio.ByteBuffer;

/** Native address of a direct buffer (JNI GetDirectBufferAddress). */
public final class DirectAddress {
  private DirectAddress() {}

  public static long of(ByteBuffer direct) {
    if (!direct.isDirect()) {
      throw new IllegalArgumentException("not a direct buffer");
    }
    HrdmaNative.ensureAvailable();
    return Jni.bufferAddress0(direct);
  }
}
