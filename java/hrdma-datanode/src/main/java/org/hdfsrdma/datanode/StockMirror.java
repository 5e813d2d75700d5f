package org.hdfsrdma.datanode;

import java.io.EOFException;
import java.io.IOException;
import java.net.ProtocolException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PacketHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PipelineAckProto;
import org.hdfsrdma.datanode.compat.StockWriteConnection;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.transport.RegisteredBuffer;

/**
 * A write's link to a next DataNode that our transports could not reach (no plugin, a plugin
 * not serving yet, every transport failing): the rest of the pipeline goes over stock's
 * DataTransferProtocol ({@link StockWriteConnection}), as stock's DataXceiver forwards to any
 * DataNode. Packets are written on a sender thread of the write's own (a socket write
 * blocks; {@link #forward} must not) and the downstream's acks read on another, as stock's
 * PacketResponder reads its mirror's; both reach the write's {@link WriteMirror.Listener} as
 * our mirror's do, so heartbeats, the last packet, recoveries and a downstream that dies
 * mid-block take the paths they take with {@link WriteMirror}. Not pooled.
 *
 * <p>Buffers: a forwarded packet's received buffer is retained until it is written, so it
 * keeps holding its upstream credit, as with our mirror: a downstream that takes nothing stops
 * the upstream after its window. Thread-safe.
 */
final class StockMirror implements DownstreamMirror {
  /** A packet waiting to be written; {@code held} is released once it is (null: a copy on the heap). */
  private record Pending(PacketHeaderProto header, ByteBuffer payload, RegisteredBuffer held) {
    void release() {
      if (held != null) {
        held.release();
      }
    }
  }

  private final StockWriteConnection conn;
  private final WriteMirror.Listener listener;
  private final String block;
  private final ArrayDeque<Pending> queue = new ArrayDeque<>(); // guarded by this
  private boolean closed;       // guarded by this
  private boolean broken;       // guarded by this: a send failed, nothing more is sent
  private int unsent;           // guarded by this: queued or being written
  private long waitingSince;    // guarded by this: when sends last began to wait, or last completed

  StockMirror(StockWriteConnection conn, WriteMirror.Listener listener, String block) {
    this.conn = conn;
    this.listener = listener;
    this.block = block;
  }

  /** The next DataNode's answer to the request, read by {@code deadline} ({@link System#nanoTime()}). */
  BlockOpResponseProto response(long deadline) throws IOException {
    return conn.response(deadline);
  }

  /** After a SUCCESS answer: starts the sender and the ack reader. */
  void start() {
    Thread s = new Thread(this::sendLoop, "hrdma-stock-mirror-send-" + block);
    Thread a = new Thread(this::ackLoop, "hrdma-stock-mirror-acks-" + block);
    s.setDaemon(true);
    a.setDaemon(true);
    s.start();
    a.start();
  }

  @Override
  public String name() {
    return conn.name();
  }

  @Override
  public void forward(Message packet, int dataOffset) {
    PacketHeaderProto h;
    try {
      h = packet.packetHeader();
    } catch (ProtocolException e) {
      failed("cannot forward to " + name() + ": " + e.getMessage());
      return;
    }
    RegisteredBuffer b = packet.buffer();
    ByteBuffer payload = packet.payload().duplicate();
    if (b == null) { // decoded from plain bytes: a copy of our own
      payload = ByteBuffer.allocate(payload.remaining()).put(payload).flip();
    } else {
      b.retain(); // until it is written
    }
    synchronized (this) {
      if (!closed && !broken) {
        if (unsent++ == 0) {
          waitingSince = System.nanoTime();
        }
        queue.add(new Pending(h, payload, b));
        notifyAll();
        return;
      }
    }
    if (b != null) {
      b.release();
    }
  }

  private void sendLoop() {
    try {
      while (true) {
        Pending p;
        boolean flush;
        synchronized (this) {
          while (queue.isEmpty() && !closed && !broken) {
            wait();
          }
          if (closed || broken) {
            return;
          }
          p = queue.poll();
        }
        try {
          conn.send(p.header(), p.payload());
          synchronized (this) {
            flush = queue.isEmpty(); // packets queued behind this one go out with it
          }
          if (flush) {
            conn.flush();
          }
        } catch (IOException | RuntimeException e) {
          boolean report;
          synchronized (this) {
            report = !closed && !broken;
            broken = true;
          }
          if (report) {
            listener.onDownstreamFailed("forwarding to " + name() + " failed: " + e);
          }
          return;
        } finally {
          p.release();
        }
        synchronized (this) {
          unsent--;
          waitingSince = System.nanoTime();
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      dropQueued();
    }
  }

  private void ackLoop() {
    while (true) {
      PipelineAckProto ack;
      try {
        ack = conn.readAck();
      } catch (IOException | RuntimeException e) {
        synchronized (this) {
          if (closed) {
            return; // our own close
          }
        }
        // the socket ended (its end, or it failed): as our mirror's connection closing
        listener.onDownstreamClosed("connection to " + name() + " closed: "
            + (e instanceof EOFException ? "end of stream" : e.toString()));
        return;
      }
      listener.onDownstreamAck(ack);
    }
  }

  @Override
  public synchronized long sendStallNanos(long now) {
    return unsent > 0 ? Math.max(1, now - waitingSince) : 0;
  }

  @Override
  public void failed(String why) {
    listener.onDownstreamFailed(why);
  }

  /** Closes the connection (never kept: not pooled); packets not written are released. */
  @Override
  public void close(boolean cleanly) {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      notifyAll();
    }
    conn.close();
    dropQueued();
  }

  private void dropQueued() {
    List<Pending> left;
    synchronized (this) {
      left = new ArrayList<>(queue);
      queue.clear();
      unsent = 0;
    }
    left.forEach(Pending::release);
  }
}
