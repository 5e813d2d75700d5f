package org.hdfsrdma.transport;

import java.nio.ByteBuffer;

/**
 * A test hook on every transport: sees each message's bytes as an endpoint hands them to its
 * transport and as they arrive from it, i.e. what crosses the wire (less the transport's own
 * framing). Off (null) unless a test sets it; then called on the sending thread and on the
 * I/O thread, and must not keep the buffer (a read-only view, valid during the call only).
 * Thread-safe.
 */
public final class FrameTap {
  /** Receives the frames. */
  public interface Listener {
    void frame(boolean sent, ByteBuffer bytes);
  }

  private static volatile Listener tap;

  private FrameTap() {}

  /** Sets (or with null clears) the process-wide tap. */
  public static void set(Listener listener) {
    tap = listener;
  }

  static void sent(RegisteredBuffer message) {
    Listener t = tap;
    if (t != null) {
      t.frame(true, message.nio().asReadOnlyBuffer());
    }
  }

  static void received(RegisteredBuffer message) {
    Listener t = tap;
    if (t != null) {
      t.frame(false, message.nio().asReadOnlyBuffer());
    }
  }
}
