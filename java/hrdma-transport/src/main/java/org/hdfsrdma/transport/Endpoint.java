package org.hdfsrdma.transport;

import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;

/**
 * One connection to a peer. Thread-safe: any thread may send; completions and
 * handler callbacks run on the transport's I/O thread.
 *
 * <p>Messages are delivered whole and in order. Flow control is by credits:
 * each side may have at most the peer's advertised number of messages
 * unreleased at the peer; further sends wait in a queue, {@link #isWritable()}
 * turns false, and their futures complete once they have been sent.
 */
public interface Endpoint extends AutoCloseable {

  Transport transport();

  InetSocketAddress remoteAddress();

  /** Capabilities both sides of this connection have. */
  java.util.Set<Capability> capabilities();

  /**
   * Sends {@code message.nio()} from position to limit. Takes over one
   * reference: the transport releases it when the bytes have left the buffer.
   * The future completes at that point, or fails with a
   * {@link TransportException} (peer failed, endpoint closed, too large).
   */
  CompletableFuture<Void> send(RegisteredBuffer message);

  /** False while sends are queued for lack of credits or socket space. */
  boolean isWritable();

  /**
   * Sends queued for lack of the peer's credits, now (any thread; a snapshot). While a window of
   * them waits, this side grants the peer no credits (see {@link AbstractEndpoint}).
   */
  default int pendingSends() {
    return 0;
  }

  /**
   * For how long sends have waited on this endpoint with none of them completing, at
   * {@code now} ({@link System#nanoTime}; any thread, a snapshot): 0 while no send waits, else
   * the time since the last send completed or, if later, since a send began waiting when none
   * did. A send waits from {@link #send} until its future completes: queued for the peer's
   * credits, or handed to the transport and not yet sent (over tcp: not yet written to the
   * socket). A peer that takes nothing makes this grow; one that takes its messages, however
   * slowly, resets it with each.
   */
  default long sendStallNanos(long now) {
    return 0;
  }

  /**
   * Makes {@code buffer} (position to limit) reachable for one-sided access
   * by the peer and returns its descriptor, to be sent to the peer in a
   * message. The caller keeps its reference and must keep the buffer alive
   * while the peer may access it.
   *
   * @throws UnsupportedOperationException without {@link Capability#ONE_SIDED}
   */
  RemoteRegion expose(RegisteredBuffer buffer) throws TransportException;

  /**
   * Writes {@code source} (position to limit) at {@code offset} in the peer's
   * region. Like {@link #send}, takes over one reference and releases it when
   * the operation has completed locally.
   */
  CompletableFuture<Void> write(RegisteredBuffer source, RemoteRegion target, long offset);

  /**
   * Reads into {@code target} (position to limit) from {@code offset} in the
   * peer's region. Takes over one reference, released once the data is in
   * {@code target} (the future completes after that).
   */
  CompletableFuture<Void> read(RegisteredBuffer target, RemoteRegion source, long offset);

  /** Completes when every write and read posted before it has completed at the peer. */
  CompletableFuture<Void> flush();

  /** Completes when the endpoint has closed; exceptionally if it failed. */
  CompletableFuture<Void> closeFuture();

  /**
   * Closes gracefully: queued sends that have not started fail with
   * {@link TransportException.Closed}. Idempotent.
   */
  @Override
  void close();
}
