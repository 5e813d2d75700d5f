package org.hdfsrdma.transport.ucx;

import com.google.protobuf.InvalidProtocolBufferException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.hdfsrdma.nativelib.Jni;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.proto.HrdmaProtos.Credit;
import org.hdfsrdma.proto.HrdmaProtos.Hello;
import org.hdfsrdma.proto.HrdmaProtos.HelloReply;
import org.hdfsrdma.transport.AbstractEndpoint;
import org.hdfsrdma.transport.Capability;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.Protocol;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.RemoteRegion;
import org.hdfsrdma.transport.Slab;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the UCX endpoints share: the native endpoint's life cycle, the hello
 * exchange, credits, clean close and peer failure, and one-sided access.
 * Subclasses put frames on the wire: active messages ({@link UcxEndpoint}) or
 * the UCP byte stream ({@link StreamEndpoint}). Everything runs on the
 * transport's worker loop.
 */
abstract class UcxConnection extends AbstractEndpoint implements UcxWorkerLoop.EndpointSink {
  private static final Logger LOG = LoggerFactory.getLogger(UcxConnection.class);

  /** Frame kinds; for active messages they are the AM ids. */
  static final int HELLO = 0;
  static final int HELLO_REPLY = 1;
  static final int DATA = 2;
  static final int CREDIT = 3;
  static final int CLOSE = 4;
  static final int KINDS = 5;

  private enum State { HELLO_WAIT, OPEN, CLOSING, DESTROYED }

  protected final AbstractUcxTransport transport;
  protected final UcxWorkerLoop loop;
  protected final long token;
  protected final boolean client;
  protected long ep;
  private State state = State.HELLO_WAIT;
  private final CompletableFuture<org.hdfsrdma.transport.Endpoint> connected;
  private final Map<ByteBuffer, Long> rkeys = new HashMap<>();
  private Throwable failure;
  private boolean helloSent; // loop thread

  UcxConnection(AbstractUcxTransport transport, InetSocketAddress remote, EndpointHandler handler,
      boolean client, CompletableFuture<org.hdfsrdma.transport.Endpoint> connected) {
    super(remote, handler);
    this.transport = transport;
    this.loop = transport.loop;
    this.token = loop.newToken();
    this.client = client;
    this.connected = connected;
  }

  @Override
  public Transport transport() {
    return transport;
  }

  /** The native endpoint exists: register, start receiving, client says hello. */
  final void attach(long nativeEp) {
    this.ep = nativeEp;
    loop.register(token, this);
    transport.opened(this);
    startReceiving();
    if (client) {
      Hello hello = Hello.newBuilder()
          .setVersion(transport.helloVersion)
          .addAllCapabilities(wire(transport.capabilities()))
          .setMaxMessageSize(transport.maxMessage)
          .setCredits(transport.credits)
          .build();
      if (transport.sayHello) {
        sendControl(HELLO, hello.toByteArray(), (st, len) -> {
          if (st >= 0 && state == State.HELLO_WAIT) {
            // UCX sends a message only once the endpoint is wired up: from here on the peer
            // owes us a reply, and we wait for it as long as it waits for ours.
            helloSent = true;
            transport.awaitHelloReply(this);
          }
        });
      }
    }
  }

  /** Whether our HELLO has left (client, loop thread): the connection is up, the reply is owed. */
  final boolean helloSent() {
    return helloSent;
  }

  /** Whether the hello exchange is still under way (loop thread). */
  final boolean inHello() {
    return state == State.HELLO_WAIT;
  }

  /** The future {@link AbstractUcxTransport#connect} returned for this connection. */
  final CompletableFuture<org.hdfsrdma.transport.Endpoint> connectFuture() {
    return connected;
  }

  private static java.util.List<String> wire(Set<Capability> caps) {
    return caps.stream().map(Capability::wireName).toList();
  }

  private static Set<Capability> parse(java.util.List<String> names) {
    Set<Capability> s = EnumSet.noneOf(Capability.class);
    for (String n : names) {
      Capability c = Capability.fromWireName(n);
      if (c != null) {
        s.add(c);
      }
    }
    return s;
  }

  /** Begin receiving frames (stream: post a receive; active messages: nothing). */
  protected abstract void startReceiving();

  /**
   * Puts one frame on the wire. Takes over {@code payload}'s reference and
   * calls {@code done} with the status when the buffer is free again.
   */
  protected abstract void sendFrame(int kind, RegisteredBuffer payload, UcxWorkerLoop.Completion done);

  /** Largest payload accepted for a frame kind in the current state. */
  protected final long limitFor(int kind) {
    return kind == DATA ? transport.maxMessage : Protocol.MAX_CONTROL_MESSAGE;
  }

  final boolean isOpen() {
    return state == State.OPEN;
  }

