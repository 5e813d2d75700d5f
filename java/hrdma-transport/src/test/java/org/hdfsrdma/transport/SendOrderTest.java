package org.hdfsrdma.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Sends leave in the order they were made, whichever thread makes them: a send made on the
 * I/O thread must not overtake one another thread made before it that still waits in the I/O
 * thread's queue. (A DataNode sends a write's acks upstream from its disk thread and, when
 * the downstream's ack comes last, from the I/O thread; once the upstream and the downstream
 * endpoints share one I/O thread, the second overtook the first.)
 */
class SendOrderTest {
  private final ExecutorService io = Executors.newSingleThreadExecutor(r -> new Thread(r, "fake-io"));
  private final BufferPool pool = new BufferPool(SlabAllocator.DIRECT, 1 << 16, 1 << 24);

  /** An endpoint whose I/O thread is {@link #io}; records what goes on the wire. */
  private final class LoopEndpoint extends AbstractEndpoint {
    final List<Integer> wire = Collections.synchronizedList(new ArrayList<>());

    LoopEndpoint() {
      super(new InetSocketAddress("127.0.0.1", 1), (e, m) -> m.release());
    }

    @Override
    public Transport transport() {
      return null;
    }

    @Override
    protected boolean inIoThread() {
      return Thread.currentThread().getName().equals("fake-io");
    }

    @Override
    protected void executeOnIo(Runnable task) {
      io.execute(task);
    }

    @Override
    protected void doSend(RegisteredBuffer message, SendCompletion done) {
      wire.add(message.nio().getInt(message.nio().position()));
      message.release();
      done.succeeded();
    }

    @Override
    protected void doSendCredits(int messages) {}

    @Override
    protected void doClose() {
      closed(null);
    }
  }

  @AfterEach
  void stop() throws Exception {
    io.shutdownNow();
    assertTrue(io.awaitTermination(10, TimeUnit.SECONDS));
    assertEquals(0, pool.buffersOutstanding(), "buffers outstanding");
    pool.close();
  }

  private RegisteredBuffer message(int n) throws TransportException {
    RegisteredBuffer b = pool.allocate(4);
    b.nio().putInt(b.nio().position(), n);
    return b;
  }

  @Test
  @Timeout(30)
  void aSendOnTheIoThreadDoesNotOvertakeAnEarlierOneFromAnotherThread() throws Exception {
    LoopEndpoint ep = new LoopEndpoint();
    io.submit(() -> ep.helloDone(64, 64, 1 << 20, EnumSet.noneOf(Capability.class), false)).get();
    CountDownLatch first = new CountDownLatch(1);
    CompletableFuture<Void> second = new CompletableFuture<>();
    io.execute(() -> { // the I/O thread busy (delivering a message, say) while another thread sends
      try {
        first.await();
        ep.send(message(2)).whenComplete((v, t) -> second.complete(null));
      } catch (InterruptedException | TransportException e) {
        second.completeExceptionally(e);
      }
    });
    CompletableFuture<Void> one = ep.send(message(1)); // queued behind the busy task
    first.countDown(); // only now, after it, the I/O thread sends the second
    one.get(10, TimeUnit.SECONDS);
    second.get(10, TimeUnit.SECONDS);
    assertEquals(List.of(1, 2), ep.wire, "messages on the wire in the order they were sent");
    io.submit(ep::close).get();
  }

  @Test
  @Timeout(60)
  void sendsFromTwoThreadsTakingTurnsStayInOrder() throws Exception {
    LoopEndpoint ep = new LoopEndpoint();
    io.submit(() -> ep.helloDone(1 << 20, 64, 1 << 20, EnumSet.noneOf(Capability.class), false)).get();
    int n = 2_000;
    Object lock = new Object();
    int[] next = {0};
    // as an ack responder: whoever's turn it is sends the next number under one lock
    Runnable worker = () -> {
      while (true) {
        synchronized (lock) {
          if (next[0] >= n) {
            return;
          }
          try {
            ep.send(message(next[0]++));
          } catch (TransportException e) {
            throw new IllegalStateException(e);
          }
        }
      }
    };
    CompletableFuture<Void> onIo = new CompletableFuture<>();
    Thread other = new Thread(worker);
    other.start();
    io.execute(ioTurn(ep, lock, next, n, onIo)); // the I/O thread takes turns too, one send a task
    other.join(30_000);
    onIo.get(30, TimeUnit.SECONDS);
    io.submit(() -> { }).get(); // every queued send ran
    assertEquals(n, ep.wire.size());
    for (int i = 0; i < n; i++) {
      if (ep.wire.get(i) != i) {
        throw new AssertionError("message " + ep.wire.get(i) + " went out as the " + i + "th");
      }
    }
    io.submit(ep::close).get();
  }

  private Runnable ioTurn(LoopEndpoint ep, Object lock, int[] next, int n, CompletableFuture<Void> onIo) {
    return () -> {
      synchronized (lock) {
        if (next[0] < n) {
          try {
            ep.send(message(next[0]++));
          } catch (TransportException e) {
            onIo.completeExceptionally(e);
            return;
          }
        }
      }
      if (next[0] < n) {
        io.execute(ioTurn(ep, lock, next, n, onIo));
      } else {
        onIo.complete(null);
      }
    };
  }
}
