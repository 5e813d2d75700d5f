package org.hdfsrdma.transport;

import java.nio.ByteBuffer;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.Jni;

/**
 * Native address of a direct ByteBuffer: from the native library where it loads (JNI's
 * {@code GetDirectBufferAddress}), else through Netty's platform helper, whose classes load
 * only then. Thread-safe.
 */
public final class NioAddress {
  private static final boolean NATIVE = HrdmaNative.isAvailable();

  private NioAddress() {}

  public static long of(ByteBuffer direct) {
    if (!direct.isDirect()) {
      throw new IllegalArgumentException("not a direct buffer");
    }
    return NATIVE ? Jni.bufferAddress0(direct) : Fallback.of(direct);
  }

  /** Netty's helper, initialized only where the native library is missing. */
  private static final class Fallback {
    static {
      org.hdfsrdma.transport.tcp.NettyStartup.apply();
    }

    static long of(ByteBuffer direct) {
      if (!io.netty.util.internal.PlatformDependent.hasDirectBufferNoCleanerConstructor()
          && !io.netty.util.internal.PlatformDependent.hasUnsafe()) {
        throw new IllegalStateException("direct buffer addresses are not available on this JVM");
      }
      return io.netty.util.internal.PlatformDependent.directBufferAddress(direct);
    }
  }
}