  private static final java.util.concurrent.atomic.LongAdder STALLS = new java.util.concurrent.atomic.LongAdder();
  /** When bytes last arrived on this connection (loop thread; subclasses call {@link #receivedBytes}). */
  private long lastReceiveNanos = System.nanoTime();

  /** Connections closed for a message left partial past the read timeout, in this JVM (tests, status). */
  public static long partialTimeouts() {
    return STALLS.sum();
  }

  /** Notes that bytes arrived (loop thread). */
  protected final void receivedBytes() {
    lastReceiveNanos = System.nanoTime();
  }

  /** Bytes of a message that has begun to arrive and is not complete, 0 between messages (loop thread). */
  protected abstract long partialBytes();

  /**
   * As tcp's read timeout: a peer in the middle of a message (a header, part of its data) from
   * which nothing more arrived for {@code timeoutNs} is failed, so that its partial message
   * does not hold a buffer and a credit for ever; a peer between messages is left alone.
   * Loop thread.
   */
  final void checkStalled(long now, long timeoutNs, long timeoutMs) {
    if (state != State.OPEN || now - lastReceiveNanos <= timeoutNs) {
      return;
    }
    long partial = partialBytes();
    if (partial > 0) {
      STALLS.increment();
      fail(new TransportException.Timeout(transport.name() + ": " + remoteAddress() + " sent part of a message ("
          + partial + " bytes outstanding) and nothing more for " + timeoutMs + " ms ("
          + org.hdfsrdma.transport.TransportConf.READ_TIMEOUT_KEY + ")"));
    }
  }

  final boolean isDestroyed() {
    return state == State.DESTROYED;
  }

  // ------------------------------------------------------------- sending

  /** Test hook: a frame of any kind and content, past every local check (loop thread). */
  void sendRawFrame(int kind, byte[] bytes) {
    sendControl(kind, bytes);
  }

  private void sendControl(int kind, byte[] bytes) {
    sendControl(kind, bytes, null);
  }

  /** {@code sent}: also told the send's status (loop thread), or null. */
  private void sendControl(int kind, byte[] bytes, UcxWorkerLoop.Completion sent) {
    RegisteredBuffer b;
    try {
      b = transport.allocator().allocate(Math.max(1, bytes.length));
    } catch (TransportException e) {
      fail(e);
      return;
    }
    b.nio().clear();
    b.nio().put(bytes).flip();
    sendFrame(kind, b, (st, len) -> {
      if (st < 0 && state == State.OPEN) {
        fail(UcxErrors.of("send control message", st));
      }
      if (sent != null) {
        sent.done(st, len);
      }
    });
  }

  @Override
  protected boolean inIoThread() {
    return loop.inLoop();
  }

  @Override
  protected void executeOnIo(Runnable task) {
    loop.execute(task);
  }

  @Override
  protected void doSend(RegisteredBuffer message, SendCompletion done) {
    if (state != State.OPEN) {
      message.release();
      done.failed(new TransportException.Closed("endpoint not open"));
      return;
    }
    sendFrame(DATA, message, (st, len) -> {
      if (st < 0) {
        done.failed(UcxErrors.of("send", st));
      } else {
        done.succeeded();
      }
    });
  }

  @Override
  protected void doSendCredits(int messages) {
    if (state == State.OPEN) {
      sendControl(CREDIT, Credit.newBuilder().setMessages(messages).build().toByteArray());
    }
  }

  // ----------------------------------------------------------- receiving

  /** A whole frame arrived (loop thread). Takes over {@code payload}'s reference. */
  protected final void onFrame(int kind, RegisteredBuffer payload) {
    if (state == State.DESTROYED || state == State.CLOSING && kind != CLOSE) {
      payload.release();
      return;
    }
    try {
      switch (kind) {
        case DATA -> {
          if (state != State.OPEN) {
            payload.release();
            protocolError("data before hello");
            return;
          }
          deliver(payload);
        }
        case HELLO -> onHello(payload);
        case HELLO_REPLY -> onHelloReply(payload);
        case CREDIT -> {
          Credit c = Credit.parseFrom(payload.nio());
          payload.release();
          if (state != State.OPEN || c.getMessages() <= 0) {
            protocolError("bad credit message");
            return;
          }
          creditsGranted(c.getMessages());
        }
        case CLOSE -> {
          payload.release();
          peerClosed();
        }
        default -> {
          payload.release();
          protocolError("unknown frame kind " + kind);
        }
      }
    } catch (InvalidProtocolBufferException e) {
      if (payload.refCnt() > 0) {
        payload.release();
      }
      protocolError("unparsable " + kindName(kind) + ": " + e.getMessage());
    }
  }

  static String kindName(int kind) {
    return switch (kind) {
      case HELLO -> "hello";
      case HELLO_REPLY -> "hello reply";
      case DATA -> "data";
      case CREDIT -> "credit";
      case CLOSE -> "close";
      default -> "frame " + kind;
    };
  }

