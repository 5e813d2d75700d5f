package org.hdfsrdma.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.channel.unix.FileDescriptor;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.hdfsrdma.nativelib.NativeFiles;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A write segment's descriptor fetched from a DataNode stand-in of this test (Netty's epoll
 * domain socket server, as the DataNode's plugin): the grant id on the wire, a refusal, a
 * DataNode that never answers or closes before the descriptor, one that passes a descriptor
 * with its reply or one that is not a file, or claims a 2 GiB reply; nothing received stays open.
 */
@Timeout(60)
class SegmentFetchTest {
  private static final ExtendedBlock BLOCK = new ExtendedBlock("BP-test", 2, 0, 1001);
  private static final byte[] GRANT = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

  private enum Behavior {
    GRANT, REFUSE, SILENT, CLOSE_AFTER_GO_AHEAD, BYTE_WITHOUT_DESCRIPTOR, DESCRIPTOR_BEFORE_REPLY, PIPE_FOR_SEGMENT,
    OVERSIZED_REPLY
  }

  private Path dir;
  private Path segment;
  private Path socket;
  private EventLoopGroup group;
  private Channel server;
  private volatile byte[] grantSeen;
  /** The read end of a pipe whose write end the stand-in passes (and then closes its own copy of). */
  private FileDescriptor pipeRead;
  private final java.util.concurrent.CompletableFuture<Void> standInClosedItsCopies =
      new java.util.concurrent.CompletableFuture<>();
  private long fds0;
  private long sockets0;

  @BeforeEach
  void setUp() throws Exception {
    assumeTrue(SegmentFetch.unavailable() == null, SegmentFetch.unavailable());
    dir = Files.createTempDirectory(Path.of("target"), "fetch-").toAbsolutePath();
    segment = Files.write(dir.resolve("segment"), new byte[8192]);
    socket = dir.resolve("dn.sock");
    fds0 = NativeFiles.fdsHeld();
    sockets0 = org.hdfsrdma.nativelib.NativeDomainSocket.openSockets();
    group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
  }

  @AfterEach
  void tearDown() throws Exception {
    if (server != null) {
      server.close().sync();
    }
    if (group != null) {
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    }
    if (pipeRead != null) {
      pipeRead.close();
    }
    if (dir != null) {
      for (Path p : new Path[] {socket, segment, dir}) {
        Files.deleteIfExists(p);
      }
    }
    assertEquals(fds0, NativeFiles.fdsHeld(), "descriptors held");
    assertEquals(sockets0, org.hdfsrdma.nativelib.NativeDomainSocket.openSockets(), "sockets open");
  }

