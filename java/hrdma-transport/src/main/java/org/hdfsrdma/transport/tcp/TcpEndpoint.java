package org.hdfsrdma.transport.tcp;

import com.google.protobuf.InvalidProtocolBufferException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.socket.DuplexChannel;
import io.netty.channel.unix.IntegerUnixChannelOption;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.flush.FlushConsolidationHandler;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.hdfsrdma.proto.HrdmaProtos.Credit;
import org.hdfsrdma.proto.HrdmaProtos.Hello;
import org.hdfsrdma.proto.HrdmaProtos.HelloReply;
import org.hdfsrdma.transport.AbstractEndpoint;
import org.hdfsrdma.transport.Capability;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.NioAddress;
import org.hdfsrdma.transport.PendingHellos;
import org.hdfsrdma.transport.Protocol;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One tcp connection. Thread-safe like every {@link org.hdfsrdma.transport.Endpoint};
 * its state lives on the channel's event loop.
 *
 * <p>Hello: the connecting side sends HELLO (version, credits, max message,
 * and for a bootstrap connection its transport order); the accepting side
 * answers HELLO_REPLY (OK with its credits, max message and offers, or
 * VERSION_MISMATCH / BAD_REQUEST with a reason, then closes). Only then is
 * the endpoint handed to the handler ({@code onConnected}) or the connect
 * future completed; failures before that are never reported to the handler.
 *
 * <p>Close: the closing side sends CLOSE and shuts its output down; the peer
 * answers with CLOSE and closes; the closing side closes on the peer's CLOSE
 * or end of stream, or after the connect timeout. DATA arriving after a local
 * close is dropped. End of stream without CLOSE is a peer failure.
 *
 * <p>Received messages are retained slices of Netty's pooled direct buffers
 * (copied once only when a frame spans socket reads), except large DATA
 * frames, which the kernel reads straight into a pooled direct buffer of
 * their own (see {@link TcpFrames.Decoder}); sent messages are wrapped, not
 * copied, and released when Netty has written them (header and payload go
 * out in one writev).
 */
public final class TcpEndpoint extends AbstractEndpoint {
  private static final Logger LOG = LoggerFactory.getLogger(TcpEndpoint.class);
  private static final ByteBuffer EMPTY = ByteBuffer.allocateDirect(0);
  /** Connections closed for a message left partial past the read timeout, in this JVM (tests, status). */
  private static final java.util.concurrent.atomic.AtomicLong timeouts = new java.util.concurrent.atomic.AtomicLong();

  /** Connections closed for a message left partial past {@code hrdma.transport.read-timeout-ms}. */
  public static long readTimeouts() {
    return timeouts.get();
  }

  private final TcpTransport transport;
  private final Channel channel;
  private final TcpFrames.Decoder decoder;
  private final CompletableFuture<TcpEndpoint> connected; // client side, else null
  private final List<String> helloTransports;              // client side
  private final TcpListener listener;                       // server side, else null
  private final AtomicInteger held = new AtomicInteger();   // delivered, not yet released
  private volatile HelloReply helloReply;
  private volatile Hello peerHello;
  // I/O thread only:
  private volatile boolean helloDone; // read by PendingHellos off the event loop
  private boolean aborting;
  private boolean closeSent;
  private boolean closeWritten;
  private boolean peerClosed;
  private TransportException failure;
  private ScheduledFuture<?> timer;

  TcpEndpoint(TcpTransport transport, Channel channel, InetSocketAddress remote,
      EndpointHandler handler, CompletableFuture<TcpEndpoint> connected, List<String> helloTransports,
      TcpListener listener) {
    super(remote, handler);
    this.transport = transport;
    this.channel = channel;
    this.connected = connected;
    this.helloTransports = helloTransports;
    this.listener = listener;
    this.decoder = new TcpFrames.Decoder();
    decoder.underCredits(() -> held.get() < transport.credits);
    // Reads land in the large DATA frame being received, if any (see TcpFrames.Decoder).
    channel.config().setRecvByteBufAllocator(decoder.recvAllocator(TcpTransport.RECV,
        channel instanceof EpollSocketChannel ? this::setRcvLowat : null));
    channel.pipeline()
        .addLast("idle", new IdleStateHandler(transport.readTimeoutMs, 0, 0, TimeUnit.MILLISECONDS))
        .addLast("flush", new FlushConsolidationHandler(256, true))
        .addLast("frames", decoder)
        .addLast("endpoint", new Inbound());
    // A channel that ends before the hello (a refused connect never becomes active, so
    // channelInactive does not come) still ends this endpoint; no handler saw it.
    channel.closeFuture().addListener(f -> {
      if (!helloDone) {
        closed(failure);
      }
    });
  }

