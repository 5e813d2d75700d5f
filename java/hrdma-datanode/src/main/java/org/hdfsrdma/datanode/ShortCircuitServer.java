package org.hdfsrdma.datanode;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import io.netty.buffer.ByteBufOutputStream;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.channel.unix.FileDescriptor;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.timeout.ReadTimeoutHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier.AccessMode;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.hdfsrdma.datanode.compat.DataNodeAccess;
import org.hdfsrdma.nativelib.NativeDisk;
import org.hdfsrdma.nativelib.NativeFiles;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.ShortCircuitSocket;
import org.hdfsrdma.protocol.SocketPaths;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plugin's short-circuit server: a Unix domain socket (see
 * {@link ShortCircuitSocket} for the path and the exchange) on which a
 * client on this host asks for a finalized replica's files with the block's
 * token. The token is checked as for a read (READ access), the replica must
 * be finalized with the length the client expects; the DataNode then opens
 * the block and .meta files itself, read-only, and passes the two
 * descriptors (SCM_RIGHTS), so the client needs no permission on the data
 * directories and never learns a path. A refusal is an error status with a
 * message, then the socket closes.
 *
 * <p>A slow or hostile peer costs one connection slot for at most the
 * timeout ({@value #TIMEOUT_KEY}); connections beyond {@value #MAX_CONNECTIONS_KEY}
 * are closed at once; messages beyond {@link ShortCircuitSocket#MAX_MESSAGE_BYTES}
 * close the connection. Descriptors opened for a client that goes away are
 * closed. Its own event loop threads; thread-safe.
 */
final class ShortCircuitServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ShortCircuitServer.class);

  /** How long a short-circuit connection may take for its whole exchange. */
  static final String TIMEOUT_KEY = HrdmaDataNodeKeys.SHORT_CIRCUIT_TIMEOUT_MS_KEY;
  static final long TIMEOUT_DEFAULT = HrdmaDataNodeKeys.SHORT_CIRCUIT_TIMEOUT_MS_DEFAULT;
  /** Short-circuit connections open at once; more are closed at once (the client reads over the transport). */
  static final String MAX_CONNECTIONS_KEY = HrdmaDataNodeKeys.SHORT_CIRCUIT_MAX_CONNECTIONS_KEY;
  static final int MAX_CONNECTIONS_DEFAULT = HrdmaDataNodeKeys.SHORT_CIRCUIT_MAX_CONNECTIONS_DEFAULT;
  private static final int THREADS = 2;

  private final DataNodeAccess dn;
  private final Path path;
  private final long timeoutMs;
  private final int maxConnections;
  private final EventLoopGroup group;
  private final Channel server;
  private final AtomicInteger open = new AtomicInteger();
  private final AtomicLong granted = new AtomicLong();
  private final AtomicLong refused = new AtomicLong();
  private final AtomicLong grantedCached = new AtomicLong();
  private final AtomicLong probes = new AtomicLong();
  private final AtomicLong segmentsPassed = new AtomicLong();
  /** Whether replicas' files are handed out (short-circuit reads on); else only write segments. */
  private final boolean replicas;
  /** Write segments to hand out by grant id; null: none. */
  private final WriteShmGrants writeShm;

  private ShortCircuitServer(DataNodeAccess dn, Path path, long timeoutMs, int maxConnections, boolean replicas,
      WriteShmGrants writeShm) throws IOException {
    this.dn = dn;
    this.replicas = replicas;
    this.writeShm = writeShm;
    this.path = path;
    this.timeoutMs = timeoutMs;
    this.maxConnections = maxConnections;
    this.group = new MultiThreadIoEventLoopGroup(THREADS,
        new DefaultThreadFactory("hrdma-dn-scr-" + dn.xferPort(), true), EpollIoHandler.newFactory());
    try {
      this.server = new ServerBootstrap().group(group).channel(EpollServerDomainSocketChannel.class)
          .childHandler(new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel ch) {
              ch.pipeline().addLast(new ReadTimeoutHandler(timeoutMs, TimeUnit.MILLISECONDS),
                  new LengthFieldBasedFrameDecoder(ShortCircuitSocket.MAX_MESSAGE_BYTES, 0, 4, 0, 4),
                  new Exchange());
            }
          }).bind(new DomainSocketAddress(path.toFile())).sync().channel();
    } catch (InterruptedException e) {
      group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while binding " + path, e);
    } catch (RuntimeException e) {
      group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      throw new IOException("cannot bind " + path + ": " + e, e);
    }
    // any user may connect: the block token is the gate, as for stock's socket
    Files.setPosixFilePermissions(path, java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-rw-"));
  }

  /**
   * Listens on {@code path} after checking its directories as stock's
   * DomainSocket does (each owned by root or this user, none writable by
   * others; a sticky one only if {@code allowSticky}, see {@link SocketPaths});
   * a stale socket file there is replaced.
   *
   * @throws IOException the path is not safe, or cannot be bound (no epoll here)
   */
  static ShortCircuitServer start(DataNodeAccess dn, String path, long timeoutMs, int maxConnections,
      boolean allowSticky) throws IOException {
    return start(dn, path, timeoutMs, maxConnections, allowSticky, true, null);
  }

  /**
   * As {@link #start(DataNodeAccess, String, long, int, boolean)}; {@code replicas}: replicas'
   * files are handed out (short-circuit reads); {@code writeShm}: the write segments whose
   * descriptors are handed out by grant id (null: none).
   */
  static ShortCircuitServer start(DataNodeAccess dn, String path, long timeoutMs, int maxConnections,
      boolean allowSticky, boolean replicas, WriteShmGrants writeShm) throws IOException {
    if (!Epoll.isAvailable()) {
      throw new IOException("no epoll transport here: " + Epoll.unavailabilityCause());
    }
    if (!org.hdfsrdma.nativelib.HrdmaNative.isAvailable()) {
      throw new IOException("the native library is not loaded: "
          + org.hdfsrdma.nativelib.HrdmaNative.unavailabilityCause());
    }
    if (timeoutMs < 1 || maxConnections < 1) {
      throw new IOException("bad short-circuit settings: " + TIMEOUT_KEY + "=" + timeoutMs + ", "
          + MAX_CONNECTIONS_KEY + "=" + maxConnections);
    }
    Path p = Path.of(path).toAbsolutePath();
    SocketPaths.checkForServer(p, allowSticky);
    if (Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
      if (!"socket".equals(SocketPaths.type(p))) {
        throw new IOException(p + " exists and is not a socket; not replacing it");
      }
      if (SocketPaths.listening(p)) {
        throw new IOException("another process listens on " + p + "; not replacing it");
      }
      Files.delete(p); // a socket of a DataNode that died: nothing listens there any more
    }
    return new ShortCircuitServer(dn, p, timeoutMs, maxConnections, replicas, writeShm);
  }

  Path path() {
    return path;
  }

  /** Descriptor pairs handed out so far. */
  long granted() {
    return granted.get();
  }

  /** Grants whose reply said the replica is cached by this DataNode (the client skips checksums). */
  long grantedCached() {
    return grantedCached.get();
  }

  /** Write segment descriptors handed out so far. */
  long segmentsPassed() {
    return segmentsPassed.get();
  }

  /** Requests that asked how much of a range is in the page cache. */
  long probes() {
    return probes.get();
  }

  /** Requests refused so far (token, not finalized, bad request, too many connections). */
  long refused() {
    return refused.get();
  }

  /** One connection's exchange: request, reply, then (on SUCCESS) the client's go-ahead and the descriptors. */
  private final class Exchange extends SimpleChannelInboundHandler<ByteBuf> {
    private FileDescriptor[] fds; // opened, waiting for the client's go-ahead; event loop only
    private boolean fdsOfCached;  // the reply said fds' replica is cached
    private boolean counted;

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
      counted = true;
      if (open.incrementAndGet() > maxConnections) {
        refused.incrementAndGet();
        LOG.info("hrdma datanode: more than {} short-circuit connections ({}), closing one",
            maxConnections, MAX_CONNECTIONS_KEY);
        ctx.close();
      }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      if (counted) {
        open.decrementAndGet();
      }
      closeFds();
    }

    private void closeFds() {
      if (fds != null) {
        for (FileDescriptor f : fds) {
          closeQuietly(f);
        }
        fds = null;
      }
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, ByteBuf frame) {
      if (fds != null) { // the go-ahead: hand them over, then we are done
        if (frame.isReadable()) {
          refuse(ctx, Status.ERROR_INVALID, "expected an empty message before the descriptors");
          return;
        }
        FileDescriptor[] out = fds;
        fds = null;
        // counted before they go: a client holding them must find them counted
        if (out.length == 1) {
          segmentsPassed.incrementAndGet();
        } else {
          granted.incrementAndGet();
        }
        if (fdsOfCached) {
          grantedCached.incrementAndGet();
        }
        for (int i = 0; i < out.length - 1; i++) {
          FileDescriptor f0 = out[i];
          ctx.write(f0).addListener(f -> closeQuietly(f0));
        }
        FileDescriptor last = out[out.length - 1];
        ctx.writeAndFlush(last).addListener(f -> closeQuietly(last)).addListener(ChannelFutureListener.CLOSE);
        return;
      }
      OpRequestShortCircuitAccessProto op;
      try {
        op = OpRequestShortCircuitAccessProto.parseFrom(new ByteBufInputStream(frame));
      } catch (IOException e) {
        refuse(ctx, Status.ERROR_INVALID, "bad short-circuit request: " + e.getMessage());
        return;
      }
      byte[] grant = ShortCircuitSocket.grant(op);
      if (grant != null) { // a write segment: the one-time id granted on the transport connection is the capability
        int fd = writeShm == null ? -1 : writeShm.take(grant);
        if (fd < 0) {
          refuse(ctx, Status.ERROR_ACCESS_TOKEN, "no write segment is granted under that id on DataNode "
              + dn.datanodeUuid() + " (unknown, fetched already, or expired)");
          return;
        }
        fds = new FileDescriptor[] {new FileDescriptor(fd)};
        fdsOfCached = false;
        send(ctx, ShortCircuitSocket.granted(false));
        return;
      }
      if (!replicas) {
        refuse(ctx, Status.ERROR_UNSUPPORTED, "short-circuit reads are off on DataNode " + dn.datanodeUuid());
        return;
      }
      ExtendedBlock block = ShortCircuitSocket.block(op);
      if (op.getMaxVersion() < ShortCircuitSocket.BLOCK_FORMAT_VERSION) {
        refuse(ctx, Status.ERROR_UNSUPPORTED, "the client reads block format " + op.getMaxVersion()
            + " at most; DataNode " + dn.datanodeUuid() + " serves " + ShortCircuitSocket.BLOCK_FORMAT_VERSION);
        return;
      }
      try {
        dn.checkBlockToken(ShortCircuitSocket.token(op), block, AccessMode.READ);
      } catch (InvalidToken e) {
        refuse(ctx, Status.ERROR_ACCESS_TOKEN, "Block token verification failed: op=REQUEST_SHORT_CIRCUIT_FDS, "
            + "message=" + e.getMessage());
        return;
      } catch (IOException e) {
        refuse(ctx, Status.ERROR, "DataNode " + dn.datanodeUuid() + ": " + e.getMessage());
        return;
      }
      FileDescriptor data = null;
      FileDescriptor meta = null;
      try {
        DataNodeAccess.LocalPaths p = dn.localPaths(block); // finalized only
        if (p.block().getNumBytes() != block.getNumBytes()) {
          refuse(ctx, Status.ERROR, "the replica of " + block + " on DataNode " + dn.datanodeUuid() + " has "
              + p.block().getNumBytes() + " bytes, not " + block.getNumBytes());
          return;
        }
        // read-only, by our own open: the descriptors may go only to readers
        data = new FileDescriptor(NativeFiles.openForPassing(p.data()));
        meta = new FileDescriptor(NativeFiles.openForPassing(p.meta()));
      } catch (IOException | RuntimeException e) {
        closeQuietly(data);
        closeQuietly(meta);
        refuse(ctx, Status.ERROR, "DataNode " + dn.datanodeUuid() + ": " + e.getMessage());
        return;
      }
      boolean cached;
      try {
        cached = dn.isCached(block);
      } catch (IOException | RuntimeException e) {
        cached = false; // the client verifies then: never wrong, only slower
      }
      long resident = -1;
      long[] range = ShortCircuitSocket.probe(op);
      if (range != null) {
        // the client has other replicas on this host to choose from: it takes one whose range is
        // in the page cache. Asked here because the kernel tells residency only to the file's owner
        probes.incrementAndGet();
        try {
          resident = NativeDisk.residentBytes(data.intValue(), range[0], range[1]);
        } catch (IOException | RuntimeException e) {
          resident = -1; // not said: the client takes this replica as any other
        }
      }
      fds = new FileDescriptor[] {data, meta};
      fdsOfCached = cached;
      send(ctx, ShortCircuitSocket.granted(cached, resident));
    }

    private void refuse(ChannelHandlerContext ctx, Status status, String message) {
      refused.incrementAndGet();
      closeFds();
      LOG.debug("hrdma datanode: short-circuit request refused: {}", message);
      send(ctx, BlockOps.error(status, message)).addListener(ChannelFutureListener.CLOSE);
    }

    private io.netty.channel.ChannelFuture send(ChannelHandlerContext ctx, BlockOpResponseProto reply) {
      ByteBuf b = ctx.alloc().buffer(4 + reply.getSerializedSize());
      b.writeInt(reply.getSerializedSize());
      try (ByteBufOutputStream out = new ByteBufOutputStream(b)) {
        reply.writeTo(out);
      } catch (IOException e) {
        b.release();
        throw new IllegalStateException("cannot encode into memory", e);
      }
      return ctx.writeAndFlush(b);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      // a timeout, a frame too long, a reset: this connection only
      LOG.debug("hrdma datanode: short-circuit connection closed: {}", cause.toString());
      closeFds();
      ctx.close();
    }
  }

  private static void closeQuietly(FileDescriptor f) {
    if (f == null) {
      return;
    }
    try {
      f.close();
    } catch (IOException e) {
      // read-only descriptor: nothing to lose
    }
  }

  /** Stops listening, closes every connection and removes the socket file. */
  @Override
  public void close() {
    server.close().awaitUninterruptibly(timeoutMs);
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(10_000);
    try {
      Files.deleteIfExists(path);
    } catch (IOException e) {
      LOG.debug("hrdma datanode: cannot remove {}: {}", path, e.toString());
    }
  }

  @Override
  public String toString() {
    return "ShortCircuitServer[" + path + "]";
  }
}
