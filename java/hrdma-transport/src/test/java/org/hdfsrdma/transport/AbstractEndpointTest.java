package org.hdfsrdma.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import org.junit.jupiter.api.Test;

/** Credit accounting and the close protocol of the shared endpoint base, on a fake wire. */
class AbstractEndpointTest {

  /** Runs I/O tasks inline on the caller; records what goes on the wire. */
  private static final class FakeEndpoint extends AbstractEndpoint {
    final List<RegisteredBuffer> wire = new ArrayList<>();
    final List<AbstractEndpoint.SendCompletion> pendingDone = new ArrayList<>();
    final List<Integer> creditsSent = new ArrayList<>();
    boolean ioGone;
    int closes;

    FakeEndpoint(EndpointHandler h) {
      super(new InetSocketAddress("127.0.0.1", 1), h);
    }

    @Override
    public Transport transport() {
      return null;
    }

    @Override
    protected boolean inIoThread() {
      return !ioGone;
    }

    @Override
    protected void executeOnIo(Runnable task) {
      if (ioGone) {
        throw new RejectedExecutionException("loop stopped");
      }
      task.run();
    }

    @Override
    protected void doSend(RegisteredBuffer message, SendCompletion done) {
      wire.add(message);
      pendingDone.add(done);
    }

    @Override
    protected void doSendCredits(int messages) {
      creditsSent.add(messages);
    }

    @Override
    protected void doClose() {
      closes++;
      closed(null);
    }

    void hello(int peerCredits, int ownCredits) {
      helloDone(peerCredits, ownCredits, 1 << 20, EnumSet.noneOf(Capability.class), false);
    }

    /** As the side that accepted the connection (it answers the peer). */
    void helloAccepted(int peerCredits, int ownCredits) {
      helloDone(peerCredits, ownCredits, 1 << 20, EnumSet.noneOf(Capability.class), true);
    }

    void receive(RegisteredBuffer m) {
      deliver(m);
    }

    /** The transport has written every send it was handed (their futures complete). */
    void written() {
      for (AbstractEndpoint.SendCompletion f : List.copyOf(pendingDone)) {
        f.succeeded();
      }
    }
  }

  private final BufferPool pool = new BufferPool(SlabAllocator.DIRECT, 1 << 16, 1 << 20);

  private static final class Recorder implements EndpointHandler {
    final List<RegisteredBuffer> got = new ArrayList<>();
    final List<Throwable> closedWith = new ArrayList<>();
    int closedCalls;

    @Override
    public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
      got.add(message);
    }

