package org.hdfsrdma.transport;

/** What a transport can do beyond two-sided messages. */
public enum Capability {
  /** {@link Endpoint#write} / {@link Endpoint#read} on a peer's exposed buffer. */
  ONE_SIDED,
  /** Large messages move from and into registered memory without a CPU copy. */
  ZERO_COPY,
  /** Peers on the same host talk through shared memory. */
  SHARED_MEMORY,
  /**
   * The receiver takes placement hints ({@link RegisteredBuffer#placeAligned}) in the frame
   * header (the stream transport, whose earlier receivers refused any non-zero pad byte).
   */
  PLACEMENT;

  public String wireName() {
    return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
  }

  /** The capability with this wire name, or null for one this version does not know. */
  public static Capability fromWireName(String s) {
    for (Capability c : values()) {
      if (c.wireName().equals(s)) {
        return c;
      }
    }
    return null;
  }
}
