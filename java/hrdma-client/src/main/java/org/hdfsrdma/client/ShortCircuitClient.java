package org.hdfsrdma.client;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.channel.unix.DomainSocketReadMode;
import io.netty.channel.unix.FileDescriptor;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.security.token.block.InvalidBlockTokenException;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.nativelib.NativeFiles;
import org.hdfsrdma.protocol.ShortCircuitSocket;
import org.hdfsrdma.protocol.SocketPaths;

/**
 * Asks a DataNode's plugin on this host for a finalized replica's files over
 * its Unix domain socket ({@link ShortCircuitSocket}: request with the
 * block's token, reply, go-ahead, two descriptors) and takes the received
 * descriptors over ({@link NativeFiles#adopt}). One connection per request;
 * its own event loop thread (daemon), made on first use. Thread-safe.
 *
 * <p>The exchange never closes its channel from inside a read: Netty's epoll
 * loop that receives descriptors reads again after a handler closed the
 * channel (its byte loop checks, that one does not), and by then another
 * thread may have been given the closed descriptor's number, say for a
 * connection the DataNode's plugin in this process just accepted: the read
 * would swallow that connection's request (whose exchange then waits for the
 * DataNode's timeout) or descriptors. The close is a task of the event loop
 * instead, run once the read loop is done with the descriptor.
 */
final class ShortCircuitClient implements AutoCloseable {
  private final long timeoutMs;
  /** {@link SocketPaths#ALLOW_STICKY_KEY}: a socket in /tmp is used even when blocks carry tokens. */
  private final boolean allowSticky;
  private EventLoopGroup group; // guarded by this; made on first use
  private boolean closed;       // guarded by this
  /** Tests: sees each exchange's channel as it is made. */
  private volatile java.util.function.Consumer<Channel> channelHook;

  /**
   * The replica's block and .meta files, open read-only; the caller closes
   * them. {@code cached}: the DataNode caches the replica (mlocked, verified
   * when cached), so reading it needs no checksum work, as stock's anchored
   * short-circuit replicas. {@code resident}: bytes of the range the request asked about that
   * are in the page cache, -1 when not asked or not said (an older DataNode).
   */
  record Fds(NativeFiles.Fd data, NativeFiles.Fd meta, boolean cached, long resident) implements AutoCloseable {
    Fds(NativeFiles.Fd data, NativeFiles.Fd meta, boolean cached) {
      this(data, meta, cached, -1);
    }

    @Override
    public void close() {
      data.close();
      meta.close();
    }
  }

  ShortCircuitClient(long timeoutMs, boolean allowSticky) {
    this.timeoutMs = timeoutMs;
    this.allowSticky = allowSticky;
  }

  /** Why short-circuit reads cannot work in this process at all, or null. */
  static String unavailable() {
    if (!Epoll.isAvailable()) {
      return "no epoll transport: " + Epoll.unavailabilityCause();
    }
    if (!HrdmaNative.isAvailable()) {
      return "the native library is not loaded: " + HrdmaNative.unavailabilityCause();
    }
    return null;
  }