  /** Linux SO_RCVLOWAT (SOL_SOCKET 1, option 18): the decoder raises it while a large frame arrives. */
  private static final IntegerUnixChannelOption SO_RCVLOWAT =
      new IntegerUnixChannelOption("SO_RCVLOWAT", 1, 18);

  private boolean setRcvLowat(int bytes) {
    try {
      return channel.config().setOption(SO_RCVLOWAT, bytes);
    } catch (RuntimeException e) {
      LOG.debug("tcp: cannot set SO_RCVLOWAT on {}: {}", remoteAddress(), e.toString());
      return false;
    }
  }

  @Override
  public Transport transport() {
    return transport;
  }

  Channel channel() {
    return channel;
  }

  TcpFrames.Decoder decoder() {
    return decoder;
  }

  /** Server side: true until the peer said HELLO or the channel closed (any thread). */
  boolean awaitingHello() {
    return !helloDone && channel.isOpen();
  }

  /** Server side: closes this connection if it is still waiting for its HELLO ({@link PendingHellos}). */
  void evictBeforeHello(int max) {
    channel.eventLoop().execute(() -> {
      if (!helloDone) {
        fail(new TransportException.Protocol("tcp: more than " + max + " connections waiting for their HELLO ("
            + TransportConf.MAX_PENDING_HELLOS_KEY + "), the oldest closed"), HelloReply.Status.REFUSED);
      }
    });
  }

  /** Client side: the server's hello reply, with its offers. Null on the server side. */
  public HelloReply helloReply() {
    return helloReply;
  }

  /** Server side: the client's hello (its transport order, for logs). Null on the client side. */
  public Hello peerHello() {
    return peerHello;
  }

  /** Also false while Netty's outbound buffer is above its high-water mark. */
  @Override
  public boolean isWritable() {
    return super.isWritable() && channel.isWritable();
  }

  @Override
  protected boolean inIoThread() {
    return channel.eventLoop().inEventLoop();
  }

  @Override
  protected void executeOnIo(Runnable task) {
    channel.eventLoop().execute(task);
  }

  @Override
  protected void doSend(RegisteredBuffer message, SendCompletion done) {
    ByteBuffer nio = message.nio();
    int n = nio.remaining();
    channel.write(TcpFrames.header(channel.alloc(), TcpFrames.DATA, n));
    // A view of position..limit; Netty releases the view, the listener the message.
    channel.write(Unpooled.wrappedBuffer(nio)).addListener((ChannelFutureListener) f -> {
      message.release();
      if (f.isSuccess()) {
        done.succeeded();
      } else {
        done.failed(sendFailure(f.cause()));
      }
    });
    channel.flush(); // consolidated: one syscall for a burst of sends
  }

  private TransportException sendFailure(Throwable cause) {
    if (failure != null) {
      return failure;
    }
    if (isClosed()) {
      return new TransportException.Closed("endpoint closed before the message was sent");
    }
    return new TransportException.PeerFailed("tcp: send to " + remoteAddress() + " failed: " + cause,
        0, cause);
  }

  @Override
  protected void doSendCredits(int messages) {
    channel.writeAndFlush(TcpFrames.control(channel.alloc(), TcpFrames.CREDIT,
        Credit.newBuilder().setMessages(messages).build()));
  }

  @Override
  protected void doClose() {
    if (aborting || !helloDone || !channel.isActive()) {
      channel.close();
      return;
    }
    if (closeSent) {
      return;
    }
    closeSent = true;
    channel.writeAndFlush(TcpFrames.control(channel.alloc(), TcpFrames.CLOSE, null))
        .addListener((ChannelFutureListener) f -> {
          closeWritten = true;
          if (!f.isSuccess() || peerClosed) {
            channel.close();
          } else if (channel instanceof DuplexChannel d) {
            d.shutdownOutput(); // the peer sees CLOSE, then end of stream
          }
        });
    cancelTimer();
    timer = channel.eventLoop().schedule(() -> {
      if (channel.isOpen()) {
        LOG.debug("tcp: {} did not answer CLOSE within {} ms, closing", remoteAddress(),
            transport.connectTimeoutMs);
        channel.close();
      }
    }, transport.connectTimeoutMs, TimeUnit.MILLISECONDS);
  }

