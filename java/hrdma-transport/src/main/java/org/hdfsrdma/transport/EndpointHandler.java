package org.hdfsrdma.transport;

/**
 * Receives an endpoint's events. Every method runs on the transport's I/O
 * thread for that endpoint and must not block; hand slow work to another
 * thread (keeping the message's reference).
 */
public interface EndpointHandler {

  /**
   * What {@link #admit} returns to refuse a connection because the server does not serve yet
   * (it is starting): the peer gets REFUSED with refusal STARTING and may try again shortly
   * ({@link TransportException.Starting}). Told apart by its value.
   */
  String REFUSED_STARTING = "the server is starting, try again shortly";

  /**
   * Server side, during the hello, before the connection is accepted: null admits it, else the
   * reason it is refused, which the peer gets in a HelloReply REFUSED before the connection
   * closes. An admitted connection is handed to {@link #onConnected} right after, on the same
   * thread, and to {@link #onClosed} when it ends. Must not block. A handler that wraps
   * another must pass this on. {@link #REFUSED_STARTING}: refused as not serving yet.
   */
  default String admit(java.net.InetSocketAddress remote) {
    return null;
  }

  /**
   * An admitted connection ended before this handler was handed it with {@link #onConnected}:
   * a wrapping handler (an authentication step) refused it, or it closed during that step.
   * Gives back what {@link #admit} took. A handler that wraps another must pass this on for
   * every admitted connection it never hands on.
   */
  default void onAbandoned(java.net.InetSocketAddress remote) {}

  /** A connection finished its hello exchange (server side: a new endpoint). */
  default void onConnected(Endpoint endpoint) {}

  /**
   * A message arrived: its bytes are {@code message.nio()} from position to
   * limit. The handler owns one reference and must release it; until it does,
   * the message counts against the sender's credits (backpressure).
   */
  void onMessage(Endpoint endpoint, RegisteredBuffer message);

  /**
   * The endpoint is closed: by either side ({@code cause} null) or by a
   * failure ({@code cause} says which). Called once.
   */
  default void onClosed(Endpoint endpoint, Throwable cause) {}
}
