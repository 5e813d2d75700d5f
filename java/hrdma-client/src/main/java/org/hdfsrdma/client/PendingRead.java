package org.hdfsrdma.client;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.SocketTimeoutException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.hdfsrdma.protocol.Message;

/**
 * The messages of one request id, handed from the connection's I/O thread
 * (which never blocks: {@link #offer}) to the reading thread ({@link #take}).
 * Messages in the queue keep their buffers (and so count against the
 * DataNode's credits) until the reader releases them; {@link #close} releases
 * whatever is left and makes later arrivals be released on arrival.
 */
final class PendingRead {
  private final long id;
  private final DataNodeConnection conn;
  private final LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();
  private boolean closed; // guarded by this

  PendingRead(long id, DataNodeConnection conn) {
    this.id = id;
    this.conn = conn;
  }

  long id() {
    return id;
  }

  DataNodeConnection connection() {
    return conn;
  }

  /** I/O thread: a message for this request. */
  void offer(Message m) {
    synchronized (this) {
      if (!closed) {
        queue.add(m);
        return;
      }
    }
    m.release();
  }

  /** The connection failed: the reader gets {@code cause} after what already arrived. */
  void fail(IOException cause) {
    synchronized (this) {
      if (!closed) {
        queue.add(cause);
      }
    }
  }

  /** The next message; waits at most {@code timeoutMs}. */
  Message take(long timeoutMs) throws IOException {
    Object o;
    try {
      o = queue.poll(timeoutMs, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted waiting for request " + id + " from " + conn);
    }
    if (o == null) {
      throw new SocketTimeoutException("no answer to request " + id + " from " + conn + " within "
          + timeoutMs + " ms");
    }
    if (o instanceof IOException e) {
      queue.add(e); // every later take fails the same way
      throw new IOException(e.getMessage(), e);
    }
    return (Message) o;
  }

  /** Unregisters and releases what is left. Idempotent. */
  void close() {
    conn.unregister(this);
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    Object o;
    while ((o = queue.poll()) != null) {
      if (o instanceof Message m) {
        m.release();
      }
    }
  }
}
