package org.hdfsrdma.transport;

import java.io.IOException;

/**
 * A transport failure. Subclasses say what kind; {@link #status()} carries the
 * native status code where the failure came from the native core (0 otherwise).
 */
public class TransportException extends IOException {
  private final int status;

  public TransportException(String message) {
    this(message, 0, null);
  }

  public TransportException(String message, int status, Throwable cause) {
    super(message, cause);
    this.status = status;
  }

  public int status() {
    return status;
  }

  /** Nobody listens at the address, or it refused the connection. */
  public static class Unreachable extends TransportException {
    public Unreachable(String message, int status, Throwable cause) {
      super(message, status, cause);
    }
  }

  /** The peer died or the connection broke. */
  public static class PeerFailed extends TransportException {
    public PeerFailed(String message, int status, Throwable cause) {
      super(message, status, cause);
    }
  }

  /** The endpoint or transport was closed locally. */
  public static class Closed extends TransportException {
    public Closed(String message) {
      super(message);
    }
  }

  /** The peer broke the protocol: garbage, bad version, oversized or truncated frame. */
  public static class Protocol extends TransportException {
    public Protocol(String message) {
      super(message);
    }
  }

  /**
   * The server refused the hello because it listens but does not serve yet (a DataNode plugin
   * still starting: HelloReply REFUSED with refusal STARTING). Soon over: a caller may use
   * another path for now and try this server again shortly. A {@link Protocol} as any refused
   * hello, for callers that do not tell it apart.
   */
  public static class Starting extends Protocol {
    public Starting(String message) {
      super(message);
    }
  }

  /** The connection did not finish in time. */
  public static class Timeout extends TransportException {
    public Timeout(String message) {
      super(message);
    }
  }
}
