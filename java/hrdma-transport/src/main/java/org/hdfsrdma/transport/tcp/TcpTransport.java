package org.hdfsrdma.transport.tcp;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ConnectTimeoutException;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.EventExecutor;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.hdfsrdma.proto.HrdmaProtos.TransportAddress;
import org.hdfsrdma.transport.BufferAllocator;
import org.hdfsrdma.transport.BufferPool;
import org.hdfsrdma.transport.Capability;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.HrdmaTransportKeys;
import org.hdfsrdma.transport.Listener;
import org.hdfsrdma.transport.PendingHellos;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.SlabAllocator;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code tcp} transport: Netty (epoll where available, else NIO) over
 * kernel TCP with TCP_NODELAY and pooled direct buffers; frames as drawn in
 * {@link TcpFrames}. No one-sided access.
 *
 * <p>Thread-safe. Owns a small event-loop group (every endpoint's callbacks
 * run on one of its threads), the send-buffer pool returned by
 * {@link #allocator()}, and every listener and endpoint it created.
 */
public final class TcpTransport implements Transport {
  static {
    NettyStartup.apply(); // before the first Netty class initializes (below)
  }

  private static final Logger LOG = LoggerFactory.getLogger(TcpTransport.class);

  /** I/O threads per tcp transport. */
  public static final String IO_THREADS_KEY = HrdmaTransportKeys.TCP_IO_THREADS_KEY;
  public static final int IO_THREADS_DEFAULT = HrdmaTransportKeys.TCP_IO_THREADS_DEFAULT;

  /** Outbound bytes queued in Netty above which the endpoint reports not writable. */
  private static final WriteBufferWaterMark WATER_MARK = new WriteBufferWaterMark(256 << 10, 1 << 20);

  /**
   * Socket reads of up to 1 MiB: fewer reads and fewer pieces per frame. Each
   * endpoint wraps it so that large DATA frames are read in place.
   */
  static final AdaptiveRecvByteBufAllocator RECV =
      new AdaptiveRecvByteBufAllocator(4096, 64 << 10, 1 << 20);

  final int credits;
  final int maxMessage;
  final int connectTimeoutMs;
  /** How long an accepted connection may take to say HELLO. */
  final int helloTimeoutMs;
  private final int maxPendingHellos;
  /** Accepted connections that have not said HELLO yet, bounded. */
  private final PendingHellos pendingHellos;
  final int readTimeoutMs;
  private final boolean epoll;
  private final EventLoopGroup group;
  private final BufferPool pool;
  private final Allocator allocator;
  private final AtomicLong receivedOutstanding = new AtomicLong();
  private final Set<TcpEndpoint> endpoints = ConcurrentHashMap.newKeySet();
  private final Set<Channel> channels = ConcurrentHashMap.newKeySet();
  private final Set<TcpListener> listeners = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  public TcpTransport(TransportConf conf) {
    this.credits = conf.getPositiveInt(TransportConf.CREDITS_KEY, TransportConf.CREDITS_DEFAULT);
    this.maxMessage = conf.getPositiveInt(TransportConf.MAX_MESSAGE_KEY, TransportConf.MAX_MESSAGE_DEFAULT);
    this.readTimeoutMs = conf.getPositiveInt(TransportConf.READ_TIMEOUT_KEY, TransportConf.READ_TIMEOUT_DEFAULT);
    this.connectTimeoutMs = conf.getPositiveInt(TransportConf.CONNECT_TIMEOUT_KEY,
        TransportConf.CONNECT_TIMEOUT_DEFAULT);
    this.helloTimeoutMs = conf.getPositiveInt(TransportConf.HELLO_TIMEOUT_KEY, TransportConf.HELLO_TIMEOUT_DEFAULT);
    this.maxPendingHellos = conf.getPositiveInt(TransportConf.MAX_PENDING_HELLOS_KEY,
        TransportConf.MAX_PENDING_HELLOS_DEFAULT);
    this.pendingHellos = new PendingHellos(maxPendingHellos);
    int threads = conf.getPositiveInt(IO_THREADS_KEY, IO_THREADS_DEFAULT);
    this.epoll = Epoll.isAvailable();
    if (!epoll) {
      LOG.debug("tcp: epoll unavailable, using nio: {}", Epoll.unavailabilityCause().toString());
    }
    this.group = new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory("hrdma-tcp", true),
        epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory());
    this.pool = new BufferPool(SlabAllocator.DIRECT,
        conf.getPositiveInt(TransportConf.SLAB_SIZE_KEY, TransportConf.SLAB_SIZE_DEFAULT),
        conf.getLong(TransportConf.MAX_REGISTERED_KEY, TransportConf.MAX_REGISTERED_DEFAULT));
    this.allocator = new Allocator();
  }

  @Override
  public String name() {
    return TcpTransportProvider.NAME;
  }

  @Override
  public Set<Capability> capabilities() {
    return Collections.unmodifiableSet(EnumSet.noneOf(Capability.class));
  }

  /**
   * The send-buffer pool. {@link BufferAllocator#buffersOutstanding()} also
   * counts received messages the handlers have not released yet.
   */
  @Override
  public BufferAllocator allocator() {
    return allocator;
  }

  /** True when the event loops use epoll, false for NIO. */
  public boolean usesEpoll() {
    return epoll;
  }

  /** Endpoints past their hello and not yet closed. */
  public int openEndpoints() {
    return endpoints.size();
  }

  @Override
  public Listener listen(InetSocketAddress local, EndpointHandler handler) throws IOException {
    return listen(local, handler, l -> List.of());
  }

  /**
   * Listens like {@link #listen(InetSocketAddress, EndpointHandler)} and puts
   * {@code offers.apply(listener)} into every hello reply (the bootstrap
   * listener of {@code HrdmaServer} advertises the server's transports this
   * way). {@code offers} runs on I/O threads and must not block.
   */
  public TcpListener listen(InetSocketAddress local, EndpointHandler handler,
      Function<TcpListener, List<TransportAddress>> offers) throws IOException {
    ensureOpen();
    TcpListener[] self = new TcpListener[1];
    ServerBootstrap b = new ServerBootstrap()
        .group(group)
        .channel(epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class)
        .option(ChannelOption.SO_REUSEADDR, true)
        .option(ChannelOption.SO_BACKLOG, 1024)
        .childOption(ChannelOption.TCP_NODELAY, true)
        .childOption(ChannelOption.ALLOCATOR, alloc())
        .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, WATER_MARK)
        .childHandler(new ChannelInitializer<Channel>() {
          @Override
          protected void initChannel(Channel ch) {
            TcpListener l = self[0];
            if (l == null || closed) {
              ch.close();
              return;
            }
            newChannel(ch);
            TcpEndpoint ep = new TcpEndpoint(TcpTransport.this, ch, (InetSocketAddress) ch.remoteAddress(), handler,
                null, null, l);
            pendingHellos.add(ep::awaitingHello, () -> ep.evictBeforeHello(maxPendingHellos));
          }
        });
    ChannelFuture f = b.bind(local).awaitUninterruptibly();
    if (!f.isSuccess()) {
      throw new TransportException("tcp: cannot listen on " + local + ": " + f.cause(), 0, f.cause());
    }
    Channel server = f.channel();
    TcpListener l = new TcpListener(this, server, offers);
    self[0] = l;
    listeners.add(l);
    if (closed) {
      l.close();
      throw new TransportException.Closed("tcp transport closed");
    }
    return l;
  }

  /** Accepted connections closed before their HELLO to bound those waiting for it ({@link PendingHellos}). */
  public long pendingHellosEvicted() {
    return pendingHellos.evicted();
  }

  @Override
  public CompletableFuture<Endpoint> connect(InetSocketAddress remote, EndpointHandler handler) {
    return connect(remote, handler, List.of()).thenApply(e -> (Endpoint) e);
  }

  /**
   * Connects like {@link #connect(InetSocketAddress, EndpointHandler)},
   * sending {@code transports} (the client's preference order) in the hello;
   * the endpoint's {@link TcpEndpoint#helloReply()} then holds the server's
   * offers. The future completes on the endpoint's I/O thread.
   */
  public CompletableFuture<TcpEndpoint> connect(InetSocketAddress remote, EndpointHandler handler,
      List<String> transports) {
    CompletableFuture<TcpEndpoint> result = new CompletableFuture<>();
    if (closed) {
      result.completeExceptionally(new TransportException.Closed("tcp transport closed"));
      return result;
    }
    Bootstrap b = new Bootstrap()
        .group(group)
        .channel(epoll ? EpollSocketChannel.class : NioSocketChannel.class)
        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, connectTimeoutMs)
        .option(ChannelOption.TCP_NODELAY, true)
        .option(ChannelOption.ALLOCATOR, alloc())
        .option(ChannelOption.WRITE_BUFFER_WATER_MARK, WATER_MARK)
        .handler(new ChannelInitializer<Channel>() {
          @Override
          protected void initChannel(Channel ch) {
            newChannel(ch);
            new TcpEndpoint(TcpTransport.this, ch, remote, handler, result, transports, null);
          }
        });
    ChannelFuture f;
    try {
      f = b.connect(remote);
    } catch (RuntimeException e) { // event loop shut down under us
      result.completeExceptionally(new TransportException.Closed("tcp transport closed"));
      return result;
    }
    f.addListener((ChannelFuture cf) -> {
      if (!cf.isSuccess()) {
        result.completeExceptionally(connectFailure(remote, cf.cause()));
      }
    });
    return result;
  }

  private TransportException connectFailure(InetSocketAddress remote, Throwable cause) {
    if (cause instanceof ConnectTimeoutException) {
      return new TransportException.Timeout("tcp: connecting to " + remote + " timed out after "
          + connectTimeoutMs + " ms");
    }
    if (cause instanceof ConnectException || cause instanceof IOException) {
      return new TransportException.Unreachable("tcp: cannot connect to " + remote + ": "
          + cause.getMessage(), 0, cause);
    }
    if (closed) {
      return new TransportException.Closed("tcp transport closed");
    }
    return new TransportException.Unreachable("tcp: cannot connect to " + remote + ": " + cause, 0,
        cause);
  }

  private static ByteBufAllocator alloc() {
    return PooledByteBufAllocator.DEFAULT;
  }

  private void newChannel(Channel ch) {
    channels.add(ch);
    ch.closeFuture().addListener(f -> channels.remove(ch));
  }

  void registered(TcpEndpoint ep) {
    endpoints.add(ep);
    if (closed) {
      ep.close();
    }
  }

  void unregistered(TcpEndpoint ep) {
    endpoints.remove(ep);
  }

  void listenerClosed(TcpListener l) {
    listeners.remove(l);
  }

  void messageReceived() {
    receivedOutstanding.incrementAndGet();
  }

  void messageReleased() {
    receivedOutstanding.decrementAndGet();
  }

  private void ensureOpen() throws TransportException {
    if (closed) {
      throw new TransportException.Closed("tcp transport closed");
    }
  }

  /**
   * Closes listeners, closes endpoints gracefully (waiting up to the connect
   * timeout for their peers unless called from an I/O thread), then shuts the
   * event loops down and waits for them.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (TcpListener l : new ArrayList<>(listeners)) {
      l.close();
    }
    List<CompletableFuture<Void>> closing = new ArrayList<>();
    for (TcpEndpoint ep : new ArrayList<>(endpoints)) {
      ep.close();
      closing.add(ep.closeFuture());
    }
    for (Channel ch : new ArrayList<>(channels)) {
      if (!endpointChannel(ch)) {
        ch.close();
      }
    }
    boolean onIo = false;
    for (EventExecutor e : group) {
      onIo |= e.inEventLoop();
    }
    if (!onIo) {
      try {
        CompletableFuture.allOf(closing.toArray(new CompletableFuture<?>[0]))
            .handle((v, t) -> null)
            .get(connectTimeoutMs, TimeUnit.MILLISECONDS);
      } catch (Exception e) {
        LOG.debug("tcp: endpoints did not close in time, closing them abruptly: {}", e.toString());
      }
    }
    var shutdown = group.shutdownGracefully(0, 2, TimeUnit.SECONDS);
    if (!onIo) {
      shutdown.awaitUninterruptibly(10, TimeUnit.SECONDS);
    }
    pool.close();
  }

  private boolean endpointChannel(Channel ch) {
    for (TcpEndpoint ep : endpoints) {
      if (ep.channel() == ch) {
        return true;
      }
    }
    return false;
  }

  @Override
  public String toString() {
    return "tcp-transport[" + (epoll ? "epoll" : "nio") + (closed ? ", closed" : "") + "]";
  }

  /** The pool, with received messages counted as outstanding too (the leak check sees both). */
  private final class Allocator implements BufferAllocator {
    @Override
    public RegisteredBuffer allocate(int size) throws TransportException {
      return pool.allocate(size);
    }

    @Override
    public long footprint(int size) {
      return pool.footprint(size);
    }

    @Override
    public long bytesRegistered() {
      return pool.bytesRegistered();
    }

    @Override
    public long buffersOutstanding() {
      return pool.buffersOutstanding() + receivedOutstanding.get();
    }
  }
}
