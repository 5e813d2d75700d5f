package org.hdfsrdma.transport.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32C;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.Listener;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A DataNode's cut-through on one UCX transport: a relay hands each message it receives on
 * to a second endpoint of the same transport (the very buffer, retained) while another thread
 * still reads it and releases it later, as the write path's disk write does. The sink must
 * get every message intact and in order.
 */
class UcxForwardTest {
  private static final long WAIT_MS = 30_000;

  @Test
  @Timeout(120)
  void forwardedReceivedBuffersArriveIntact() throws Exception {
    run(TransportConf.defaults().with(TransportConf.CONNECT_TIMEOUT_KEY, "5000"));
  }

  @Test
  @Timeout(120)
  void acksComeBackInOrderThroughTheRelay() throws Exception {
    run(TransportConf.defaults().with(TransportConf.CONNECT_TIMEOUT_KEY, "5000"), true,
        new int[] {100, 1_200, 3_000, 66_000});
  }

  private static void run(TransportConf conf) throws Exception {
    run(conf, false, new int[] {200, 9_000, 66_000, 130_000});
  }

  private static void run(TransportConf conf, boolean acks, int[] sizes) throws Exception {
    int count = 3000;
    Queue<String> errors = new ConcurrentLinkedQueue<>();
    AtomicInteger sunk = new AtomicInteger();
    AtomicInteger nextAtSink = new AtomicInteger();
    AtomicInteger nextAckAtRelay = new AtomicInteger();
    AtomicInteger nextAckAtSource = new AtomicInteger();
    ExecutorService disk = Executors.newSingleThreadExecutor();
    ExecutorService sinkDisk = Executors.newSingleThreadExecutor();
    Endpoint[] upOfRelay = new Endpoint[1];
    // as a DataNode's ack responder: a message is acked up once both its local processing (another
    // thread) and the downstream's ack (the I/O thread) are in, in order, whichever thread that is
    Responder responder = new Responder(count, seq -> upOfRelay[0].send(ack(upOfRelay[0].transport(), seq)));
    try (Transport t = new UcxTransport(conf)) {
      EndpointHandler sinkHandler = (ep, m) -> {
        try {
          String bad = check(m.nio().duplicate());
          int seq = m.nio().getInt(m.nio().position());
          if (bad != null) {
            errors.add("sink: " + bad);
          } else if (seq != nextAtSink.getAndIncrement()) {
            errors.add("sink: message " + seq + " out of order");
          }
          if (acks) {
            sinkDisk.execute(() -> ep.send(ack(t0(ep), seq)));
          }
        } finally {
          m.release();
          sunk.incrementAndGet();
        }
      };
      Listener sink = t.listen(new java.net.InetSocketAddress("127.0.0.1", 0), sinkHandler);
      EndpointHandler downHandler = (ep, m) -> {
        int seq = checkAck("relay", m, nextAckAtRelay, errors);
        responder.done(seq, false); // on the I/O thread, as a DataNode's downstream ack
      };
      Endpoint down = t.connect(sink.localAddress(), acks ? downHandler : (ep, m) -> m.release())
          .get(WAIT_MS, TimeUnit.MILLISECONDS);
      EndpointHandler relayHandler = (ep, m) -> {
        upOfRelay[0] = ep;
        down.send(m.retain()); // cut-through: the buffer we received
        disk.execute(() -> { // the disk write reads the same bytes, then releases them
          String bad = check(m.nio().duplicate());
          if (bad != null) {
            errors.add("relay: " + bad);
          }
          int seq = m.nio().getInt(m.nio().position());
          m.release();
          if (acks) {
            responder.done(seq, true);
          }
        });
      };
      Listener relay = t.listen(new java.net.InetSocketAddress("127.0.0.1", 0), relayHandler);
      EndpointHandler srcHandler = (ep, m) -> {
        checkAck("source", m, nextAckAtSource, errors);
      };
      Endpoint src = t.connect(relay.localAddress(), srcHandler).get(WAIT_MS, TimeUnit.MILLISECONDS);
      Random r = new Random(7);
      Semaphore window = new Semaphore(64);
      List<CompletableFuture<Void>> sends = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        window.acquire();
        int size = sizes[r.nextInt(sizes.length)];
        RegisteredBuffer b = t.allocator().allocate(size);
        fill(b.nio(), i, r);
        CompletableFuture<Void> f = src.send(b);
        f.whenComplete((v, x) -> window.release());
        sends.add(f);
      }
      for (CompletableFuture<Void> f : sends) {
        f.get(WAIT_MS, TimeUnit.MILLISECONDS);
      }
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
      while ((sunk.get() < count || acks && nextAckAtSource.get() < count) && errors.isEmpty()
          && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      assertTrue(errors.isEmpty(), () -> errors.size() + " bad messages, first: " + errors.peek());
      assertEquals(count, sunk.get(), "messages at the sink");
      if (acks) {
        assertEquals(count, nextAckAtSource.get(), "acks at the source");
      }
      src.close();
      down.close();
      src.closeFuture().handle((v, x) -> null).get(WAIT_MS, TimeUnit.MILLISECONDS);
      down.closeFuture().handle((v, x) -> null).get(WAIT_MS, TimeUnit.MILLISECONDS);
      sinkDisk.shutdown();
      assertTrue(sinkDisk.awaitTermination(WAIT_MS, TimeUnit.MILLISECONDS));
      disk.shutdown();
      assertTrue(disk.awaitTermination(WAIT_MS, TimeUnit.MILLISECONDS));
      long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
      while (t.allocator().buffersOutstanding() != 0 && System.nanoTime() < until) {
        Thread.sleep(5);
      }
      assertEquals(0, t.allocator().buffersOutstanding(), "buffers outstanding");
      relay.close();
      sink.close();
    } finally {
      disk.shutdownNow();
      sinkDisk.shutdownNow();
    }
  }

