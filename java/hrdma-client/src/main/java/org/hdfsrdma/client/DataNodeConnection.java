package org.hdfsrdma.client;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One negotiated connection to a DataNode's plugin, shared by every reader
 * of that DataNode. Requests carry ids from this connection's counter; the
 * handler (I/O thread, never blocks) routes each arriving message to its
 * {@link PendingRead} and releases messages of requests nobody waits for
 * any more (the tail of a cancelled read).
 */
final class DataNodeConnection implements EndpointHandler {
  private static final Logger LOG = LoggerFactory.getLogger(DataNodeConnection.class);

  private final String name;
  private final InetSocketAddress address;
  private final RdmaBlockClient client;
  private final ConcurrentHashMap<Long, PendingRead> pending = new ConcurrentHashMap<>();
  private final AtomicLong ids = new AtomicLong();
  private volatile Endpoint endpoint;
  private volatile String transport;
  private volatile IOException closedCause;
  private volatile long lastUsed = System.nanoTime();

  DataNodeConnection(String name, InetSocketAddress address, RdmaBlockClient client) {
    this.name = name;
    this.address = address;
    this.client = client;
  }

  void connected(Endpoint ep, String transportName) {
    this.endpoint = ep;
    this.transport = transportName;
  }

  void touch() {
    lastUsed = System.nanoTime();
  }

  long lastUsed() {
    return lastUsed;
  }

  Endpoint endpoint() {
    return endpoint;
  }

  String transportName() {
    return transport;
  }

  boolean isOpen() {
    return closedCause == null && endpoint != null;
  }

  /** Requests waiting for answers. */
  int pendingCount() {
    return pending.size();
  }

  /** A new request id and the queue its answers go to. */
  PendingRead register() throws IOException {
    IOException c = closedCause;
    if (c != null) {
      throw new IOException(c.getMessage(), c);
    }
    PendingRead p = new PendingRead(ids.incrementAndGet(), this);
    pending.put(p.id(), p);
    if (closedCause != null) { // closed meanwhile: onClosed may have missed it
      p.fail(closedCause);
    }
    return p;
  }

  void unregister(PendingRead p) {
    pending.remove(p.id(), p);
  }

  /** Sends; a failed send fails {@code p}. Takes over the buffer's reference. */
  void send(RegisteredBuffer m, PendingRead p) {
    endpoint.send(m).whenComplete((v, t) -> {
      if (t != null && p != null) {
        p.fail(new IOException("sending to " + this + " failed: " + t.getMessage(), t));
      }
    });
  }

  @Override
  public void onMessage(Endpoint ep, RegisteredBuffer buffer) {
    Message m;
    try {
      m = MessageCodec.decode(buffer);
    } catch (ProtocolException e) {
      buffer.release();
      LOG.warn("hrdma client: bad message from {}, closing the connection: {}", this, e.getMessage());
      ep.close();
      return;
    } catch (RuntimeException e) {
      buffer.release();
      throw e;
    }
    PendingRead p = pending.get(m.requestId());
    if (p == null) {
      m.release(); // a cancelled request's tail
      return;
    }
    p.offer(m);
  }

  @Override
  public void onClosed(Endpoint ep, Throwable cause) {
    IOException why = new IOException("connection to " + this + " closed"
        + (cause == null ? "" : ": " + cause.getMessage()), cause);
    closedCause = why;
    List<PendingRead> all = new ArrayList<>(pending.values());
    for (PendingRead p : all) {
      p.fail(why);
    }
    client.forget(this);
  }

  void close() {
    Endpoint ep = endpoint;
    if (ep != null) {
      ep.close();
    }
  }

  @Override
  public String toString() {
    return "DataNode " + name + " at " + address + (transport == null ? "" : " over " + transport);
  }
}
