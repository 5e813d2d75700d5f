package org.hdfsrdma.transport;

import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every transport's endpoint shares: credit-based flow control, the send
 * queue, message-size bounds, and the close protocol. A subclass supplies the
 * I/O thread and the wire.
 *
 * <p>Credits: each side advertises in its hello how many messages it can hold
 * unreleased. A sender spends one per message and queues when it has none;
 * the receiver grants them back (in batches of half its window) as its
 * handler releases messages. Both sides of it are enforced, whatever the transport: a peer
 * that grants back more messages than it has been sent, or sends more than this side's
 * window while it holds them, breaks the protocol and the connection is closed
 * ({@link TransportException.Protocol}); it can neither make this side send past its window
 * nor pin more than this side's window of received messages.
 *
 * <p>Answers back up: a peer that keeps sending (its messages released at once, so their
 * credits come back to it) while it grants none back for what this side sends would have those
 * sends queued here without bound. So on the side that accepted the connection (the one that
 * answers: a DataNode), while at least a window of sends ({@code ownCredits}, what this side
 * advertised) waits for the peer's credits, credits released here are not granted back: the
 * peer runs out of them and can send nothing more until it takes what it is owed (stock's
 * DataXceiver blocks writing its answer and reads nothing more meanwhile). The queue then holds
 * at most that window plus the one the peer still had, for messages answered once each
 * ({@link #pendingSends}); the withheld credits go out as soon as the queue is below the window
 * again. Sends handed to the transport and not yet written count too, past the peer's window and
 * this side's together: only a peer granting back what it never received (over tcp, one that
 * does not read its socket) gets there; those credits go out again as the sends are written.
 * Logged once per endpoint, counted ({@link #backlogStalls}). The connecting side never
 * withholds: if both sides did, each could wait for the other's credits for ever (a client whose
 * writes queue behind a slow disk would withhold, the DataNode's acks then back up and it would
 * withhold too).
 *
 * <p>Send progress: {@link #sendStallNanos} tells for how long sends have waited here (queued
 * for the peer's credits, or handed to the transport and not completed) without any of them
 * completing, so that the owner can close a connection whose peer takes nothing (a DataNode does
 * at dfs.datanode.socket.write.timeout, as stock's DataXceiver). Kept with an atomic count and a
 * volatile time, and no allocation: each send's future (which existed before) counts itself.
 */
public abstract class AbstractEndpoint implements Endpoint {
  protected final EndpointHandler handler;
  private final InetSocketAddress remote;
  private final CompletableFuture<Void> closeFuture = new CompletableFuture<>();
  private final AtomicInteger releasedSinceGrant = new AtomicInteger();
  /** Sends made off the I/O thread whose task has not run yet: a send on the I/O thread queues behind them. */
  private final AtomicInteger queuedSends = new AtomicInteger();
  private final ArrayDeque<PendingSend> pending = new ArrayDeque<>(); // I/O thread only
  private int sendCredits; // I/O thread only
  private int peerWindow; // the credits the peer advertised; I/O thread only
  private int creditBatch = 1;
  /** Messages this side may hold for the peer (what it advertised); unbounded until the hello. */
  private volatile int ownCredits = Integer.MAX_VALUE;
  /** Received messages counted against this side's credits and not released yet. */
  private final AtomicInteger held = new AtomicInteger();
  /** Credits taken with {@link #takeCredit} for messages not delivered (or returned) yet. */
  private final AtomicInteger prepaid = new AtomicInteger();
  private int peerMaxMessage = Integer.MAX_VALUE;
  /** Sends waiting for the peer's credits at which this side stops granting it any (its own window). */
  private int backlogLimit = Integer.MAX_VALUE;
  private volatile boolean withholding; // written on the I/O thread: credits are not granted back while backed up
  private boolean stallLogged; // I/O thread only
  private volatile int pendingCount; // pending.size(), readable from any thread
  private Set<Capability> capabilities = EnumSet.noneOf(Capability.class);
  private volatile boolean writable = true;
  private volatile boolean closed;
  private boolean announced; // the hello finished: the handler knows this endpoint
  /** Sends queued for credits or passed to {@link #doSend} whose future has not completed. */
  private final AtomicInteger waitingSends = new AtomicInteger();
  /** nanoTime of the last send completion, or of the start of a wait when no send waited before. */
  private volatile long sendProgressNanos = System.nanoTime();

  /** Endpoints of every transport in this process not closed yet. */
  private static final Set<AbstractEndpoint> OPEN = ConcurrentHashMap.newKeySet();
  /** Times an endpoint of this process stopped granting credits to a peer that took none of its sends. */
  private static final AtomicLong STALLS = new AtomicLong();
  private static final Logger LOG = LoggerFactory.getLogger(AbstractEndpoint.class);

  private record PendingSend(RegisteredBuffer message, SendFuture done) {}

  /**
   * How a transport tells that a send {@link #doSend} handed it is done: exactly once, when its
   * message is written (or UCX reports it sent), or when it fails or the connection's close fails
   * it. Only this counts the send out of {@link #waitingSends}: the caller's future may be
   * cancelled or completed by the caller meanwhile, and the message still waits.
   */
  protected interface SendCompletion {
    /** The message is sent: the send's future completes, and the send counts as progress. */
    void succeeded();

    /** The message is not sent and never will be: the send's future fails with {@code cause}. */
    void failed(Throwable cause);
  }

  /**
   * A send's future, counted in {@link #waitingSends} from the time the send is queued or passed
   * to the transport until the transport or a close completes it ({@link SendCompletion}). A
   * caller that cancels or completes the future itself does not count the send out: its message
   * is still queued or being written, and a peer that takes nothing must show as a stall.
   */
  private final class SendFuture extends CompletableFuture<Void> implements SendCompletion {
    private boolean counted; // guarded by this: counted in and not out yet

    /** On the I/O thread, before the transport or the queue has the send. */
    void count() {
      synchronized (this) {
        counted = true;
      }
      if (waitingSends.get() == 0) {
        sendProgressNanos = System.nanoTime(); // a wait begins: measured from now, not the last send
      }
      waitingSends.incrementAndGet();
    }

    @Override
    public void succeeded() {
      complete(null);
      ended();
    }

    @Override
    public void failed(Throwable cause) {
      completeExceptionally(cause);
      ended();
    }

    /** Counts the send out, once however often the transport reports it. */
    private void ended() {
      synchronized (this) {
        if (!counted) {
          return;
        }
        counted = false;
      }
      sendProgressNanos = System.nanoTime();
      waitingSends.decrementAndGet();
      if (withholding) { // a send written may be what the peer was owed: grant again if so
        try {
          executeOnIo(AbstractEndpoint.this::resumeIfTaken);
        } catch (RuntimeException e) {
          // transport closed: nobody to grant to
        }
      }
    }
  }

  protected AbstractEndpoint(InetSocketAddress remote, EndpointHandler handler) {
    this.remote = remote;
    this.handler = handler;
    OPEN.add(this);
  }

  /** Endpoints created in this process and not closed yet, over every transport (a leak check). */
  public static List<String> openEndpoints() {
    return OPEN.stream().map(e -> e.getClass().getSimpleName() + "[" + e.remote + "]").sorted().toList();
  }

  /**
   * Times, in this process, an endpoint stopped granting credits back because a window of its
   * sends waited for the peer's credits (a peer that does not take what it is sent).
   */
  public static long backlogStalls() {
    return STALLS.get();
  }

  /** True on this endpoint's I/O thread. */
  protected abstract boolean inIoThread();

  /** Runs {@code task} on the I/O thread, soon. */
  protected abstract void executeOnIo(Runnable task);

  /**
   * Puts one message on the wire (I/O thread). Must release {@code message}
   * and report {@code done} exactly once, also on failure.
   */
  protected abstract void doSend(RegisteredBuffer message, SendCompletion done);

  /** Sends a credit grant (I/O thread). */
  protected abstract void doSendCredits(int messages);

  /** Starts closing the connection (I/O thread); must end in {@link #closed}. */
  protected abstract void doClose();

  /**
   * Called once the hello exchange is done (I/O thread).
   *
   * @param peerCredits messages the peer can hold unreleased
   * @param ownCredits messages this side advertised
   * @param peerMaxMessage the largest message the peer accepts
   * @param accepted this side accepted the connection (it answers the peer's requests): it stops
   *     granting credits to a peer that does not take what it is sent; the connecting side never
   *     does, so that two sides never both wait for the other's credits
   */
  protected final void helloDone(int peerCredits, int ownCredits, int peerMaxMessage,
      Set<Capability> common, boolean accepted) {
    this.announced = true;
    this.sendCredits = peerCredits;
    this.peerWindow = peerCredits;
    this.creditBatch = Math.max(1, ownCredits / 2);
    this.ownCredits = Math.max(1, ownCredits);
    this.backlogLimit = accepted ? this.ownCredits : Integer.MAX_VALUE;
    this.peerMaxMessage = peerMaxMessage;
    this.capabilities = common.isEmpty() ? EnumSet.noneOf(Capability.class) : EnumSet.copyOf(common);
  }

  @Override
  public InetSocketAddress remoteAddress() {
    return remote;
  }

  @Override
  public Set<Capability> capabilities() {
    return capabilities;
  }

  @Override
  public final CompletableFuture<Void> send(RegisteredBuffer message) {
    FrameTap.sent(message);
    SendFuture done = new SendFuture();
    // In the order of the calls: a send on the I/O thread goes at once only when no earlier
    // send from another thread still waits in the I/O thread's queue (a DataNode acks upstream
    // from its disk thread and from the I/O thread its downstream's acks come in on; with both
    // endpoints on one I/O thread an ack went up before the one queued before it).
    if (inIoThread() && queuedSends.get() == 0) {
      sendOnIo(message, done);
    } else {
      queuedSends.incrementAndGet();
      try {
        executeOnIo(() -> {
          queuedSends.decrementAndGet();
          sendOnIo(message, done);
        });
      } catch (RuntimeException e) {
        queuedSends.decrementAndGet();
        message.release();
        done.failed(new TransportException.Closed("transport closed"));
      }
    }
    return done;
  }

  private void sendOnIo(RegisteredBuffer message, SendFuture done) {
    if (closed) {
      message.release();
      done.failed(new TransportException.Closed("endpoint closed"));
      return;
    }
    if (message.readableBytes() > peerMaxMessage) {
      int n = message.readableBytes();
      message.release();
      done.failed(new TransportException.Protocol(
          "message of " + n + " bytes exceeds the peer's limit of " + peerMaxMessage));
      return;
    }
    done.count();
    if (sendCredits > 0 && pending.isEmpty()) {
      sendCredits--;
      doSend(message, done);
    } else {
      pending.addLast(new PendingSend(message, done));
      pendingCount = pending.size();
      writable = false;
    }
  }

  @Override
  public int pendingSends() {
    return pendingCount;
  }

  @Override
  public long sendStallNanos(long now) {
    if (waitingSends.get() == 0) {
      return 0;
    }
    return Math.max(0, now - sendProgressNanos);
  }

  /**
   * The peer granted credits (I/O thread). A grant of more messages than are unacknowledged
   * (sent and not granted back) is a protocol violation that closes the connection: added
   * up, such grants would let this side send past the peer's window, or wrap the count.
   */
  protected final void creditsGranted(int messages) {
    int unacknowledged = peerWindow - sendCredits;
    if (messages <= 0 || messages > unacknowledged) {
      closeWith(new TransportException.Protocol("credit grant of " + Integer.toUnsignedString(messages)
          + " messages with " + unacknowledged + " unacknowledged"));
      return;
    }
    sendCredits += messages;
    while (sendCredits > 0 && !pending.isEmpty() && !closed) {
      PendingSend p = pending.pollFirst();
      pendingCount = pending.size();
      sendCredits--;
      doSend(p.message, p.done);
    }
    if (pending.isEmpty()) {
      writable = true;
    }
    resumeIfTaken();
  }

  /**
   * Whether the peer is owed more than an honest peer can be (I/O thread): a window of sends
   * queued for its credits, or more sends handed to the transport and not yet written than its
   * window and ours together, which only a peer granting credits back for messages it never
   * received can cause (over tcp, one that does not read its socket: those answers wait in
   * the transport's buffer, not in the credit queue). The connecting side is never backed up.
   */
  private boolean backedUp() {
    if (backlogLimit == Integer.MAX_VALUE) {
      return false;
    }
    int queued = pending.size();
    return queued >= backlogLimit || (long) waitingSends.get() - queued > (long) peerWindow + backlogLimit;
  }

  /** The peer takes its sends again (I/O thread): the credits held back go to it now. */
  private void resumeIfTaken() {
    if (withholding && !closed && !backedUp()) {
      withholding = false;
      if (releasedSinceGrant.get() >= creditBatch) {
        doSendCredits(releasedSinceGrant.getAndSet(0));
      }
    }
  }

  /**
   * Takes one of the credits granted to the peer for a message about to be received, before
   * its buffer is allocated (I/O thread): false when the peer already holds every credit it
   * was granted, a protocol error the caller closes the connection for. The credit comes back
   * when the delivered message is released, or with {@link #returnCredit} if it never is.
   */
  protected final boolean takeCredit() {
    if (held.incrementAndGet() > ownCredits) {
      held.decrementAndGet();
      return false;
    }
    prepaid.incrementAndGet();
    return true;
  }

  /** Gives back a credit taken for a message that is dropped without being delivered. */
  protected final void returnCredit() {
    prepaid.decrementAndGet();
    held.decrementAndGet();
  }

  /** The credits granted to the peer, for error messages. */
  protected final int ownCredits() {
    return ownCredits;
  }

  /** Hands a received message to the handler (I/O thread). */
  protected final void deliver(RegisteredBuffer message) {
    // transports that allocate only within credits took this message's with takeCredit
    boolean paid = prepaid.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0;
    if (!paid && held.incrementAndGet() > ownCredits) {
      // a peer that ignores its credits must not pin more than this side's window
      held.decrementAndGet();
      message.release();
      closeWith(new TransportException.Protocol("peer sent more than the " + ownCredits
          + " messages its credits allow"));
      return;
    }
    message.onRelease(this::messageReleased);
    FrameTap.received(message);
    try {
      handler.onMessage(this, message);
    } catch (RuntimeException e) {
      // A handler bug must not kill the I/O thread; the message is the handler's.
      closeWith(new TransportException("handler failed: " + e, 0, e));
    }
  }

  private void messageReleased() {
    held.decrementAndGet();
    if (releasedSinceGrant.incrementAndGet() == creditBatch) {
      try {
        executeOnIo(this::grantReleased);
      } catch (RuntimeException e) {
        // transport closed: nobody to grant to
      }
    }
  }

  /** Grants the credits of released messages back (I/O thread), unless the peer is not taking its sends. */
  private void grantReleased() {
    if (closed) {
      return;
    }
    if (withholding || backedUp()) {
      if (!withholding) {
        withholding = true;
        STALLS.incrementAndGet();
        String what = "hrdma transport: {} sends to {} wait for its credits and {} more are not written yet (a"
            + " window: {}); granting it no credits until it takes them";
        int queued = pending.size();
        if (!stallLogged) {
          stallLogged = true;
          LOG.info(what, queued, remote, waitingSends.get() - queued, backlogLimit);
        } else {
          LOG.debug(what, queued, remote, waitingSends.get() - queued, backlogLimit);
        }
      }
      return; // granted once the peer has taken enough: on its next grant, or as sends are written
    }
    int n = releasedSinceGrant.getAndSet(0);
    if (n > 0) {
      doSendCredits(n);
    }
  }

  @Override
  public boolean isWritable() {
    return writable && !closed;
  }

  public boolean isClosed() {
    return closed;
  }

  /**
   * The connection is gone (I/O thread): fails queued sends, tells the
   * handler once (if it ever saw the endpoint), completes {@link #closeFuture()}.
   */
  protected final void closed(Throwable cause) {
    if (closed && closeFuture.isDone()) {
      return;
    }
    OPEN.remove(this);
    closed = true;
    writable = false;
    TransportException failure = cause instanceof TransportException te ? te
        : new TransportException.Closed("endpoint closed");
    PendingSend p;
    while ((p = pending.pollFirst()) != null) {
      p.message.release();
      p.done.failed(failure);
    }
    pendingCount = 0;
    try {
      if (announced) {
        handler.onClosed(this, cause);
      }
    } finally {
      if (cause == null) {
        closeFuture.complete(null);
      } else {
        closeFuture.completeExceptionally(cause);
      }
    }
  }

  /** Closes because of {@code cause} (I/O thread). */
  protected final void closeWith(Throwable cause) {
    if (closeFuture.isDone()) {
      return;
    }
    boolean was = closed;
    closed = true;
    if (!was) {
      doClose();
    }
    closed(cause);
  }

  @Override
  public CompletableFuture<Void> closeFuture() {
    return closeFuture;
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    Runnable r = () -> {
      if (!closed) {
        closed = true;
        writable = false;
        PendingSend p;
        TransportException failure = new TransportException.Closed("endpoint closed");
        while ((p = pending.pollFirst()) != null) {
          p.message.release();
          p.done.failed(failure);
        }
        pendingCount = 0;
        doClose();
      }
    };
    if (inIoThread()) {
      r.run();
    } else {
      try {
        executeOnIo(r);
      } catch (RuntimeException e) {
        // The I/O thread is gone, so nothing else touches this endpoint: finish here.
        closed(null);
      }
    }
  }

  @Override
  public RemoteRegion expose(RegisteredBuffer buffer) throws TransportException {
    throw new UnsupportedOperationException(transport().name() + " has no one-sided access");
  }

  @Override
  public CompletableFuture<Void> write(RegisteredBuffer source, RemoteRegion target, long offset) {
    source.release();
    return CompletableFuture.failedFuture(
        new UnsupportedOperationException(transport().name() + " has no one-sided access"));
  }

  @Override
  public CompletableFuture<Void> read(RegisteredBuffer target, RemoteRegion source, long offset) {
    target.release();
    return CompletableFuture.failedFuture(
        new UnsupportedOperationException(transport().name() + " has no one-sided access"));
  }

  @Override
  public CompletableFuture<Void> flush() {
    return CompletableFuture.completedFuture(null);
  }

  @Override
  public String toString() {
    return transport().name() + "-endpoint[" + remote + (closed ? ", closed" : "") + "]";
  }
}
