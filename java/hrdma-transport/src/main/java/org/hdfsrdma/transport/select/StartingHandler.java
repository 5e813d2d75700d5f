package org.hdfsrdma.transport.select;

import java.net.InetSocketAddress;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;

/**
 * The handler of a server that listens before it can serve: until {@link #serve} hands it the
 * real handler, every hello is refused with {@link EndpointHandler#REFUSED_STARTING} (HelloReply
 * REFUSED, refusal STARTING), so a peer learns at once that the server is there and starting,
 * rather than meeting a closed port, and the connection closes right after the reply: nothing is
 * held while starting. From {@link #serve} on, every event goes to the real handler; it is set
 * once and never taken back, so a connection it admitted sees only it.
 *
 * <p>Thread-safe; the handler methods run on the transports' I/O threads and never block (a
 * volatile read before the real handler's own).
 */
public final class StartingHandler implements EndpointHandler {
  private volatile EndpointHandler target;
  private final AtomicLong refused = new AtomicLong();

  /**
   * From now on, connections go to {@code handler} (its {@link #admit} decides). Once only.
   *
   * @throws IllegalStateException called before
   */
  public synchronized void serve(EndpointHandler handler) {
    Objects.requireNonNull(handler, "handler");
    if (target != null) {
      throw new IllegalStateException("serving already");
    }
    target = handler;
  }

  /** Whether {@link #serve} was called. */
  public boolean serving() {
    return target != null;
  }

  /** Hellos refused as starting so far (tests, status). */
  public long refusedStarting() {
    return refused.get();
  }

  @Override
  public String admit(InetSocketAddress remote) {
    EndpointHandler t = target;
    if (t == null) {
      refused.incrementAndGet();
      return REFUSED_STARTING;
    }
    return t.admit(remote);
  }

  @Override
  public void onAbandoned(InetSocketAddress remote) {
    EndpointHandler t = target;
    if (t != null) { // only a connection the real handler admitted is abandoned
      t.onAbandoned(remote);
    }
  }

  @Override
  public void onConnected(Endpoint endpoint) {
    EndpointHandler t = target;
    if (t == null) { // not admitted by anyone: cannot happen, but nothing may reach no handler
      endpoint.close();
      return;
    }
    t.onConnected(endpoint);
  }

  @Override
  public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
    EndpointHandler t = target;
    if (t == null) {
      message.release();
      endpoint.close();
      return;
    }
    t.onMessage(endpoint, message);
  }

  @Override
  public void onClosed(Endpoint endpoint, Throwable cause) {
    EndpointHandler t = target;
    if (t != null) {
      t.onClosed(endpoint, cause);
    }
  }
}