  private void onHello(RegisteredBuffer payload) throws InvalidProtocolBufferException {
    Hello h;
    try {
      h = Hello.parseFrom(payload.nio());
    } finally {
      payload.release();
    }
    if (client || state != State.HELLO_WAIT) {
      protocolError("unexpected hello");
      return;
    }
    if (h.getVersion() != Protocol.VERSION) {
      String msg = "protocol version " + h.getVersion() + " is not supported (this side speaks "
          + Protocol.VERSION + ")";
      replyAndClose(HelloReply.Status.VERSION_MISMATCH, msg);
      return;
    }
    if (h.getCredits() <= 0 || h.getMaxMessageSize() <= 0) {
      replyAndClose(HelloReply.Status.BAD_REQUEST, "hello without credits or message size");
      return;
    }
    String refused = handler.admit(remoteAddress());
    if (refused != null) {
      replyAndClose(HelloReply.Status.REFUSED, refused);
      return;
    }
    Set<Capability> common = parse(h.getCapabilitiesList());
    common.retainAll(transport.capabilities());
    HelloReply reply = HelloReply.newBuilder()
        .setVersion(Protocol.VERSION)
        .setStatus(HelloReply.Status.OK)
        .addAllCapabilities(wire(transport.capabilities()))
        .setMaxMessageSize(transport.maxMessage)
        .setCredits(transport.credits)
        .build();
    helloDone(h.getCredits(), transport.credits, h.getMaxMessageSize(), common, true);
    state = State.OPEN;
    sendControl(HELLO_REPLY, reply.toByteArray());
    handler.onConnected(this);
  }

  private void replyAndClose(HelloReply.Status status, String error) {
    HelloReply reply = Protocol.failureReply(status, error);
    if (Protocol.starting(reply)) {
      LOG.debug("refusing {} from {}: {}", transport.name(), remoteAddress(), error); // expected while starting
    } else {
      LOG.warn("refusing {} from {}: {}", transport.name(), remoteAddress(), error);
    }
    sendControl(HELLO_REPLY, reply.toByteArray());
    failure = Protocol.notOk(reply, error);
    destroy(false);
  }

  private void onHelloReply(RegisteredBuffer payload) throws InvalidProtocolBufferException {
    HelloReply r;
    try {
      r = HelloReply.parseFrom(payload.nio());
    } finally {
      payload.release();
    }
    if (!client || state != State.HELLO_WAIT) {
      protocolError("unexpected hello reply");
      return;
    }
    if (r.getStatus() != HelloReply.Status.OK) {
      fail(Protocol.notOk(r, "peer refused the connection (" + r.getStatus() + "): " + r.getError()));
      return;
    }
    if (r.getVersion() != Protocol.VERSION || r.getCredits() <= 0 || r.getMaxMessageSize() <= 0) {
      protocolError("bad hello reply (version " + r.getVersion() + ")");
      return;
    }
    Set<Capability> common = parse(r.getCapabilitiesList());
    common.retainAll(transport.capabilities());
    helloDone(r.getCredits(), transport.credits, r.getMaxMessageSize(), common, false);
    state = State.OPEN;
    connected.complete(this);
  }

  /** The peer broke the protocol: log once, close, fail. */
  protected final void protocolError(String what) {
    if (state == State.DESTROYED) {
      return;
    }
    LOG.warn("closing {} connection with {}: {}", transport.name(), remoteAddress(), what);
    fail(new TransportException.Protocol(what));
  }

  // --------------------------------------------------------------- closing

  @Override
  public void onError(int status) {
    if (state == State.DESTROYED) {
      return;
    }
    if (state == State.CLOSING && failure == null) {
      destroy(true);
      return;
    }
    TransportException e = client && state == State.HELLO_WAIT
        && status == NativeException.ERR_UNREACHABLE
        ? UcxErrors.of("connect to " + remoteAddress(), status)
        : UcxErrors.of("connection with " + remoteAddress(), status);
    if (e instanceof TransportException.Closed) {
      e = new TransportException.PeerFailed(e.getMessage(), status, null);
    }
    fail(e);
  }

  private void peerClosed() {
    if (state == State.OPEN || state == State.HELLO_WAIT) {
      state = State.CLOSING;
      destroy(false);
    }
  }

  /** Fails the connection with {@code e} (loop thread). */
  final void fail(TransportException e) {
    if (state == State.DESTROYED) {
      return;
    }
    if (failure == null) {
      failure = e;
    }
    destroy(true);
  }

  @Override
  protected void doClose() {
    if (state == State.OPEN) {
      state = State.CLOSING;
      sendControl(CLOSE, new byte[0]);
      destroy(false);
    } else if (state == State.HELLO_WAIT) {
      failure = new TransportException.Closed("closed during hello");
      destroy(true);
    }
  }

