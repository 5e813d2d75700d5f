package org.hdfsrdma.transport.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.Listener;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportConf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * UCX 1.13 does not keep two stream sends in order when the second is posted
 * while the first is still pending (a small header overtook a large payload),
 * when the second is posted from inside UCX's progress (a completion callback)
 * while the first is still pending: a small frame header overtook a large
 * payload and the byte stream lost its framing. Large and tiny frames, each
 * re-posted from a completion, must all arrive whole and intact.
 */
@Timeout(120)
class StreamOrderTest {
  @Test
  void interleavedLargeAndTinyFramesKeepTheirOrder() throws Exception {
    TransportConf conf = TransportConf.defaults()
        .with(TransportConf.UCX_CONFIG_KEY, "TLS=tcp")
        .with(TransportConf.CREDITS_KEY, "1024");
    int n = 400;
    AtomicInteger next = new AtomicInteger();
    AtomicReference<String> wrong = new AtomicReference<>();
    CountDownLatch all = new CountDownLatch(n);
    try (StreamTransport server = new StreamTransport(conf);
        StreamTransport client = new StreamTransport(conf)) {
      java.util.BitSet seen = new java.util.BitSet();
      Listener l = server.listen(new InetSocketAddress("127.0.0.1", 0), (ep, m) -> {
        next.incrementAndGet();
        String err = check(m, seen);
        if (err != null) {
          wrong.compareAndSet(null, err);
        }
        m.release();
        all.countDown();
      });
      Endpoint ep = client.connect(l.localAddress(), (e, m) -> m.release()).get(10, TimeUnit.SECONDS);
      // Like a sender that keeps a window full: each completion posts the next
      // message, from the transport's I/O thread.
      AtomicInteger posted = new AtomicInteger();
      CompletableFuture<Void> failed = new CompletableFuture<>();
      for (int w = 0; w < 8; w++) {
        postNext(ep, client, posted, n, failed);
      }
      all.await(30, TimeUnit.SECONDS);
      if (failed.isDone()) {
        failed.get();
      }
      assertEquals(null, wrong.get());
      assertEquals(n, next.get());
      assertEquals(n, seen.cardinality(), "every message exactly once");
    }
  }

  private static void postNext(Endpoint ep, StreamTransport t, AtomicInteger posted, int n,
      CompletableFuture<Void> failed) {
    int seq = posted.getAndIncrement();
    if (seq >= n) {
      return;
    }
    try {
      ep.send(frame(t, seq)).whenComplete((v, e) -> {
        if (e != null) {
          failed.completeExceptionally(e);
        } else {
          postNext(ep, t, posted, n, failed);
        }
      });
    } catch (Exception e) {
      failed.completeExceptionally(e);
    }
  }

  private static int sizeOf(int seq) {
    return seq % 2 == 0 ? (1 << 20) + seq : 4 + seq % 7;
  }

  private static RegisteredBuffer frame(StreamTransport t, int seq) throws Exception {
    int size = sizeOf(seq);
    RegisteredBuffer b = t.allocator().allocate(size);
    b.nio().putInt(0, seq);
    for (int i = 4; i < size; i++) {
      b.nio().put(i, (byte) (seq * 31 + i));
    }
    return b;
  }

  private static String check(RegisteredBuffer m, java.util.BitSet seen) {
    if (m.readableBytes() < 4) {
      return "a message of " + m.readableBytes() + " bytes";
    }
    int base = m.nio().position();
    int seq = m.nio().getInt(base);
    if (seq < 0 || seq > 1_000_000) {
      return "garbage sequence number " + seq;
    }
    int size = sizeOf(seq);
    if (m.readableBytes() != size) {
      return "message " + seq + " has " + m.readableBytes() + " bytes, expected " + size;
    }
    for (int i = 4; i < size; i++) {
      if (m.nio().get(base + i) != (byte) (seq * 31 + i)) {
        return "message " + seq + " differs at byte " + i;
      }
    }
    if (seen.get(seq)) {
      return "message " + seq + " twice";
    }
    seen.set(seq);
    return null;
  }
}