  private void cancelTimer() {
    if (timer != null) {
      timer.cancel(false);
      timer = null;
    }
  }

  /**
   * The first failure wins and is logged once; before the hello it fails the
   * connect (client) or answers with {@code replyStatus} (server), after it
   * closes the endpoint with the failure as cause.
   */
  private void fail(TransportException e, HelloReply.Status replyStatus) {
    if (failure != null) {
      return;
    }
    failure = e;
    if (!helloDone) {
      cancelTimer();
      if (connected != null) {
        LOG.debug("tcp: connecting to {} failed: {}", remoteAddress(), e.getMessage());
        connected.completeExceptionally(e);
      } else if (e instanceof TransportException.Starting) {
        // every hello while a server starts: expected, and its clients come back shortly
        LOG.debug("tcp: refusing {}: {}", remoteAddress(), e.getMessage());
      } else {
        LOG.warn("tcp: closing connection from {}: {}", remoteAddress(), e.getMessage());
      }
      if (replyStatus != null && connected == null && channel.isActive()) {
        HelloReply r = Protocol.failureReply(replyStatus, e.getMessage());
        channel.writeAndFlush(TcpFrames.control(channel.alloc(), TcpFrames.HELLO_REPLY, r))
            .addListener(ChannelFutureListener.CLOSE);
      } else {
        channel.close();
      }
      return;
    }
    if (isClosed()) {
      // Closing already (locally or on the peer's CLOSE): nothing left to report.
      LOG.debug("tcp: {} while closing: {}", remoteAddress(), e.getMessage());
      channel.close();
      return;
    }
    LOG.warn("tcp: closing endpoint to {}: {}", remoteAddress(), e.getMessage());
    aborting = true;
    closeWith(e);
  }

  private static TransportException.Protocol protocol(String message) {
    return new TransportException.Protocol(message);
  }

  // --- hello -------------------------------------------------------------

  private void clientStart() {
    Hello.Builder h = Hello.newBuilder()
        .setVersion(Protocol.VERSION)
        .setMaxMessageSize(transport.maxMessage)
        .setCredits(transport.credits)
        .setClientId("pid-" + ProcessHandle.current().pid());
    if (helloTransports != null) {
      h.addAllTransports(helloTransports);
    }
    channel.writeAndFlush(TcpFrames.control(channel.alloc(), TcpFrames.HELLO, h.build()));
    // The connection is up: the peer's answer is now a reply of a DataNode, waited for as stock's
    // client waits for a DataNode's responses (dfs.client.socket-timeout), as long as the peer
    // waits for our hello, not the connect timeout, which would send clients of a loaded but
    // honest DataNode to the stock path.
    startHelloTimer("no hello reply from " + remoteAddress(), transport.helloTimeoutMs,
        TransportConf.HELLO_TIMEOUT_KEY);
  }

  private void startHelloTimer(String what, int ms, String key) {
    timer = channel.eventLoop().schedule(() -> {
      if (!helloDone) {
        fail(new TransportException.Timeout("tcp: " + what + " within " + ms + " ms (" + key + ")"), null);
      }
    }, ms, TimeUnit.MILLISECONDS);
  }

  private void serverHello(int type, ByteBuf payload) {
    if (type != TcpFrames.HELLO) {
      fail(protocol("expected HELLO, got " + TcpFrames.typeName(type)), HelloReply.Status.BAD_REQUEST);
      return;
    }
    Hello h;
    try {
      h = Hello.parseFrom(new ByteBufInputStream(payload));
    } catch (IOException e) {
      fail(protocol("malformed HELLO: " + e.getMessage()), HelloReply.Status.BAD_REQUEST);
      return;
    }
    if (h.getVersion() != Protocol.VERSION) {
      fail(protocol("protocol version " + h.getVersion() + " is not supported: this side speaks version "
          + Protocol.VERSION), HelloReply.Status.VERSION_MISMATCH);
      return;
    }
    if (h.getCredits() == 0 || h.getMaxMessageSize() == 0) {
      fail(protocol("HELLO must advertise positive credits and max message size, not "
          + h.getCredits() + " and " + h.getMaxMessageSize()), HelloReply.Status.BAD_REQUEST);
      return;
    }
    String refused = handler.admit(remoteAddress());
    if (refused != null) {
      fail(EndpointHandler.REFUSED_STARTING.equals(refused)
          ? new TransportException.Starting(refused) : new TransportException.Protocol("tcp: refused: " + refused),
          HelloReply.Status.REFUSED);
      return;
    }
    peerHello = h;
    HelloReply reply = HelloReply.newBuilder()
        .setVersion(Protocol.VERSION)
        .setStatus(HelloReply.Status.OK)
        .setMaxMessageSize(transport.maxMessage)
        .setCredits(transport.credits)
        .addAllOffers(listener.offers())
        .build();
    channel.writeAndFlush(TcpFrames.control(channel.alloc(), TcpFrames.HELLO_REPLY, reply));
    finishHello(h.getCredits(), h.getMaxMessageSize());
    handler.onConnected(this);
  }

