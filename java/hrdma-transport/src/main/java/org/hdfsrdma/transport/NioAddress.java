package org.hdfsrdma.transport;

import io.netty.util.internal.PlatformDependent;
import java.nio.ByteBuffer;

/** Native address of a direct ByteBuffer, through Netty's platform helper. */
public final class NioAddress {
  private NioAddress() {}

  public static long of(ByteBuffer direct) {
    if (!direct.isDirect()) {
      throw new IllegalArgumentException("not a direct buffer");
    }
    if (!PlatformDependent.hasDirectBufferNoCleanerConstructor()
        && !PlatformDependent.hasUnsafe()) {
      throw new IllegalStateException("direct buffer addresses are not available on this JVM");
    }
    return PlatformDependent.directBufferAddress(direct);
  }
}