  private SegmentFetch.Request serve(Behavior behavior, long timeoutMs) throws InterruptedException {
    server = new ServerBootstrap().group(group).channel(EpollServerDomainSocketChannel.class)
        .childHandler(new ChannelInitializer<Channel>() {
          @Override
          protected void initChannel(Channel ch) {
            ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(ShortCircuitSocket.MAX_MESSAGE_BYTES, 0, 4, 0, 4),
                new StandIn(behavior));
          }
        }).bind(new DomainSocketAddress(socket.toFile())).sync().channel();
    return new SegmentFetch.Request(socket.toString(), true, BLOCK, null, timeoutMs);
  }

  @Test
  void theGrantedSegmentsDescriptorIsAdopted() throws Exception {
    SegmentFetch.Request r = serve(Behavior.GRANT, 10_000);
    try (NativeFiles.Fd fd = SegmentFetch.fetch(r, GRANT)) {
      assertEquals(8192, fd.size());
      assertEquals(fds0 + 1, NativeFiles.fdsHeld(), "the segment held");
      assertEquals(sockets0, org.hdfsrdma.nativelib.NativeDomainSocket.openSockets(), "the socket closed");
    }
    assertArrayEquals(GRANT, grantSeen);
  }

  @Test
  void aRefusedGrantNamesTheSocketAndTheReason() throws Exception {
    SegmentFetch.Request r = serve(Behavior.REFUSE, 10_000);
    IOException e = assertThrows(IOException.class, () -> SegmentFetch.fetch(r, GRANT));
    assertEquals("write segment refused by " + socket + ": ERROR_ACCESS_TOKEN: no such grant", e.getMessage());
  }

  @Test
  void aDataNodeThatNeverAnswersCostsTheTimeout() throws Exception {
    SegmentFetch.Request r = serve(Behavior.SILENT, 300);
    long t0 = System.nanoTime();
    IOException e = assertThrows(IOException.class, () -> SegmentFetch.fetch(r, GRANT));
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    assertEquals("no answer from " + socket + " within 300 ms", e.getMessage());
    assertTrue(ms >= 250 && ms < 5_000, ms + " ms");
  }

  /** An interrupt of the fetching thread ends its wait soon, not at the timeout. */
  @Test
  void anInterruptEndsAWaitSoon() throws Exception {
    SegmentFetch.Request r = serve(Behavior.SILENT, 20_000);
    java.util.concurrent.CompletableFuture<Throwable> failed = new java.util.concurrent.CompletableFuture<>();
    Thread t = new Thread(() -> {
      try (NativeFiles.Fd fd = SegmentFetch.fetch(r, GRANT)) {
        failed.complete(null);
      } catch (Throwable e) {
        failed.complete(e);
      }
    });
    t.start();
    while (grantSeen == null) {
      Thread.sleep(5); // the request is out
    }
    long t0 = System.nanoTime();
    t.interrupt();
    Throwable e = failed.get(5, TimeUnit.SECONDS);
    t.join();
    assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0) < 2_000);
    assertTrue(e instanceof java.io.InterruptedIOException, String.valueOf(e));
    assertEquals("interrupted waiting for " + socket, e.getMessage());
  }

  @Test
  void aDataNodeClosingBeforeTheDescriptor() throws Exception {
    SegmentFetch.Request r = serve(Behavior.CLOSE_AFTER_GO_AHEAD, 10_000);
    IOException e = assertThrows(IOException.class, () -> SegmentFetch.fetch(r, GRANT));
    assertEquals("the DataNode closed " + socket + " before handing over the write segment", e.getMessage());
  }

  /** A byte where a descriptor should come with it: refused, not taken for one. */
  @Test
  void aByteWithoutADescriptorIsRefused() throws Exception {
    SegmentFetch.Request r = serve(Behavior.BYTE_WITHOUT_DESCRIPTOR, 10_000);
    IOException e = assertThrows(IOException.class, () -> SegmentFetch.fetch(r, GRANT));
    assertEquals("unexpected message from " + socket, e.getMessage());
  }

  /**
   * Whether every copy of the pipe's write end is closed: the stand-in's own (after it sent it),
   * and the one the client received. The read end sees the end of the stream only then.
   */
  private boolean pipeWriteEndsAllClosed() throws Exception {
    standInClosedItsCopies.get(10, TimeUnit.SECONDS);
    java.nio.ByteBuffer b = java.nio.ByteBuffer.allocateDirect(16);
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
    int n;
    do { // the pipe is non-blocking: 0 while a write end is open anywhere
      n = pipeRead.read(b, 0, b.capacity());
    } while (n == 0 && System.nanoTime() < end && sleep());
    return n < 0;
  }

  private static boolean sleep() throws InterruptedException {
    Thread.sleep(10);
    return true;
  }

  /** Descriptors passed with the reply's bytes, where none belong: refused, and closed. */
  @Test
  void aDescriptorWithTheReplyIsRefusedAndClosed() throws Exception {
    SegmentFetch.Request r = serve(Behavior.DESCRIPTOR_BEFORE_REPLY, 10_000);
    IOException e = assertThrows(IOException.class, () -> SegmentFetch.fetch(r, GRANT));
    assertTrue(e.getMessage().contains("failed"), e.getMessage());
    assertTrue(pipeWriteEndsAllClosed(), "the received descriptor is still open in this process");
  }

  /** A descriptor that is not a regular file (a pipe) for the segment: refused, and closed. */
  @Test
  void aDescriptorThatIsNotAFileIsRefusedAndClosed() throws Exception {
    SegmentFetch.Request r = serve(Behavior.PIPE_FOR_SEGMENT, 10_000);
    IOException e = assertThrows(IOException.class, () -> SegmentFetch.fetch(r, GRANT));
    assertTrue(e.getMessage().startsWith("bad descriptor from " + socket), e.getMessage());
    assertTrue(pipeWriteEndsAllClosed(), "the received descriptor is still open in this process");
  }

  /** A reply claiming 2 GiB is refused on its length, before anything of that size is allocated. */
  @Test
  void anOversizedReplyIsRefusedOnItsLength() throws Exception {
    SegmentFetch.Request r = serve(Behavior.OVERSIZED_REPLY, 10_000);
    IOException e = assertThrows(IOException.class, () -> SegmentFetch.fetch(r, GRANT));
    assertTrue(e.getMessage().contains("a message of 2147483647 bytes"), e.getMessage());
  }

  /** Answers a grant's request, then on the go-ahead passes the segment and closes; or misbehaves as told. */
  private final class StandIn extends SimpleChannelInboundHandler<ByteBuf> {
    private final Behavior behavior;
    private boolean replied;

    StandIn(Behavior behavior) {
      this.behavior = behavior;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, ByteBuf frame) throws Exception {
      byte[] got = new byte[frame.readableBytes()];
      frame.readBytes(got);
      if (!replied) {
        replied = true;
        grantSeen = ShortCircuitSocket.grant(OpRequestShortCircuitAccessProto.parseFrom(got));
        switch (behavior) {
          case SILENT -> { }
          case OVERSIZED_REPLY -> ctx.writeAndFlush(ctx.alloc().buffer(5).writeInt(Integer.MAX_VALUE).writeByte(0));
          case DESCRIPTOR_BEFORE_REPLY -> {
            FileDescriptor w = newPipe();
            ctx.writeAndFlush(w).addListener(f -> closeCopies(w));
            reply(ctx, ShortCircuitSocket.granted(false));
          }
          case REFUSE -> reply(ctx, BlockOpResponseProto.newBuilder().setStatus(Status.ERROR_ACCESS_TOKEN)
              .setMessage("no such grant").build()).addListener(ChannelFutureListener.CLOSE);
          default -> reply(ctx, ShortCircuitSocket.granted(false));
        }
        return;
      }
      if (got.length != 0 || behavior == Behavior.CLOSE_AFTER_GO_AHEAD) {
        ctx.close();
        return;
      }
      if (behavior == Behavior.BYTE_WITHOUT_DESCRIPTOR) {
        ctx.writeAndFlush(ctx.alloc().buffer(1).writeByte(0)).addListener(ChannelFutureListener.CLOSE);
        return;
      }
      if (behavior == Behavior.PIPE_FOR_SEGMENT) {
        FileDescriptor w = newPipe();
        ctx.writeAndFlush(w).addListener(f -> closeCopies(w)).addListener(ChannelFutureListener.CLOSE);
        return;
      }
      FileDescriptor d = new FileDescriptor(NativeFiles.openForPassing(segment.toString()));
      ctx.writeAndFlush(d).addListener(f -> d.close()).addListener(ChannelFutureListener.CLOSE);
    }

    private FileDescriptor newPipe() throws IOException {
      FileDescriptor[] p = FileDescriptor.pipe();
      pipeRead = p[0];
      return p[1];
    }

    private void closeCopies(FileDescriptor w) throws IOException {
      w.close();
      standInClosedItsCopies.complete(null);
    }

    private io.netty.channel.ChannelFuture reply(ChannelHandlerContext ctx, BlockOpResponseProto r) {
      byte[] body = r.toByteArray();
      ByteBuf b = ctx.alloc().buffer(4 + body.length);
      b.writeInt(body.length).writeBytes(body);
      return ctx.writeAndFlush(b);
    }
  }
}