  /** Closes the native endpoint, then reports (loop thread). */
  private void destroy(boolean force) {
    if (state == State.DESTROYED) {
      return;
    }
    state = State.DESTROYED;
    // Not from inside a UCX callback: the close runs as the loop's next task.
    loop.execute(() -> {
      long cookie = loop.newCookie();
      int st = Jni.epClose0(ep, force, cookie);
      if (st == Jni.INPROGRESS) {
        loop.track(cookie, (s, len) -> finish());
      } else {
        finish();
      }
    });
  }

  private void finish() {
    for (Long rkey : rkeys.values()) {
      Jni.rkeyDestroy0(rkey);
    }
    rkeys.clear();
    loop.unregister(token);
    stopReceiving();
    Jni.epDestroy0(ep);
    transport.closedConnection(this);
    if (!connected.isDone()) {
      connected.completeExceptionally(failure != null ? failure
          : new TransportException.Closed("closed before the hello finished"));
    }
    closed(failure);
  }

  /** Release receive-side resources (loop thread). */
  protected void stopReceiving() {}

  // ------------------------------------------------------------ one-sided

  @Override
  public RemoteRegion expose(RegisteredBuffer buffer) throws TransportException {
    Slab slab = buffer.slab();
    if (slab == null || slab.memoryHandle() == 0) {
      throw new TransportException("buffer is not registered memory; allocate it from the "
          + "transport's allocator");
    }
    return new RemoteRegion(buffer.address() + buffer.nio().position(), buffer.readableBytes(),
        slab.packedRkey());
  }

  @Override
  public CompletableFuture<Void> write(RegisteredBuffer source, RemoteRegion target, long offset) {
    return oneSided(true, source, target, offset);
  }

  @Override
  public CompletableFuture<Void> read(RegisteredBuffer target, RemoteRegion source, long offset) {
    return oneSided(false, target, source, offset);
  }

  private CompletableFuture<Void> oneSided(boolean put, RegisteredBuffer local, RemoteRegion remote,
      long offset) {
    CompletableFuture<Void> op = new CompletableFuture<>();
    long addr = local.address() + local.nio().position();
    long len = local.readableBytes();
    Runnable r = () -> {
      try {
        if (state != State.OPEN) {
          throw new TransportException.Closed("endpoint not open");
        }
        remote.checkRange(offset, len);
        long rkey = rkey(remote);
        long cookie = loop.newCookie();
        int st = put
            ? Jni.put0(ep, addr, len, local.memoryHandle(), remote.address() + offset, rkey, cookie)
            : Jni.get0(ep, addr, len, local.memoryHandle(), remote.address() + offset, rkey, cookie);
        complete(op, st, cookie, put ? "write" : "read");
      } catch (TransportException e) {
        op.completeExceptionally(e);
      }
    };
    runOnLoop(r, op);
    // The buffer is the caller's again only after the operation: release, then report.
    CompletableFuture<Void> f = new CompletableFuture<>();
    op.whenComplete((v, t) -> {
      local.release();
      if (t != null) {
        f.completeExceptionally(t);
      } else {
        f.complete(null);
      }
    });
    return f;
  }

  private long rkey(RemoteRegion remote) throws TransportException {
    ByteBuffer key = ByteBuffer.wrap(remote.rkey());
    Long h = rkeys.get(key);
    if (h == null) {
      try {
        h = Jni.rkeyUnpack0(ep, remote.rkey());
      } catch (NativeException e) {
        throw UcxErrors.of("unpack remote key", e);
      }
      rkeys.put(key, h);
    }
    return h;
  }

  @Override
  public CompletableFuture<Void> flush() {
    CompletableFuture<Void> f = new CompletableFuture<>();
    runOnLoop(() -> {
      if (state != State.OPEN) {
        f.completeExceptionally(new TransportException.Closed("endpoint not open"));
        return;
      }
      long cookie = loop.newCookie();
      complete(f, Jni.flush0(ep, cookie), cookie, "flush");
    }, f);
    return f;
  }

  private void complete(CompletableFuture<Void> f, int st, long cookie, String what) {
    if (st == Jni.INPROGRESS) {
      loop.track(cookie, (s, len) -> {
        if (s < 0) {
          f.completeExceptionally(UcxErrors.of(what, s));
        } else {
          f.complete(null);
        }
      });
    } else if (st < 0) {
      f.completeExceptionally(UcxErrors.of(what, st));
    } else {
      f.complete(null);
    }
  }

  private void runOnLoop(Runnable r, CompletableFuture<?> f) {
    if (loop.inLoop()) {
      r.run();
    } else {
      try {
        loop.execute(r);
      } catch (RuntimeException e) {
        f.completeExceptionally(new TransportException.Closed("transport closed"));
      }
    }
  }
}
