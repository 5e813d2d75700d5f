package org.hdfsrdma.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Findings of {@link EndpointCreditFuzzTest}, kept as plain tests: a peer's credit grants and
 * sends are checked against both windows on every transport.
 */
class CreditViolationTest {
  private final BufferPool pool = new BufferPool(SlabAllocator.DIRECT, 1 << 16, 1 << 20);

  @AfterEach
  void noLeak() {
    assertEquals(0, pool.buffersOutstanding());
    pool.close();
  }

  private static final class Fake extends AbstractEndpoint {
    final List<RegisteredBuffer> wire = new ArrayList<>();
    final List<AbstractEndpoint.SendCompletion> done = new ArrayList<>();

    Fake(EndpointHandler h, int peerCredits, int ownCredits) {
      super(new InetSocketAddress("127.0.0.1", 1), h);
      helloDone(peerCredits, ownCredits, 1 << 16, EnumSet.noneOf(Capability.class), false);
    }

    @Override
    public Transport transport() {
      return null;
    }

    @Override
    protected boolean inIoThread() {
      return true;
    }

    @Override
    protected void executeOnIo(Runnable task) {
      task.run();
    }

    @Override
    protected void doSend(RegisteredBuffer message, SendCompletion d) {
      wire.add(message);
      done.add(d);
    }

    @Override
    protected void doSendCredits(int messages) {}

    @Override
    protected void doClose() {
      // a transport's close completes later, on its I/O thread: see finishClose
    }

    void finishClose() {
      closed(null);
    }
  }

  private static Throwable cause(Fake ep) throws InterruptedException {
    try {
      ep.closeFuture().get();
      return null;
    } catch (ExecutionException e) {
      return e.getCause();
    }
  }

  /** Two grants of 2^31 - 1 wrapped the credit count negative: every later send queued forever. */
  @Test
  void aGrantOfMoreThanIsUnacknowledgedClosesTheConnection() throws Exception {
    Fake ep = new Fake((e, m) -> m.release(), 4, 4);
    ep.send(pool.allocate(8));
    ep.creditsGranted(1); // honest: one was sent
    ep.creditsGranted(Integer.MAX_VALUE);
    assertTrue(ep.isClosed(), "a grant past the window was taken");
    assertInstanceOf(TransportException.Protocol.class, cause(ep));
    ep.wire.forEach(RegisteredBuffer::release);
  }

  @Test
  void grantsAddingUpPastTheWindowCloseTheConnection() throws Exception {
    Fake ep = new Fake((e, m) -> m.release(), 2, 4);
    CompletableFuture<Void> a = ep.send(pool.allocate(8));
    ep.send(pool.allocate(8));
    ep.creditsGranted(2);
    ep.creditsGranted(1); // nothing was unacknowledged
    assertTrue(ep.isClosed());
    assertInstanceOf(TransportException.Protocol.class, cause(ep));
    ep.wire.forEach(RegisteredBuffer::release);
    ep.done.forEach(AbstractEndpoint.SendCompletion::succeeded);
    assertTrue(a.isDone());
  }

  /** UCX and stream connections delivered whatever a peer sent, credits or not. */
  @Test
  void aPeerSendingPastThisSidesWindowIsRefused() throws Exception {
    List<RegisteredBuffer> held = new ArrayList<>();
    Fake ep = new Fake((e, m) -> held.add(m), 4, 2);
    RegisteredBuffer a = pool.allocate(8);
    RegisteredBuffer b = pool.allocate(8);
    RegisteredBuffer c = pool.allocate(8);
    ep.deliver(a);
    ep.deliver(b);
    ep.deliver(c);
    assertEquals(2, held.size(), "the third message was handed over");
    assertEquals(0, c.refCnt(), "the refused message was not released");
    assertTrue(ep.isClosed());
    assertInstanceOf(TransportException.Protocol.class, cause(ep));
    held.forEach(RegisteredBuffer::release);
  }

  @Test
  void messagesReleasedMakeRoomAgain() throws Exception {
    List<RegisteredBuffer> held = new ArrayList<>();
    Fake ep = new Fake((e, m) -> held.add(m), 4, 2);
    for (int i = 0; i < 10; i++) {
      ep.deliver(pool.allocate(8));
      held.remove(0).release();
    }
    assertTrue(!ep.isClosed(), "an honest peer was refused");
  }
}