    @Override
    public void onClosed(Endpoint endpoint, Throwable cause) {
      closedCalls++;
      closedWith.add(cause);
    }
  }

  @Test
  void sendsBeyondTheCreditsWaitAndGrantsReleaseThem() throws Exception {
    FakeEndpoint ep = new FakeEndpoint(new Recorder());
    ep.hello(2, 8);
    CompletableFuture<Void> a = ep.send(pool.allocate(10));
    ep.send(pool.allocate(10));
    CompletableFuture<Void> c = ep.send(pool.allocate(10));
    assertEquals(2, ep.wire.size(), "two credits, two on the wire");
    assertFalse(ep.isWritable());
    assertFalse(c.isDone());
    ep.creditsGranted(1);
    assertEquals(3, ep.wire.size());
    assertTrue(ep.isWritable());
    ep.wire.forEach(RegisteredBuffer::release);
    ep.pendingDone.forEach(AbstractEndpoint.SendCompletion::succeeded);
    assertTrue(a.isDone() && c.isDone());
    assertEquals(0, pool.buffersOutstanding());
  }

  /**
   * The stall a DataNode closes a connection for: none while no send waits; measured from the
   * start of a wait (not from the last send of long ago), over sends queued for credits and sends
   * on the wire not completed; reset by each completion, whether it succeeded or not, and by none
   * of the other sends; none once the connection closed.
   */
  @Test
  void sendStallCountsSendsQueuedOrOnTheWireUntilTheyComplete() throws Exception {
    FakeEndpoint ep = new FakeEndpoint(new Recorder());
    ep.hello(1, 8);
    long far = 3_600_000_000_000L;
    assertEquals(0, ep.sendStallNanos(System.nanoTime() + far), "nothing sent: no stall");
    long t0 = System.nanoTime();
    CompletableFuture<Void> a = ep.send(pool.allocate(10)); // on the wire
    CompletableFuture<Void> b = ep.send(pool.allocate(10)); // waits for a credit
    long t1 = System.nanoTime();
    long s = ep.sendStallNanos(t1 + far);
    assertTrue(s >= far && s <= far + (t1 - t0), "measured from the first send: " + s);
    ep.pendingDone.get(0).succeeded();
    assertTrue(a.isDone());
    long t2 = System.nanoTime();
    s = ep.sendStallNanos(t2 + far);
    assertTrue(s >= far && s <= far + (System.nanoTime() - t1), "b still waits, from a's completion: " + s);
    ep.creditsGranted(1);
    assertEquals(2, ep.wire.size());
    assertTrue(ep.sendStallNanos(System.nanoTime() + far) > 0, "b is on the wire, not completed");
    ep.pendingDone.get(1).failed(new TransportException("failed"));
    assertTrue(b.isDone());
    assertEquals(0, ep.sendStallNanos(System.nanoTime() + far), "all completed");
    // a send that waits fails when the connection closes: nothing waits then
    CompletableFuture<Void> c = ep.send(pool.allocate(10)); // both wait for a credit
    ep.send(pool.allocate(10));
    assertEquals(2, ep.wire.size());
    assertTrue(ep.sendStallNanos(System.nanoTime() + far) > 0);
    ep.close();
    assertTrue(c.isCompletedExceptionally());
    assertEquals(0, ep.sendStallNanos(System.nanoTime() + far), "closed: nothing waits");
    ep.wire.forEach(RegisteredBuffer::release);
    assertEquals(0, pool.buffersOutstanding());
  }

  /**
   * A caller that cancels or fails a send's future does not count the send out: its message is
   * still queued or being written, and a peer that takes nothing still shows as a stall (what a
   * DataNode closes a connection for at the write timeout). Only the transport's report, or the
   * close, ends the wait; a send reported twice counts out once.
   */
  @Test
  void aSendCancelledOrFailedByItsCallerStillWaitsUntilTheTransportReportsIt() throws Exception {
    FakeEndpoint ep = new FakeEndpoint(new Recorder());
    ep.hello(1, 8);
    long far = 3_600_000_000_000L;
    CompletableFuture<Void> a = ep.send(pool.allocate(10)); // on the wire, not completed
    CompletableFuture<Void> b = ep.send(pool.allocate(10)); // waits for a credit
    assertTrue(a.cancel(false));
    assertTrue(b.cancel(false));
    assertTrue(b.cancel(false)); // CompletableFuture answers true again
    assertTrue(ep.sendStallNanos(System.nanoTime() + far) > 0, "both sends still wait, cancelled or not");
    ep.pendingDone.get(0).succeeded(); // a is written: progress, b still waits for a credit
    ep.pendingDone.get(0).succeeded(); // reported twice: counted out once
    assertEquals(1, ep.pendingSends());
    assertTrue(ep.sendStallNanos(System.nanoTime() + far) > 0, "b still waits for its credit");
    ep.creditsGranted(1);
    assertEquals(2, ep.wire.size(), "a cancelled send still goes out: its message is the transport's");
    assertTrue(ep.sendStallNanos(System.nanoTime() + far) > 0, "b is on the wire, not completed");
    ep.pendingDone.get(1).succeeded();
    assertEquals(0, ep.sendStallNanos(System.nanoTime() + far), "nothing waits");
    assertTrue(a.isCancelled() && b.isCancelled(), "the caller's cancel stands");

    CompletableFuture<Void> c = ep.send(pool.allocate(10)); // waits for a credit
    assertTrue(c.completeExceptionally(new IllegalStateException("the caller gave up")));
    assertFalse(c.complete(null));
    assertTrue(c.isCompletedExceptionally());
    assertTrue(ep.sendStallNanos(System.nanoTime() + far) > 0, "c still waits, failed by its caller");
    ep.close();
    assertEquals(0, ep.sendStallNanos(System.nanoTime() + far), "closed: nothing waits");
    ep.wire.forEach(RegisteredBuffer::release);
    assertEquals(0, pool.buffersOutstanding());
  }

  /**
   * The accepting side answers each message and releases it at once; the peer grants nothing back.
   * Once a window of answers waits for the peer's credits, released messages are no longer granted
   * back; the credits held back go out, all of them, once the peer takes enough for the queue to
   * fall below the window.
   */
  @Test
  void aPeerOwedAWindowOfAnswersIsGrantedNoCreditsUntilItTakesThem() throws Exception {
    Recorder h = new Recorder();
    FakeEndpoint ep = new FakeEndpoint(h);
    ep.helloAccepted(4, 8);
    long stalls = AbstractEndpoint.backlogStalls();
    // the peer sends every message its credits allow: 8 at first, 4 more with each grant
    for (int i = 0; i < 8 + 4 + 4 + 4; i++) {
      ep.receive(pool.allocate(10));
      h.got.remove(0).release();
      ep.send(pool.allocate(10));
    }
    // grants went at 4, 8 and 12 released (0, 3 and 7 answers waiting); at 16, 11 waited: held back
    assertEquals(List.of(4, 4, 4), ep.creditsSent, "credits granted while the answers backed up");
    assertEquals(4, ep.wire.size());
    assertEquals(16, ep.pendingSends(), "two windows at most");
    assertEquals(stalls + 1, AbstractEndpoint.backlogStalls());
    ep.written(); // an honest peer grants back what it received, so what was written
    ep.creditsGranted(4); // the peer takes some: a window still waits, still nothing granted
    ep.written();
    ep.creditsGranted(4);
    assertEquals(8, ep.pendingSends());
    assertEquals(List.of(4, 4, 4), ep.creditsSent);
    ep.written();
    ep.creditsGranted(1); // below the window: the 8 released since the last grant go at once
    assertEquals(7, ep.pendingSends());
    assertEquals(List.of(4, 4, 4, 8), ep.creditsSent);
    ep.written();
    ep.creditsGranted(4);
    ep.written();
    ep.creditsGranted(3);
    assertEquals(0, ep.pendingSends());
    assertTrue(ep.isWritable());
    ep.wire.forEach(RegisteredBuffer::release);
    assertEquals(0, pool.buffersOutstanding());
  }

  /**
   * A peer that grants credits back for answers it never received (over tcp: it does not read its
   * socket, so they wait in the transport's buffer, not in the credit queue) is granted nothing
   * once more sends wait unwritten than its window and ours; what was held back goes to it as
   * soon as the transport has written enough, without a grant of its own.
   */
  @Test
  void aPeerGrantingBackWhatItNeverReceivedIsGrantedNoCredits() throws Exception {
    Recorder h = new Recorder();
    FakeEndpoint ep = new FakeEndpoint(h);
    ep.helloAccepted(4, 8);
    int received = 0;
    // the peer sends a message whenever it holds a credit of ours, and grants back each answer at once
    for (int i = 0; i < 200 && ep.creditsSent.stream().mapToInt(Integer::intValue).sum() + 8 > received; i++) {
      ep.receive(pool.allocate(10));
      received++;
      h.got.remove(0).release();
      ep.send(pool.allocate(10));
      ep.creditsGranted(1);
    }
    int granted = ep.creditsSent.stream().mapToInt(Integer::intValue).sum();
    assertTrue(received < 200, "the peer ran out of credits: " + received + " sent, " + granted + " granted back");
    assertEquals(0, ep.pendingSends(), "nothing waits for its credits");
    assertTrue(ep.wire.size() <= 4 + 8 + 8 + 1, ep.wire.size() + " answers handed to the transport, none written");
    ep.written(); // the transport writes them: the credits held back go out with no grant of the peer's
    assertTrue(ep.creditsSent.stream().mapToInt(Integer::intValue).sum() > granted, "granted again once written");
    ep.close();
    ep.wire.forEach(RegisteredBuffer::release);
    assertEquals(0, pool.buffersOutstanding());
  }

  /** The connecting side never holds credits back, however long its queue (see the class comment). */
  @Test
  void theConnectingSideGrantsWhateverItsQueue() throws Exception {
    Recorder h = new Recorder();
    FakeEndpoint ep = new FakeEndpoint(h);
    ep.hello(1, 8);
    for (int i = 0; i < 100; i++) {
      ep.send(pool.allocate(10));
    }
    for (int i = 0; i < 8; i++) {
      ep.receive(pool.allocate(10));
      h.got.remove(0).release();
    }
    assertEquals(99, ep.pendingSends());
    assertEquals(List.of(4, 4), ep.creditsSent);
    ep.close();
    ep.wire.forEach(RegisteredBuffer::release);
    assertEquals(0, pool.buffersOutstanding());
  }

  @Test
  void releasedMessagesAreGrantedBackInBatchesOfHalfTheWindow() throws Exception {
    Recorder h = new Recorder();
    FakeEndpoint ep = new FakeEndpoint(h);
    ep.hello(4, 8);
    for (int i = 0; i < 8; i++) {
      ep.receive(pool.allocate(1));
    }
    assertEquals(List.of(), ep.creditsSent, "nothing released yet");
    for (int i = 0; i < 3; i++) {
      h.got.get(i).release();
    }
    assertEquals(List.of(), ep.creditsSent);
    h.got.get(3).release();
    assertEquals(List.of(4), ep.creditsSent);
    for (int i = 4; i < 8; i++) {
      h.got.get(i).release();
    }
    assertEquals(List.of(4, 4), ep.creditsSent);
    assertEquals(0, pool.buffersOutstanding());
  }

  @Test
  void closeFailsQueuedSendsAndTellsTheHandlerOnce() throws Exception {
    Recorder h = new Recorder();
    FakeEndpoint ep = new FakeEndpoint(h);
    ep.hello(0, 8);
    CompletableFuture<Void> queued = ep.send(pool.allocate(10));
    ep.close();
    ep.close();
    ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
        queued::get);
    assertInstanceOf(TransportException.Closed.class, e.getCause());
    assertEquals(1, ep.closes);
    assertEquals(1, h.closedCalls);
    assertNull(h.closedWith.get(0));
    assertTrue(ep.closeFuture().isDone());
    assertEquals(0, pool.buffersOutstanding());
  }

  @Test
  void closeAfterTheIoThreadStoppedStillTellsTheHandler() throws Exception {
    Recorder h = new Recorder();
    FakeEndpoint ep = new FakeEndpoint(h);
    ep.hello(1, 8);
    ep.ioGone = true;
    ep.close();
    assertTrue(ep.closeFuture().isDone());
    assertEquals(1, h.closedCalls, "handler told of the close");
    CompletableFuture<Void> late = ep.send(pool.allocate(1));
    assertTrue(late.isCompletedExceptionally());
    assertEquals(0, pool.buffersOutstanding());
  }

  @Test
  void aHandlerThatNeverSawTheEndpointIsNotToldOfItsEnd() {
    Recorder h = new Recorder();
    FakeEndpoint ep = new FakeEndpoint(h);
    ep.close(); // before any hello
    assertTrue(ep.closeFuture().isDone());
    assertEquals(0, h.closedCalls);
  }

  @Test
  void poolRoundsToSizeClassesAndReusesChunks() throws Exception {
    RegisteredBuffer a = pool.allocate(5000);
    assertEquals(8192, a.capacity());
    assertEquals(5000, a.nio().limit());
    long addr = a.address();
    a.release();
    RegisteredBuffer b = pool.allocate(8192);
    assertEquals(addr, b.address(), "freed chunk reused first");
    RegisteredBuffer big = pool.allocate((1 << 16) + 1); // larger than a slab
    long before = pool.bytesRegistered();
    big.release();
    assertTrue(pool.bytesRegistered() < before, "a dedicated slab is freed on release");
    b.release();
    assertEquals(0, pool.buffersOutstanding());
    Set<Long> seen = new java.util.HashSet<>();
    List<RegisteredBuffer> many = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      RegisteredBuffer x = pool.allocate(4096);
      assertTrue(seen.add(x.address()), "no chunk handed out twice");
      many.add(x);
    }
    many.forEach(RegisteredBuffer::release);
  }

  @Test
  void poolRefusesBeyondItsRegisteredLimit() {
    BufferPool small = new BufferPool(SlabAllocator.DIRECT, 1 << 16, 1 << 17);
    org.junit.jupiter.api.Assertions.assertThrows(TransportException.class,
        () -> small.allocate(1 << 18));
    small.close();
  }
}
