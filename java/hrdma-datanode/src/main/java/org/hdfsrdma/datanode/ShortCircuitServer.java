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
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier.AccessMode;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.hdfsrdma.datanode.compat.DataNodeAccess;
import org.hdfsrdma.datanode.compat.FaultHooks;
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
 *
 * <p>No event loop thread waits on a disk: the event loop parses the request, checks the
 * token and finds the replica's volume (in memory), and everything that touches the volume
 * (the dataset's lookup, which stats the block file; the two opens; the page-cache probe;
 * whether the replica is cached) runs on that volume's read executor, as a block read's
 * disk work does. The answer is written from the event loop once that work is done. A
 * volume that has not done it within the timeout ({@value #TIMEOUT_KEY}, from the
 * request) gets the request an ERROR naming the volume (counted: {@link #volumeTimeouts});
 * descriptors it opens later are closed there and then. The timeout starts again with the
 * answer, so that the client's go-ahead gets all of it however long the volume took. So a
 * hung volume holds up its own requests only, as stock's DataXceiver thread per request does.
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
  private final AtomicLong volumeTimeouts = new AtomicLong();
  private final AtomicLong lateLookups = new AtomicLong();
  private final AtomicLong descriptorsOpen = new AtomicLong();
  /** The read executor of a volume by storage ID, where a request's disk work runs. */
  private final java.util.function.Function<String, Executor> volumes;
  /** Whether replicas' files are handed out (short-circuit reads on); else only write segments. */
  private final boolean replicas;
  /** Write segments to hand out by grant id; null: none. */
  private final WriteShmGrants writeShm;

  private ShortCircuitServer(DataNodeAccess dn, Path path, long timeoutMs, int maxConnections, boolean replicas,
      WriteShmGrants writeShm, java.util.function.Function<String, Executor> volumes) throws IOException {
    this.dn = dn;
    this.volumes = volumes;
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
              ch.pipeline().addLast(new Deadline(),
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
      boolean allowSticky, java.util.function.Function<String, Executor> volumes) throws IOException {
    return start(dn, path, timeoutMs, maxConnections, allowSticky, true, null, volumes);
  }

  /**
   * As {@link #start(DataNodeAccess, String, long, int, boolean, java.util.function.Function)};
   * {@code replicas}: replicas' files are handed out (short-circuit reads); {@code writeShm}:
   * the write segments whose descriptors are handed out by grant id (null: none);
   * {@code volumes}: the read executor of a volume by storage ID, where the disk work of a
   * request for a replica on it runs (it may refuse: RejectedExecutionException).
   */
  static ShortCircuitServer start(DataNodeAccess dn, String path, long timeoutMs, int maxConnections,
      boolean allowSticky, boolean replicas, WriteShmGrants writeShm,
      java.util.function.Function<String, Executor> volumes) throws IOException {
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
    return new ShortCircuitServer(dn, p, timeoutMs, maxConnections, replicas, writeShm, volumes);
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

  /** Requests refused so far (token, not finalized, bad request, too many connections, a volume's timeout). */
  long refused() {
    return refused.get();
  }

  /** Requests refused because their replica's volume did not open it within the timeout. */
  long volumeTimeouts() {
    return volumeTimeouts.get();
  }

  /**
   * Requests whose volume did its work after they were refused (its timeout) or their client
   * went: what it opened was closed then.
   */
  long lateLookups() {
    return lateLookups.get();
  }

  /**
   * Descriptors opened (or taken, a write segment's) to be passed and not closed yet: those
   * waiting for a client's go-ahead or being sent, and those a late volume opens until they are
   * closed (leak checks: 0 once no exchange is in progress).
   */
  long descriptorsOpen() {
    return descriptorsOpen.get();
  }

  /**
   * The connection's timeout, as before a {@link ReadTimeoutHandler}: nothing read for the
   * timeout closes it. While the request's volume has not answered, the same timeout (counted
   * from the request, the last thing the client sent) is that volume's deadline instead: the
   * request is answered with an error naming the volume, then the connection closes. A grant
   * restarts it ({@link #resetReadTimeout}): the client's go-ahead is owed within the timeout
   * of the grant, not of the request.
   */
  private final class Deadline extends ReadTimeoutHandler {
    Deadline() {
      super(timeoutMs, TimeUnit.MILLISECONDS);
    }

    @Override
    protected void readTimedOut(ChannelHandlerContext ctx) throws Exception {
      Exchange x = ctx.pipeline().get(Exchange.class);
      if (x != null && x.volumeTimedOut()) {
        return;
      }
      super.readTimedOut(ctx);
    }
  }

  /** A descriptor to pass, counted in {@link #descriptorsOpen} until it is closed. */
  private final class Passed extends FileDescriptor {
    private final AtomicBoolean closed = new AtomicBoolean();

    Passed(int fd) {
      super(fd);
      descriptorsOpen.incrementAndGet();
    }

    @Override
    public void close() throws IOException {
      if (closed.compareAndSet(false, true)) {
        descriptorsOpen.decrementAndGet();
      }
      super.close();
    }
  }

  /**
   * One connection's exchange: request, reply, then (on SUCCESS) the client's go-ahead and the
   * descriptors. Its state is the event loop's; a request's disk work ({@link Lookup}) runs on
   * its volume's thread and hands its result back to the event loop.
   */
  private final class Exchange extends SimpleChannelInboundHandler<ByteBuf> {
    private FileDescriptor[] fds; // opened, waiting for the client's go-ahead; event loop only
    private boolean fdsOfCached;  // the reply said fds' replica is cached
    private boolean counted;
    private Lookup pending;       // the request whose volume has not answered yet; event loop only

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
      abandon();
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

    /** The pending request will not be answered: its volume's work is skipped if not begun, or undone when done. */
    private void abandon() {
      Lookup l = pending;
      if (l != null) {
        pending = null;
        l.abandoned = true;
      }
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, ByteBuf frame) {
      if (pending != null) { // an honest client waits for the answer
        refuse(ctx, Status.ERROR_INVALID, "expected nothing before the answer to the request");
        return;
      }
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
        int fd = writeShm == null ? -1 : writeShm.take(grant); // in memory
        if (fd < 0) {
          refuse(ctx, Status.ERROR_ACCESS_TOKEN, "no write segment is granted under that id on DataNode "
              + dn.datanodeUuid() + " (unknown, fetched already, or expired)");
          return;
        }
        fds = new FileDescriptor[] {new Passed(fd)};
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
      DataNodeAccess.Volume volume;
      try {
        dn.checkBlockToken(ShortCircuitSocket.token(op), block, AccessMode.READ);
        volume = dn.volumeOf(block); // the replica map, in memory
      } catch (InvalidToken e) {
        refuse(ctx, Status.ERROR_ACCESS_TOKEN, "Block token verification failed: op=REQUEST_SHORT_CIRCUIT_FDS, "
            + "message=" + e.getMessage());
        return;
      } catch (IOException | RuntimeException e) {
        refuse(ctx, Status.ERROR, "DataNode " + dn.datanodeUuid() + ": " + e.getMessage());
        return;
      }
      if (volume == null) {
        refuse(ctx, Status.ERROR, "DataNode " + dn.datanodeUuid() + ": " + block + " has no finalized replica here");
        return;
      }
      long[] range = ShortCircuitSocket.probe(op);
      if (range != null) {
        probes.incrementAndGet();
      }
      Lookup l = new Lookup(ctx, block, volume, range);
      pending = l;
      try {
        volumes.apply(volume.storageId()).execute(l);
      } catch (RejectedExecutionException e) {
        pending = null;
        refuse(ctx, Status.ERROR, "DataNode " + dn.datanodeUuid() + ": volume " + volume.storageId() + " ("
            + volume.baseDir() + ") has too many requests queued, or the DataNode stops; " + block
            + " is not opened");
      }
    }

    /**
     * Event loop: the volume's work for {@code l} is done. Answered if it is still this
     * connection's request; else (timed out, the client gone) what it opened is closed.
     */
    private void done(Lookup l) {
      if (pending != l || !l.ctx.channel().isActive()) {
        l.closeFds();
        lateLookups.incrementAndGet();
        return;
      }
      pending = null;
      if (l.status != null) {
        refuse(l.ctx, l.status, l.error);
        return;
      }
      fds = new FileDescriptor[] {l.data, l.meta};
      fdsOfCached = l.cached;
      send(l.ctx, ShortCircuitSocket.granted(l.cached, l.resident));
      // the go-ahead is owed from now: a volume that took most of the timeout leaves it whole
      Deadline d = l.ctx.pipeline().get(Deadline.class);
      if (d != null) {
        d.resetReadTimeout();
      }
    }

    /**
     * Event loop, at the timeout: true when a request was waiting for its volume (now refused
     * with an error naming it; what the volume opens later is closed); false when none was.
     */
    boolean volumeTimedOut() {
      Lookup l = pending;
      if (l == null) {
        return false;
      }
      abandon();
      volumeTimeouts.incrementAndGet();
      String why = "volume " + l.volume.storageId() + " (" + l.volume.baseDir() + ") did not open the replica of "
          + l.block + " within " + timeoutMs + " ms (" + TIMEOUT_KEY + ")";
      LOG.warn("hrdma datanode: short-circuit request refused: {}", why);
      refuse(l.ctx, Status.ERROR, "DataNode " + dn.datanodeUuid() + ": " + why);
      return true;
    }

    private void refuse(ChannelHandlerContext ctx, Status status, String message) {
      refused.incrementAndGet();
      abandon();
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
      abandon();
      closeFds();
      ctx.close();
    }

    /**
     * The disk work of one request, on its volume's read thread: the dataset's lookup (it stats
     * the block file), the two opens, whether the DataNode caches the replica, the page-cache
     * probe. Then {@link #done} on the event loop; when that loop has stopped, what was opened
     * is closed here.
     */
    private final class Lookup implements Runnable {
      final ChannelHandlerContext ctx;
      final ExtendedBlock block;
      final DataNodeAccess.Volume volume;
      final long[] range;
      /** Set on the event loop when the request will not be answered: the work is skipped if not begun. */
      volatile boolean abandoned;
      // written on the volume's thread before done() is queued on the event loop, read there after
      FileDescriptor data;
      FileDescriptor meta;
      boolean cached;
      long resident = -1;
      Status status; // not null: refused with error
      String error;

      Lookup(ChannelHandlerContext ctx, ExtendedBlock block, DataNodeAccess.Volume volume, long[] range) {
        this.ctx = ctx;
        this.block = block;
        this.volume = volume;
        this.range = range;
      }

      @Override
      public void run() {
        if (abandoned) {
          return; // timed out or the client went before the volume got to it: nothing opened
        }
        try {
          open();
        } catch (Throwable t) { // an Error too: unanswered, the client would wait for the timeout
          closeFds();
          status = Status.ERROR;
          error = "DataNode " + dn.datanodeUuid() + ": " + t;
        }
        try {
          ctx.executor().execute(() -> done(this));
        } catch (RejectedExecutionException e) {
          closeFds(); // the server stops: no one will answer or take them
          lateLookups.incrementAndGet();
        }
      }

      private void open() {
        try {
          FaultHooks.shortCircuitOpen(volume.storageId());
          DataNodeAccess.LocalPaths p = dn.localPaths(block); // finalized only
          if (p.block().getNumBytes() != block.getNumBytes()) {
            status = Status.ERROR;
            error = "the replica of " + block + " on DataNode " + dn.datanodeUuid() + " has "
                + p.block().getNumBytes() + " bytes, not " + block.getNumBytes();
            return;
          }
          // read-only, by our own open: the descriptors may go only to readers
          data = new Passed(NativeFiles.openForPassing(p.data()));
          meta = new Passed(NativeFiles.openForPassing(p.meta()));
        } catch (IOException | RuntimeException e) {
          closeFds();
          status = Status.ERROR;
          error = "DataNode " + dn.datanodeUuid() + ": " + e.getMessage();
          return;
        }
        try {
          cached = dn.isCached(block);
        } catch (IOException | RuntimeException e) {
          cached = false; // the client verifies then: never wrong, only slower
        }
        if (range != null) {
          // the client has other replicas on this host to choose from: it takes one whose range is
          // in the page cache. Asked here because the kernel tells residency only to the file's owner
          try {
            resident = NativeDisk.residentBytes(data.intValue(), range[0], range[1]);
          } catch (IOException | RuntimeException e) {
            resident = -1; // not said: the client takes this replica as any other
          }
        }
      }

      void closeFds() {
        closeQuietly(data);
        closeQuietly(meta);
        data = null;
        meta = null;
      }
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
