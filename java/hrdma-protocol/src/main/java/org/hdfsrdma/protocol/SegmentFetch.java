package org.hdfsrdma.protocol;

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
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.nativelib.NativeFiles;

/**
 * Fetches a granted write segment's descriptor from the receiving DataNode's Unix domain
 * socket ({@link ShortCircuitSocket}): the request carries the one-time grant id of the
 * WRITE_SHM_GRANT in {@link ShortCircuitSocket#GRANT_FIELD}, the DataNode answers SUCCESS, the
 * sender its go-ahead, the DataNode the descriptor (SCM_RIGHTS), which is adopted
 * ({@link NativeFiles#adopt}). The descriptor crosses users: a sender running as another user
 * than the DataNode maps it without any permission on a file. One connection per fetch, on
 * one shared event loop thread (daemon), made on first use. The channel is closed by a task of
 * its event loop, never from inside a read (see ShortCircuitClient in hrdma-client: a read after
 * the close would take whatever the descriptor's number means by then).
 */
public final class SegmentFetch {
  private static EventLoopGroup group; // guarded by SegmentFetch.class

  private SegmentFetch() {}

  /** Where to ask and with what: the socket, its path check, the block and token of the grant's request. */
  public record Request(String socketPath, boolean allowSticky, ExtendedBlock block,
      Token<BlockTokenIdentifier> token, long timeoutMs) {}

  /** Why fetching descriptors cannot work in this process at all, or null. */
  public static String unavailable() {
    if (!Epoll.isAvailable()) {
      return "no epoll transport: " + Epoll.unavailabilityCause();
    }
    if (!HrdmaNative.isAvailable()) {
      return "the native library is not loaded: " + HrdmaNative.unavailabilityCause();
    }
    return null;
  }

  private static synchronized EventLoopGroup group() {
    if (group == null) {
      group = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("hrdma-segment-fetch", true),
          EpollIoHandler.newFactory());
    }
    return group;
  }

  /**
   * The segment granted as {@code grant}, adopted; the caller closes it.
   *
   * @throws IOException refused, no socket, or no answer within the timeout
   */
  public static NativeFiles.Fd fetch(Request r, byte[] grant) throws IOException {
    String why = unavailable();
    if (why != null) {
      throw new IOException(why);
    }
    Path p = Path.of(r.socketPath());
    if (!Files.exists(p)) {
      throw new IOException("no DataNode socket at " + p);
    }
    boolean tokenPresent = r.token() != null && r.token().getIdentifier().length > 0;
    // with tokens the grant id goes only to a socket no other local user could have created first
    SocketPaths.checkForClient(p, !tokenPresent || r.allowSticky());
    byte[] req = ShortCircuitSocket.segmentRequest(r.block(), r.token(), grant).toByteArray();
    CompletableFuture<NativeFiles.Fd> result = new CompletableFuture<>();
    ChannelFuture cf = new Bootstrap().group(group()).channel(EpollDomainSocketChannel.class)
        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, r.timeoutMs()))
        .handler(new ChannelInitializer<Channel>() {
          @Override
          protected void initChannel(Channel ch) {
            ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(ShortCircuitSocket.MAX_MESSAGE_BYTES, 0, 4, 0, 4),
                new Exchange(result, r.socketPath()));
          }
        }).connect(new DomainSocketAddress(r.socketPath()));
    Channel ch = cf.channel();
    cf.addListener(f -> {
      if (!f.isSuccess()) {
        result.completeExceptionally(new IOException("cannot connect to " + r.socketPath() + ": " + f.cause()));
      } else {
        ch.writeAndFlush(frame(ch, req));
      }
    });
    NativeFiles.Fd got = null;
    try {
      got = result.get(r.timeoutMs(), TimeUnit.MILLISECONDS);
      return got;
    } catch (TimeoutException e) {
      throw new IOException("no answer from " + r.socketPath() + " within " + r.timeoutMs() + " ms");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new java.io.InterruptedIOException("interrupted waiting for " + r.socketPath());
    } catch (ExecutionException e) {
      if (e.getCause() instanceof IOException io) {
        throw io;
      }
      throw new IOException(e.getCause());
    } finally {
      if (got == null && !result.completeExceptionally(new IOException("given up"))) {
        try {
          NativeFiles.Fd late = result.getNow(null);
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

  private static ByteBuf frame(Channel ch, byte[] body) {
    ByteBuf b = ch.alloc().buffer(4 + body.length);
    b.writeInt(body.length);
    b.writeBytes(body);
    return b;
  }

  private static void closeAfterRead(ChannelHandlerContext ctx) {
    try {
      ctx.channel().eventLoop().execute(() -> ctx.close());
    } catch (java.util.concurrent.RejectedExecutionException e) {
      ctx.close();
    }
  }

  /** Reply, go-ahead, one descriptor. */
  private static final class Exchange extends ChannelInboundHandlerAdapter {
    private final CompletableFuture<NativeFiles.Fd> result;
    private final String path;
    private boolean replied;

    Exchange(CompletableFuture<NativeFiles.Fd> result, String path) {
      this.result = result;
      this.path = path;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      if (msg instanceof FileDescriptor fd) {
        NativeFiles.Fd f;
        try {
          f = NativeFiles.adopt(fd.intValue());
        } catch (NativeException | RuntimeException e) { // adopt closed it
          fail(ctx, new IOException("bad descriptor from " + path + ": " + e.getMessage(), e));
          return;
        }
        if (!result.complete(f)) {
          f.close(); // the caller gave up meanwhile, or a second one
        }
        closeAfterRead(ctx);
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
          fail(ctx, new IOException("write segment refused by " + path + ": " + r.getStatus() + ": "
              + r.getMessage()));
          return;
        }
        ((EpollDomainSocketChannel) ctx.channel()).config().setReadMode(DomainSocketReadMode.FILE_DESCRIPTORS);
        ctx.writeAndFlush(frame(ctx.channel(), new byte[0]));
      } catch (IOException e) {
        fail(ctx, new IOException("bad reply from " + path + ": " + e.getMessage(), e));
      } finally {
        ReferenceCountUtil.release(msg);
      }
    }

    private void fail(ChannelHandlerContext ctx, IOException e) {
      result.completeExceptionally(e);
      closeAfterRead(ctx);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      fail(ctx, new IOException("the DataNode closed " + path + " before handing over the write segment"));
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      fail(ctx, new IOException("write segment exchange on " + path + " failed: " + cause, cause));
    }
  }
}
