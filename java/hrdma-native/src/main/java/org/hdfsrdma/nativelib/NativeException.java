package org.hdfsrdma.nativelib;

import java.io.IOException;

/** A failure reported by libhrdma; {@link #status()} is the hrdma_status_t. */
public class NativeException extends IOException {
  public static final int ERR_INVALID = -1;
  public static final int ERR_NOMEM = -2;
  public static final int ERR_IO = -3;
  public static final int ERR_UNREACHABLE = -4;
  public static final int ERR_PEER_FAILED = -5;
  public static final int ERR_CANCELED = -6;
  public static final int ERR_TIMEOUT = -7;
  public static final int ERR_UNSUPPORTED = -8;
  public static final int ERR_CLOSED = -9;
  public static final int ERR_CHECKSUM = -10;
  public static final int ERR_BUSY = -11;
  public static final int ERR_NO_DEVICE = -12;
  public static final int ERR_TRUNCATED = -13;

  private final int status;

  public NativeException(String message, int status) {
    super(message);
    this.status = status;
  }

  public int status() {
    return status;
  }
}