  private void clientHello(int type, ByteBuf payload) {
    if (type != TcpFrames.HELLO_REPLY) {
      fail(protocol("expected HELLO_REPLY from " + remoteAddress() + ", got " + TcpFrames.typeName(type)),
          null);
      return;
    }
    HelloReply r;
    try {
      r = HelloReply.parseFrom(new ByteBufInputStream(payload));
    } catch (IOException e) {
      fail(protocol("malformed HELLO_REPLY from " + remoteAddress() + ": " + e.getMessage()), null);
      return;
    }
    if (r.getStatus() != HelloReply.Status.OK) {
      fail(Protocol.notOk(r, "tcp: " + remoteAddress() + " refused the hello (" + r.getStatus() + "): "
          + r.getError()), null);
      return;
    }
    if (r.getVersion() != Protocol.VERSION) {
      fail(protocol("tcp: " + remoteAddress() + " speaks protocol version " + r.getVersion()
          + ", this side " + Protocol.VERSION), null);
      return;
    }
    if (r.getCredits() == 0 || r.getMaxMessageSize() == 0) {
      fail(protocol("tcp: " + remoteAddress() + " advertised credits " + r.getCredits()
          + " and max message size " + r.getMaxMessageSize()), null);
      return;
    }
    helloReply = r;
    finishHello(r.getCredits(), r.getMaxMessageSize());
    handler.onConnected(this);
    connected.complete(this);
  }

  private void finishHello(int peerCredits, int peerMax) {
    cancelTimer();
    helloDone = true;
    decoder.helloDone(transport.maxMessage);
    helloDone(clampUnsigned(peerCredits), transport.credits, clampUnsigned(peerMax),
        EnumSet.noneOf(Capability.class), listener != null);
    transport.registered(this);
  }

  private static int clampUnsigned(int uint32) {
    return (int) Math.min(Integer.toUnsignedLong(uint32), Integer.MAX_VALUE);
  }

  // --- after the hello ----------------------------------------------------

  private void onData(ByteBuf frame) {
    if (isClosed()) {
      frame.release(); // sent before the peer saw our CLOSE
      return;
    }
    if (held.incrementAndGet() > transport.credits) {
      frame.release();
      held.decrementAndGet();
      fail(protocol("tcp: " + remoteAddress() + " sent more than its " + transport.credits
          + " credits allow"), null);
      return;
    }
    deliver(Message.wrap(frame, this));
  }

  private void onCredit(ByteBuf payload) {
    Credit c;
    try {
      c = Credit.parseFrom(new ByteBufInputStream(payload));
    } catch (IOException e) {
      fail(protocol("malformed CREDIT from " + remoteAddress() + ": " + e.getMessage()), null);
      return;
    }
    if (c.getMessages() <= 0 || c.getMessages() > transport.credits * 2L + 1_000_000) {
      fail(protocol("bad CREDIT grant of " + Integer.toUnsignedString(c.getMessages())), null);
      return;
    }
    creditsGranted(c.getMessages());
  }

  private void onPeerClose() {
    peerClosed = true;
    if (!isClosed()) {
      closeWith(null); // answers with CLOSE, then closes when it is written
    } else if (closeWritten) {
      channel.close();
    }
  }

