package org.hdfsrdma.transport;

/** Transport protocol constants shared by every transport. */
public final class Protocol {
  private Protocol() {}

  /** Version carried in every hello; a peer with another version is refused. */
  public static final int VERSION = 1;

  /** Largest hello or control message accepted before the hello is done. */
  public static final int MAX_CONTROL_MESSAGE = 64 * 1024;
}