  private synchronized EventLoopGroup group() throws IOException {
    if (closed) {
      throw new IOException("the short-circuit client is closed");
    }
    if (group == null) {
      group = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("hrdma-scr-client", true),
          EpollIoHandler.newFactory());
    }
    return group;
  }

  /**
   * The files of {@code block}'s finalized replica (of {@code block}'s length)
   * from the DataNode listening at {@code socketPath}.
   *
   * @throws InvalidBlockTokenException the DataNode refused the token
   * @throws RdmaBlockClient.LocalReadsRefused nothing listens there, or it does not serve this client at all
   * @throws IOException refused for this replica (not finalized, another length), or the exchange failed
   */
  Fds request(String socketPath, ExtendedBlock block, Token<BlockTokenIdentifier> token) throws IOException {
    return request(socketPath, block, token, 0, -1);
  }

  /**
   * As {@link #request(String, ExtendedBlock, Token)}; with {@code probeLength} &gt;= 0 the
   * DataNode is asked too how much of {@code [probeOffset, probeOffset + probeLength)} of the
   * block is in its page cache ({@link Fds#resident}).
   */
  Fds request(String socketPath, ExtendedBlock block, Token<BlockTokenIdentifier> token, long probeOffset,
      long probeLength) throws IOException {
    String why = unavailable();
    if (why != null) {
      throw new RdmaBlockClient.LocalReadsRefused(why);
    }
    if (!Files.exists(Path.of(socketPath))) {
      throw new RdmaBlockClient.LocalReadsRefused("no short-circuit socket at " + socketPath);
    }
    // with tokens the cluster authenticates: the token goes only to a socket no other local user
    // could have created first (as stock's DataNode binds only there)
    boolean tokenPresent = token != null && token.getIdentifier().length > 0;
    try {
      SocketPaths.checkForClient(Path.of(socketPath), !tokenPresent || allowSticky);
    } catch (IOException e) {
      throw new RdmaBlockClient.LocalReadsRefused(e.getMessage());
    }
    OpRequestShortCircuitAccessProto op = probeLength < 0 ? ShortCircuitSocket.request(block, token)
        : ShortCircuitSocket.request(block, token, probeOffset, probeLength);
    CompletableFuture<Fds> result = new CompletableFuture<>();
    ChannelFuture cf = new Bootstrap().group(group()).channel(EpollDomainSocketChannel.class)
        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, timeoutMs))
        .handler(new ChannelInitializer<Channel>() {
          @Override
          protected void initChannel(Channel ch) {
            ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(ShortCircuitSocket.MAX_MESSAGE_BYTES, 0, 4, 0, 4),
                new Exchange(result, block, socketPath));
          }
        }).connect(new DomainSocketAddress(socketPath));
    Channel ch = cf.channel();
    java.util.function.Consumer<Channel> hook = channelHook;
    if (hook != null) {
      hook.accept(ch);
    }
    cf.addListener(f -> {
      if (!f.isSuccess()) {
        result.completeExceptionally(new RdmaBlockClient.LocalReadsRefused("cannot connect to " + socketPath + ": "
            + f.cause()));
      } else {
        ch.writeAndFlush(frame(ch, op.toByteArray()));
      }
    });
    Fds got = null;
    try {
      got = result.get(timeoutMs, TimeUnit.MILLISECONDS);
      return got;
    } catch (TimeoutException e) {
      throw new IOException("no short-circuit answer from " + socketPath + " within " + timeoutMs + " ms");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new java.io.InterruptedIOException("interrupted waiting for " + socketPath);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof IOException io) {
        throw io;
      }
      throw new IOException(e.getCause());
    } finally {
      // from now on descriptors that arrive are closed by Exchange (result is done); ones
      // that arrived just after the wait ended are closed here
      if (got == null && !result.completeExceptionally(new IOException("given up"))) {
        try {
          Fds late = result.getNow(null);
          if (late != null) {
            late.close();
          }
        } catch (java.util.concurrent.CompletionException | java.util.concurrent.CancellationException failed) {
          // nothing was handed over
        }
      }
      ch.close();
    }
  }

  /** Tests: {@code hook} sees the channel of every later exchange as soon as it is made. */
  void channelHook(java.util.function.Consumer<Channel> hook) {
    this.channelHook = hook;
  }

  /**
   * Closes {@code ctx}'s channel once the read in progress is over: never from inside it (see
   * the class comment), where a read after the close would take whatever the descriptor's
   * number means by then.
   */
  private static void closeAfterRead(ChannelHandlerContext ctx) {
    try {
      ctx.channel().eventLoop().execute(() -> ctx.close());
    } catch (java.util.concurrent.RejectedExecutionException e) {
      ctx.close(); // the event loop has stopped: it reads nothing any more
    }
  }

  private static ByteBuf frame(Channel ch, byte[] body) {
    ByteBuf b = ch.alloc().buffer(4 + body.length);
    b.writeInt(body.length);
    b.writeBytes(body);
    return b;
  }

  /** Reply, go-ahead, descriptors; completes {@code result} (or closes what it got once it is done). */
  private static final class Exchange extends ChannelInboundHandlerAdapter {
    private final CompletableFuture<Fds> result;
    private final ExtendedBlock block;
    private final String path;
    private NativeFiles.Fd data; // the first descriptor, until the second arrives
    private boolean replied;
    private boolean cached; // what the SUCCESS reply said
    private long resident = -1; // what the SUCCESS reply said of the range asked about

    Exchange(CompletableFuture<Fds> result, ExtendedBlock block, String path) {
      this.result = result;
      this.block = block;
      this.path = path;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      if (msg instanceof FileDescriptor fd) {
        onDescriptor(ctx, fd);
        return;
      }
      try {
        if (!(msg instanceof ByteBuf frame) || replied) {
          fail(ctx, new IOException("unexpected message from " + path));
          return;
        }
        replied = true;
        BlockOpResponseProto r = BlockOpResponseProto.parseFrom(new ByteBufInputStream(frame));
        if (r.getStatus() != Status.SUCCESS) {
          fail(ctx, switch (r.getStatus()) {
            case ERROR_ACCESS_TOKEN -> new InvalidBlockTokenException(r.getMessage());
            case ERROR_UNSUPPORTED -> new RdmaBlockClient.LocalReadsRefused(r.getMessage());
            default -> new IOException("short-circuit read of " + block + " refused: " + r.getStatus() + ": "
                + r.getMessage());
          });
          return;
        }
        cached = ShortCircuitSocket.cached(r);
        resident = ShortCircuitSocket.resident(r);
        // descriptors only from now on; the DataNode sends them after the go-ahead, so none is read as bytes
        ((EpollDomainSocketChannel) ctx.channel()).config().setReadMode(DomainSocketReadMode.FILE_DESCRIPTORS);
        ctx.writeAndFlush(frame(ctx.channel(), new byte[0]));
      } catch (IOException e) {
        fail(ctx, new IOException("bad short-circuit reply from " + path + ": " + e.getMessage(), e));
      } finally {
        ReferenceCountUtil.release(msg);
      }
    }

    private void onDescriptor(ChannelHandlerContext ctx, FileDescriptor fd) {
      NativeFiles.Fd f;
      try {
        f = NativeFiles.adopt(fd.intValue());
      } catch (NativeException | RuntimeException e) { // adopt closed it
        fail(ctx, new IOException("bad descriptor from " + path + ": " + e.getMessage(), e));
        return;
      }
      if (result.isDone()) {
        f.close();
        return;
      }
      if (data == null) {
        data = f;
        return;
      }
      Fds both = new Fds(data, f, cached, resident);
      data = null;
      if (!result.complete(both)) {
        both.close(); // the caller gave up meanwhile
      }
      closeAfterRead(ctx);
    }

    private void fail(ChannelHandlerContext ctx, IOException e) {
      result.completeExceptionally(e);
      if (data != null) {
        data.close();
        data = null;
      }
      closeAfterRead(ctx);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      fail(ctx, new IOException("the DataNode closed " + path + " before handing over the files of " + block));
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      fail(ctx, new IOException("short-circuit exchange on " + path + " failed: " + cause, cause));
    }
  }

  @Override
  public synchronized void close() {
    closed = true;
    if (group != null) {
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      group = null;
    }
  }
}