  /** Netty's events for this channel, on its event loop. */
  private final class Inbound extends ChannelInboundHandlerAdapter {
    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
      if (connected != null) {
        clientStart();
      } else {
        startHelloTimer("no HELLO from " + remoteAddress(), transport.helloTimeoutMs,
            TransportConf.HELLO_TIMEOUT_KEY);
      }
      super.channelActive(ctx);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      ByteBuf frame = (ByteBuf) msg;
      if (failure != null) {
        frame.release();
        return;
      }
      int type = frame.readUnsignedByte(); // the decoder guarantees length >= 1
      if (type == TcpFrames.DATA && helloDone) {
        onData(frame);
        return;
      }
      try {
        if (!helloDone) {
          if (connected != null) {
            clientHello(type, frame);
          } else {
            serverHello(type, frame);
          }
        } else if (type == TcpFrames.CREDIT) {
          onCredit(frame);
        } else if (type == TcpFrames.CLOSE) {
          onPeerClose();
        } else {
          fail(protocol("unexpected " + TcpFrames.typeName(type) + " from " + remoteAddress()
              + " after the hello"), null);
        }
      } finally {
        frame.release();
      }
    }

    /**
     * Nothing read for the read timeout: a peer in the middle of a message (its header or some
     * of its bytes arrived, the rest did not) is closed, so that its partial message does not
     * hold memory; a peer between messages is left to the handler's idle policy.
     */
    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
      if (evt instanceof IdleStateEvent e && e.state() == io.netty.handler.timeout.IdleState.READER_IDLE) {
        int partial = decoder.partialBytes();
        if (partial > 0 && failure == null) {
          timeouts.incrementAndGet();
          fail(new TransportException.Timeout("tcp: " + remoteAddress() + " sent " + partial
              + " bytes of a message and nothing more for " + transport.readTimeoutMs + " ms ("
              + org.hdfsrdma.transport.TransportConf.READ_TIMEOUT_KEY + ")"), null);
        }
        return;
      }
      super.userEventTriggered(ctx, evt);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      TransportException e;
      HelloReply.Status reply = null;
      if (cause instanceof TcpFrames.FrameError fe) {
        e = fe.error;
        reply = HelloReply.Status.BAD_REQUEST;
      } else if (cause instanceof DecoderException && cause.getCause() instanceof TransportException te) {
        e = te;
      } else if (cause instanceof IOException) {
        e = new TransportException.PeerFailed("tcp: connection to " + remoteAddress() + " broke: "
            + cause.getMessage(), 0, cause);
      } else {
        e = new TransportException("tcp: endpoint to " + remoteAddress() + " failed: " + cause, 0, cause);
      }
      fail(e, reply);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
      cancelTimer();
      transport.unregistered(TcpEndpoint.this);
      if (!helloDone) {
        fail(new TransportException.PeerFailed("tcp: connection to " + remoteAddress()
            + " closed during the hello", 0, null), null);
      } else if (!isClosed()) {
        fail(failure != null ? failure : new TransportException.PeerFailed("tcp: connection to "
            + remoteAddress() + " lost (closed without CLOSE)", 0, null), null);
        if (!closeFuture().isDone()) {
          closed(failure);
        }
      } else {
        closed(null); // no-op when closeWith already reported
      }
      super.channelInactive(ctx);
    }
  }

  /** A received message: a retained slice of Netty's receive buffer, or a large frame's own buffer. */
  private static final class Message extends RegisteredBuffer {
    private final ByteBuf buf;
    private final TcpEndpoint owner;

    private Message(ByteBuffer nio, ByteBuf buf, TcpEndpoint owner) {
      super(nio, NioAddress.of(nio));
      this.buf = buf;
      this.owner = owner;
      owner.transport.messageReceived();
    }

    static Message wrap(ByteBuf frame, TcpEndpoint owner) {
      int n = frame.readableBytes();
      if (n == 0) {
        frame.release();
        return new Message(EMPTY.duplicate(), null, owner);
      }
      if (frame.nioBufferCount() != 1 || !frame.isDirect()) {
        // The frame spans socket reads: flatten it once into pooled direct memory.
        ByteBuf flat = owner.channel.alloc().directBuffer(n, n);
        try {
          flat.writeBytes(frame, frame.readerIndex(), n);
        } finally {
          frame.release();
        }
        frame = flat;
      }
      ByteBuffer nio = frame.nioBuffer(frame.readerIndex(), n);
      if (!nio.isDirect()) { // not expected from a direct pooled allocator, but never hand out heap
        ByteBuffer d = ByteBuffer.allocateDirect(n);
        d.put(nio).flip();
        frame.release();
        return new Message(d, null, owner);
      }
      return new Message(nio, frame, owner);
    }

    @Override
    public long memoryHandle() {
      return 0;
    }

    @Override
    protected void recycle() {
      if (buf != null) {
        buf.release();
      }
      owner.held.decrementAndGet();
      owner.transport.messageReleased();
    }
  }
}