  private static final class Responder {
    private final boolean[] local;
    private final boolean[] down;
    private final java.util.function.IntConsumer up;
    private int next;

    Responder(int count, java.util.function.IntConsumer up) {
      local = new boolean[count];
      down = new boolean[count];
      this.up = up;
    }

    synchronized void done(int seq, boolean isLocal) {
      if (seq < 0 || seq >= local.length) {
        return;
      }
      (isLocal ? local : down)[seq] = true;
      while (next < local.length && local[next] && down[next]) {
        up.accept(next++);
      }
    }
  }

  private static Transport t0(Endpoint ep) {
    return ep.transport();
  }

  private static RegisteredBuffer ack(Transport t, int seq) {
    try {
      RegisteredBuffer b = t.allocator().allocate(8);
      b.nio().putInt(b.nio().position(), seq).putInt(b.nio().position() + 4, ~seq);
      return b;
    } catch (org.hdfsrdma.transport.TransportException e) {
      throw new IllegalStateException(e);
    }
  }

  /** seq, length, random bytes, CRC32C of everything before it. */
  private static void fill(ByteBuffer b, int seq, Random r) {
    int n = b.remaining(); // the size asked for (the pool's chunk may be larger)
    byte[] body = new byte[n - 12];
    r.nextBytes(body);
    b.putInt(seq).putInt(n).put(body, 0, n - 12);
    CRC32C c = new CRC32C();
    c.update(b.duplicate().flip());
    b.putInt((int) c.getValue());
    b.flip();
  }

  private static String check(ByteBuffer b) {
    int p = b.position();
    int n = b.remaining();
    if (n < 12) {
      return n + "-byte message";
    }
    int seq = b.getInt(p);
    if (b.getInt(p + 4) != n) {
      return "message " + seq + " says " + b.getInt(p + 4) + " bytes, has " + n;
    }
    CRC32C c = new CRC32C();
    c.update(b.duplicate().limit(p + n - 4));
    if ((int) c.getValue() != b.getInt(p + n - 4)) {
      return "message " + seq + " of " + n + " bytes: checksum differs";
    }
    return null;
  }

  /** Checks that ack {@code m} is the next one {@code who} waits for (its sequence number and ~it), releases it. */
  private static int checkAck(String who, RegisteredBuffer m, AtomicInteger next, Queue<String> errors) {
    int seq = m.nio().getInt(m.nio().position());
    int want = next.getAndIncrement();
    if (m.readableBytes() != 8 || seq != want || m.nio().getInt(m.nio().position() + 4) != ~seq) {
      errors.add(who + ": ack " + seq + " (" + m.readableBytes() + " bytes) while waiting for " + want);
    }
    m.release();
    return seq;
  }
}
