package org.hdfsrdma.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterAll;

/**
 * Coverage-guided fuzzing of the credit flow control every transport shares
 * ({@link AbstractEndpoint}), driven by a hostile peer: it advertises any window, grants any
 * number of credits at any time, sends whether it has credits or not. Properties: this side
 * never has more messages unacknowledged than the peer's window; a grant of more than is
 * unacknowledged, or a message past this side's window, closes the connection with a
 * {@link TransportException.Protocol} (and only these do); this side grants back no more than
 * its handler released, and, on the accepting side, none while a window of its sends waits for
 * the peer's credits; every send completes and every buffer is released by the end.
 * Seeds: {@code EndpointCreditFuzzTestInputs/peer/}.
 */
class EndpointCreditFuzzTest {
  private static final BufferPool POOL = new BufferPool(SlabAllocator.DIRECT, 1 << 16, 16 << 20);

  @AfterAll
  static void closePool() {
    assertEquals(0, POOL.buffersOutstanding(), "buffers leaked");
    POOL.close();
  }

  /** Runs I/O inline; the wire is a list. */
  private static final class Fake extends AbstractEndpoint {
    final ArrayDeque<RegisteredBuffer> wire = new ArrayDeque<>();
    final List<AbstractEndpoint.SendCompletion> inFlight = new ArrayList<>();
    long granted;

    Fake(EndpointHandler h) {
      super(new InetSocketAddress("127.0.0.1", 1), h);
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
    protected void doSend(RegisteredBuffer message, SendCompletion done) {
      wire.add(message);
      inFlight.add(done);
    }

    @Override
    protected void doSendCredits(int messages) {
      granted += messages;
    }

    @Override
    protected void doClose() {
      // a transport's close completes later, on its I/O thread: see finishClose
    }

    void finishClose() {
      closed(null);
    }
  }

  private static final class Holder implements EndpointHandler {
    final ArrayDeque<RegisteredBuffer> held = new ArrayDeque<>();
    long released;

    @Override
    public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
      held.add(message);
    }
  }

  @FuzzTest(maxDuration = "30s")
  void peer(FuzzedDataProvider data) throws Exception {
    int peerWindow = data.consumeInt(1, 64);
    int ownWindow = data.consumeInt(1, 64);
    Holder h = new Holder();
    Fake ep = new Fake(h);
    boolean accepted = data.consumeBoolean(); // the accepting side holds credits back while its sends back up
    ep.helloDone(peerWindow, ownWindow, 1 << 16, EnumSet.noneOf(Capability.class), accepted);
    long sent = 0; // messages on the wire, as the peer sees them
    long ackedByPeer = 0; // credits the peer granted back
    long peerSent = 0;
    List<CompletableFuture<Void>> sends = new ArrayList<>();
    Throwable protocolCause = null;
    int steps = data.consumeInt(0, 200);
    for (int i = 0; i < steps && !ep.isClosed(); i++) {
      long grantedBefore = ep.granted;
      int queuedBefore = ep.pendingSends();
      switch (data.consumeInt(0, 4)) {
        case 0 -> sends.add(ep.send(POOL.allocate(16)));
        case 1 -> {
          int grant = data.consumeInt();
          long unacked = sent + ep.wire.size() - ackedByPeer;
          // what the wire carries: the peer's uint32, as the transports hand it on
          ep.creditsGranted(grant);
          if (grant <= 0 || grant > unacked) {
            assertTrue(ep.isClosed(), "a grant of " + grant + " with " + unacked + " unacknowledged was taken");
            protocolCause = ep.closeFuture().handle((v, t) -> t).get();
          } else {
            ackedByPeer += grant;
          }
        }
        case 2 -> {
          RegisteredBuffer m = POOL.allocate(8);
          peerSent++;
          boolean over = h.held.size() >= ownWindow;
          ep.deliver(m);
          if (over) {
            assertTrue(ep.isClosed(), "a message past this side's window of " + ownWindow + " was taken");
            protocolCause = ep.closeFuture().handle((v, t) -> t).get();
          }
        }
        case 3 -> {
          RegisteredBuffer m = h.held.pollFirst();
          if (m != null) {
            m.release();
            h.released++;
          }
        }
        default -> {
          // the peer receives what is on the wire
          RegisteredBuffer m = ep.wire.pollFirst();
          if (m != null) {
            m.release();
            sent++;
          }
        }
      }
      long unacknowledged = sent + ep.wire.size() - ackedByPeer;
      assertTrue(unacknowledged <= peerWindow,
          unacknowledged + " messages unacknowledged, the peer's window is " + peerWindow);
      assertTrue(ep.granted <= h.released, "granted " + ep.granted + " of " + h.released + " released");
      if (accepted && queuedBefore >= ownWindow && ep.pendingSends() >= ownWindow) {
        assertEquals(grantedBefore, ep.granted, "credits granted with a window of sends (" + ownWindow + ") queued");
      }
    }
    if (ep.isClosed()) {
      assertInstanceOf(TransportException.Protocol.class, protocolCause, "closed, not by a protocol error");
    }
    ep.close();
    ep.finishClose();
    assertTrue(ep.isClosed());
    ep.wire.forEach(RegisteredBuffer::release);
    ep.inFlight.forEach(AbstractEndpoint.SendCompletion::succeeded);
    h.held.forEach(RegisteredBuffer::release);
    for (CompletableFuture<Void> f : sends) {
      assertTrue(f.isDone(), "a send neither sent nor failed");
      try {
        f.get();
      } catch (ExecutionException e) {
        assertInstanceOf(TransportException.class, e.getCause());
      }
    }
    assertEquals(0, POOL.buffersOutstanding(), "buffers leaked");
  }
}
