package org.hdfsrdma.datanode;

import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.WriteSegment;
import org.hdfsrdma.protocol.wire.WireProtection;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A forwarding DataNode's connections to the next DataNodes of its pipelines, kept between
 * blocks (stock's client keeps its DataNode sockets the same way, {@code PeerCache}: 16, 3 s).
 * Setting one up costs a transport connection, a handshake and, on this host, a write segment
 * granted by the next DataNode and fetched over its domain socket; a small file's block pays
 * that at every hop, where its data takes a fraction of it. A connection carries one write at a
 * time: {@link #take} lends an idle one, {@link #give} takes it back once its write ended
 * cleanly (every packet acknowledged, nothing failed), and one that failed or closed is closed.
 * The write segment goes with the connection (the next DataNode grants one per connection), so
 * a reused connection forwards by reference without asking again.
 *
 * <p>Kept by {@link Key}: the next DataNode's address, the protection and who the handshake
 * proved this DataNode to be (its data encryption key, or the owner of the block token, and the
 * block pool), so a connection is reused only for writes that would have authenticated the same
 * way; the next DataNode checks each write's own block token as for a new connection. At most
 * {@code capacity} idle connections; one idle for {@code idleMs} is closed ({@link #expire}).
 *
 * <p>Thread-safe.
 */
final class MirrorPool implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(MirrorPool.class);

  /** What a pooled connection was authenticated for: reused only for the same. */
  record Key(InetSocketAddress address, WireProtection.Mode mode, String identity) {}

  private final int capacity;
  private final long idleNanos;
  /** Idle connections by key, the most recently returned last. Guarded by this. */
  private final Map<Key, ArrayDeque<Pooled>> idle = new HashMap<>();
  private int idleCount; // guarded by this
  private boolean closed; // guarded by this
  private final AtomicLong reused = new AtomicLong();
  private final AtomicLong opened = new AtomicLong();
  private final AtomicLong expired = new AtomicLong();
  private final AtomicLong live = new AtomicLong();

  MirrorPool(int capacity, long idleMs) {
    this.capacity = capacity;
    this.idleNanos = idleMs * 1_000_000L;
  }

  boolean enabled() {
    return capacity > 0;
  }

  /** A new connection's handler, before it is connected (the pool counts it from now until it closes). */
  Pooled newConnection(Key key, String name) {
    opened.incrementAndGet();
    live.incrementAndGet();
    return new Pooled(key, name);
  }

  /** An idle connection for {@code key} whose last write's request id is not {@code requestId}, or null. */
  Pooled take(Key key, long requestId) {
    List<Pooled> dead = new ArrayList<>();
    Pooled found = null;
    synchronized (this) {
      ArrayDeque<Pooled> q = idle.get(key);
      if (q != null) {
        for (Iterator<Pooled> it = q.descendingIterator(); it.hasNext();) {
          Pooled p = it.next();
          if (!p.isOpen()) {
            it.remove();
            idleCount--;
            dead.add(p);
            continue;
          }
          // the next DataNode may not have let the last write's id go yet: a write with the same id
          // would be refused as a duplicate
          if (p.lastRequestId != requestId) {
            it.remove();
            idleCount--;
            found = p;
            break;
          }
        }
        if (q.isEmpty()) {
          idle.remove(key);
        }
      }
    }
    dead.forEach(Pooled::close);
    if (found != null) {
      reused.incrementAndGet();
    }
    return found;
  }

  /**
   * Takes {@code p} back after its write; {@code reusable}: the write ended cleanly. Otherwise,
   * or when the pool is full or closed, the connection is closed.
   */
  void give(Pooled p, boolean reusable) {
    p.current = null;
    if (reusable && p.isOpen()) {
      synchronized (this) {
        if (!closed && idleCount < capacity) {
          p.idleSince = System.nanoTime();
          idle.computeIfAbsent(p.key, k -> new ArrayDeque<>()).addLast(p);
          idleCount++;
          return;
        }
      }
    }
    p.close();
  }

  /** Closes the connections idle for longer than the pool keeps them (the plugin's timer). */
  void expire() {
    long now = System.nanoTime();
    List<Pooled> old = new ArrayList<>();
    synchronized (this) {
      for (Iterator<ArrayDeque<Pooled>> qs = idle.values().iterator(); qs.hasNext();) {
        ArrayDeque<Pooled> q = qs.next();
        for (Iterator<Pooled> it = q.iterator(); it.hasNext();) {
          Pooled p = it.next();
          if (!p.isOpen() || now - p.idleSince >= idleNanos) {
            it.remove();
            idleCount--;
            old.add(p);
          }
        }
        if (q.isEmpty()) {
          qs.remove();
        }
      }
    }
    for (Pooled p : old) {
      if (p.isOpen()) {
        expired.incrementAndGet();
      }
      p.close();
    }
  }

  /** Closes every idle connection; those lent out are closed when given back. */
  @Override
  public void close() {
    List<Pooled> all = new ArrayList<>();
    synchronized (this) {
      closed = true;
      idle.values().forEach(all::addAll);
      idle.clear();
      idleCount = 0;
    }
    all.forEach(Pooled::close);
  }

  synchronized int idleConnections() {
    return idleCount;
  }

  /** Connections made for forwarding that have not closed yet (idle or lent). */
  long liveConnections() {
    return live.get();
  }

  long reused() {
    return reused.get();
  }

  long opened() {
    return opened.get();
  }

  long expired() {
    return expired.get();
  }

  /**
   * One connection to a next DataNode, its handler (on the connector's I/O thread): the
   * messages of the write it carries now go to that write's {@link WriteMirror}; the releases of
   * its write segment's slots to the segment, whichever write sent them; a message of an earlier
   * write is dropped. Owns the endpoint and the segment, which outlive the writes.
   */
  final class Pooled implements EndpointHandler {
    /**
     * Messages of no write here in a row past which the next DataNode is taken to flood the
     * connection, which is closed: an honest one sends at most the tail of an earlier write (its
     * acks of the packets in flight when it ended: at most a client's 65536 unacknowledged
     * packets, and a response), and a flood would hold the I/O thread that serves this
     * DataNode's other connections.
     */
    static final int MAX_STRAYS = 1 << 17;
    final Key key;
    private final String name;
    volatile Endpoint ep;
    private volatile WriteSegment segment;
    volatile WriteMirror current;
    volatile long lastRequestId = Long.MIN_VALUE;
    long idleSince; // guarded by the pool
    private boolean closed; // guarded by this
    private int strays; // the I/O thread's

    private Pooled(Key key, String name) {
      this.key = key;
      this.name = name;
    }

    /** Lends the connection to {@code m}'s write, of request id {@code requestId}. */
    void lend(WriteMirror m, long requestId) {
      lastRequestId = requestId;
      current = m;
    }

    synchronized boolean isOpen() {
      Endpoint e = ep;
      return !closed && e != null && !e.closeFuture().isDone();
    }

    WriteSegment segment() {
      return segment;
    }

    /** The next DataNode's write segment for this connection; false (and it is closed) when the connection closed. */
    boolean segment(WriteSegment s) {
      synchronized (this) {
        if (!closed) {
          segment = s;
          return true;
        }
      }
      s.close();
      return false;
    }

    void close() {
      WriteSegment s;
      boolean first;
      synchronized (this) {
        first = !closed;
        closed = true;
        s = segment;
        segment = null;
      }
      Endpoint e = ep;
      if (e != null) {
        e.close();
      }
      if (s != null) {
        s.close();
      }
      if (first) {
        live.decrementAndGet();
      }
    }

    @Override
    public void onMessage(Endpoint endpoint, RegisteredBuffer buffer) {
      Message m;
      try {
        m = MessageCodec.decode(buffer);
      } catch (ProtocolException e) {
        buffer.release();
        WriteMirror w = current;
        if (w != null) {
          w.failed("bad message from " + name + ": " + e.getMessage());
        }
        endpoint.close();
        return;
      }
      if (m.kind() == MessageKind.WRITE_SHM_RELEASE) {
        try {
          WriteMirror.release(segment, m, name);
        } catch (ProtocolException e) {
          WriteMirror w = current;
          if (w != null) {
            w.failed("bad message from " + name + ": " + e.getMessage());
          }
          endpoint.close();
        } finally {
          m.release();
        }
        return;
      }
      WriteMirror w = current;
      if (w == null || (m.requestId() != w.requestId && m.requestId() != WriteMirror.SEGMENT_REQUEST_ID)) {
        // the tail of an earlier write (its last messages after its last ack): nobody waits for it
        LOG.debug("hrdma datanode: dropped a {} of request {} from {} (no write of it here)", m.kind(),
            m.requestId(), name);
        m.release();
        if (++strays > MAX_STRAYS) {
          LOG.warn("hrdma datanode: closing the connection to {}: {} messages in a row of no write here",
              name, strays);
          if (w != null) {
            w.failed("closed: " + name + " sent " + strays + " messages in a row of no write here");
          }
          endpoint.close();
        }
        return;
      }
      strays = 0;
      w.onDecoded(endpoint, m);
    }

    @Override
    public void onClosed(Endpoint endpoint, Throwable cause) {
      close();
      WriteMirror w = current;
      if (w != null) {
        w.onClosed(endpoint, cause);
      }
    }

    @Override
    public String toString() {
      return name;
    }
  }
}
