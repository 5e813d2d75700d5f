package org.hdfsrdma.datanode;

import org.hdfsrdma.protocol.Message;

/**
 * A write's link to the next DataNode of its pipeline, as the write task uses it (stock: the
 * mirror streams of DataXceiver#writeBlock): over our transports ({@link WriteMirror}) or, when
 * the next DataNode cannot be reached over them, over stock's DataTransferProtocol
 * ({@link StockMirror}). Both report the downstream's acks, failure and end to the write's
 * {@link WriteMirror.Listener}. Implementations are thread-safe.
 */
interface DownstreamMirror {
  /** The next DataNode's xfer address (firstBadLink, logs). */
  String name();

  /**
   * Sends {@code packet} (a DATA_PACKET, a heartbeat too) on; never blocks. The caller keeps
   * the message: what the mirror needs after returning it retains. {@code dataOffset}: where
   * its data starts ({@link WriteMirror#forward}), -1 for none.
   */
  void forward(Message packet, int dataOffset);

  /** Whether sends to the downstream wait ({@link WriteMirror#sendsWaiting}). */
  default boolean sendsWaiting(long now) {
    return sendStallNanos(now) > 0;
  }

  /** For how long sends to the downstream have waited with none completed; 0 when none waits. */
  long sendStallNanos(long now);

  /** The write goes on without the downstream (a fault, or it owed acks too long). */
  void failed(String why);

  /** The write is over; {@code cleanly}: the downstream acked every packet. */
  void close(boolean cleanly);
}
