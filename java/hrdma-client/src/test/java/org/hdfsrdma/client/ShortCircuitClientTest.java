package org.hdfsrdma.client;

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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.InvalidBlockTokenException;
import org.hdfsrdma.nativelib.NativeDomainSocket;
import org.hdfsrdma.nativelib.NativeFiles;
import org.hdfsrdma.protocol.ShortCircuitSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The short-circuit exchange against a DataNode stand-in of this test (Netty's epoll domain
 * socket server, as the DataNode's plugin): the bytes it is sent, its refusals, a DataNode that
 * never answers or closes early; nothing received stays open.
 */
@Timeout(60)
class ShortCircuitClientTest {
  private static final ExtendedBlock BLOCK = new ExtendedBlock("BP-test", 1, 4096, 1001);

  private enum Behavior { GRANT, REFUSE_TOKEN, SILENT, ONE_THEN_CLOSE }

  private Path dir;
  private Path data;
  private Path meta;
  private Path dnSocket;
  private EventLoopGroup group;
  private final List<AutoCloseable> open = new ArrayList<>();
  /** The requests the stand-in got, as framed on the wire (length, body). */
  private final List<byte[]> requests = java.util.Collections.synchronizedList(new ArrayList<>());
  private long fds0;
  private long sockets0;

  @BeforeEach
  void setUp() throws Exception {
    assumeTrue(ShortCircuitClient.unavailable() == null, ShortCircuitClient.unavailable());
    dir = Files.createTempDirectory(Path.of("target"), "scc-").toAbsolutePath();
    data = Files.write(dir.resolve("blk"), new byte[4096]);
    meta = Files.write(dir.resolve("blk.meta"), new byte[7]);
    dnSocket = dir.resolve("dn.sock");
    fds0 = NativeFiles.fdsHeld();
    sockets0 = NativeDomainSocket.openSockets();
    group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
  }

  @AfterEach
  void tearDown() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
    if (group != null) {
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    }
    if (dir != null) {
      for (Path p : new Path[] {dnSocket, data, meta, dir}) {
        Files.deleteIfExists(p);
      }
    }
    assertEquals(fds0, NativeFiles.fdsHeld(), "descriptors held");
    assertEquals(sockets0, NativeDomainSocket.openSockets(), "sockets open");
  }

  private void serve(Behavior behavior) throws InterruptedException {
    Channel server = new ServerBootstrap().group(group).channel(EpollServerDomainSocketChannel.class)
        .childHandler(new ChannelInitializer<Channel>() {
          @Override
          protected void initChannel(Channel ch) {
            ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(ShortCircuitSocket.MAX_MESSAGE_BYTES, 0, 4, 0, 4),
                new StandIn(behavior));
          }
        }).bind(new DomainSocketAddress(dnSocket.toFile())).sync().channel();
    open.add(() -> server.close().sync());
  }

  /**
   * Descriptors received, the request's bytes those of a framed OpRequestShortCircuitAccessProto
   * and the go-ahead an empty message; the exchange's socket is closed before the request
   * returns, by the requesting thread, so nothing can read from its number afterwards (a socket
   * closed asynchronously, under a read loop, once took bytes meant for a socket that got the
   * number next).
   */
  @Test
  void descriptorsReceivedAndTheSocketClosedBeforeTheRequestReturns() throws Exception {
    serve(Behavior.GRANT);
    AtomicReference<NativeDomainSocket> seen = new AtomicReference<>();
    AtomicReference<Thread> hookThread = new AtomicReference<>();
    try (ShortCircuitClient client = new ShortCircuitClient(10_000, true)) {
      client.channelHook(s -> {
        seen.set(s);
        hookThread.set(Thread.currentThread());
      });
      try (ShortCircuitClient.Fds f = client.request(dnSocket.toString(), BLOCK, null, 0, 4096)) {
        assertTrue(seen.get().isClosed(), "the exchange's socket is closed when the request returns");
        assertEquals(Thread.currentThread(), hookThread.get());
        assertEquals(4096, f.data().size());
        assertEquals(7, f.meta().size());
        assertEquals(4096, f.resident());
        assertEquals(fds0 + 2, NativeFiles.fdsHeld(), "the two files held");
        assertEquals(sockets0, NativeDomainSocket.openSockets(), "the socket closed");
      }
    }
    assertEquals(2, requests.size(), "a request and a go-ahead");
    OpRequestShortCircuitAccessProto op = OpRequestShortCircuitAccessProto.parseFrom(requests.get(0));
    assertEquals(ShortCircuitSocket.request(BLOCK, null, 0, 4096), op);
    assertEquals(0, requests.get(1).length, "the go-ahead is an empty message");
  }

  /** A refused token is an InvalidBlockTokenException (the caller refetches tokens), nothing held. */
  @Test
  void aRefusedTokenIsAnInvalidBlockTokenException() throws Exception {
    serve(Behavior.REFUSE_TOKEN);
    try (ShortCircuitClient client = new ShortCircuitClient(10_000, true)) {
      InvalidBlockTokenException e = assertThrows(InvalidBlockTokenException.class,
          () -> client.request(dnSocket.toString(), BLOCK, null));
      assertEquals("token refused", e.getMessage());
    }
  }

  /** A DataNode that takes the request and never answers costs the client its timeout, no more. */
  @Test
  void aDataNodeThatNeverAnswersCostsTheTimeout() throws Exception {
    serve(Behavior.SILENT);
    try (ShortCircuitClient client = new ShortCircuitClient(300, true)) {
      long t0 = System.nanoTime();
      IOException e = assertThrows(IOException.class, () -> client.request(dnSocket.toString(), BLOCK, null));
      long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertEquals("no short-circuit answer from " + dnSocket + " within 300 ms", e.getMessage());
      assertTrue(tookMs >= 250 && tookMs < 5_000, tookMs + " ms");
    }
  }

  /**
   * A request waiting for a DataNode that does not answer ends soon, not at its timeout, when
   * its thread is interrupted or the client is closed (the client's close at a reader's close).
   */
  @Test
  void anInterruptOrTheClientsCloseEndsAWaitSoon() throws Exception {
    serve(Behavior.SILENT);
    try (ShortCircuitClient client = new ShortCircuitClient(20_000, true)) {
      for (boolean interrupt : new boolean[] {true, false}) {
        java.util.concurrent.CompletableFuture<Throwable> failed = new java.util.concurrent.CompletableFuture<>();
        Thread t = new Thread(() -> {
          try (ShortCircuitClient.Fds f = client.request(dnSocket.toString(), BLOCK, null)) {
            failed.complete(null);
          } catch (Throwable e) {
            failed.complete(e);
          }
        });
        t.start();
        while (requests.size() < (interrupt ? 1 : 2)) {
          Thread.sleep(5); // the request is out: the client waits for the answer
        }
        long t0 = System.nanoTime();
        if (interrupt) {
          t.interrupt();
        } else {
          client.close();
        }
        Throwable e = failed.get(5, TimeUnit.SECONDS);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        t.join();
        assertTrue(ms < 2_000, ms + " ms");
        if (interrupt) {
          assertTrue(e instanceof java.io.InterruptedIOException, String.valueOf(e));
          assertEquals("interrupted waiting for " + dnSocket, e.getMessage());
        } else {
          assertEquals(IOException.class, e.getClass(), String.valueOf(e));
          assertEquals("the short-circuit client is closed", e.getMessage());
        }
      }
    }
  }

  /** The DataNode closes after one descriptor: a failure naming the block, the one received closed. */
  @Test
  void aDataNodeClosingBeforeBothDescriptorsLeavesNothingOpen() throws Exception {
    serve(Behavior.ONE_THEN_CLOSE);
    try (ShortCircuitClient client = new ShortCircuitClient(10_000, true)) {
      IOException e = assertThrows(IOException.class, () -> client.request(dnSocket.toString(), BLOCK, null));
      assertEquals("the DataNode closed " + dnSocket + " before handing over the files of " + BLOCK, e.getMessage());
    }
  }

  /** Nothing listens at the path (a socket left behind): refused for this DataNode, the caller stops asking it. */
  @Test
  void nothingListeningIsLocalReadsRefused() throws Exception {
    try (java.nio.channels.ServerSocketChannel gone = java.nio.channels.ServerSocketChannel.open(
        java.net.StandardProtocolFamily.UNIX)) {
      gone.bind(java.net.UnixDomainSocketAddress.of(dnSocket));
    }
    try (ShortCircuitClient client = new ShortCircuitClient(10_000, true)) {
      RdmaBlockClient.LocalReadsRefused e = assertThrows(RdmaBlockClient.LocalReadsRefused.class,
          () -> client.request(dnSocket.toString(), BLOCK, null));
      assertTrue(e.getMessage().startsWith("cannot connect to " + dnSocket + ": "), e.getMessage());
      assertTrue(e.getMessage().contains("Connection refused"), e.getMessage());
      Files.delete(dnSocket);
      client.close();
      serve(Behavior.GRANT);
      IOException closed = assertThrows(IOException.class, () -> client.request(dnSocket.toString(), BLOCK, null));
      assertEquals("the short-circuit client is closed", closed.getMessage());
    }
  }

  /** Reply, then on the go-ahead the two files' descriptors, then closes; or misbehaves as told. */
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
      requests.add(got);
      if (!replied) {
        replied = true;
        switch (behavior) {
          case SILENT -> {
            return;
          }
          case REFUSE_TOKEN -> {
            reply(ctx, BlockOpResponseProto.newBuilder().setStatus(Status.ERROR_ACCESS_TOKEN)
                .setMessage("token refused").build()).addListener(ChannelFutureListener.CLOSE);
            return;
          }
          default -> {
            long[] probe = ShortCircuitSocket.probe(OpRequestShortCircuitAccessProto.parseFrom(got));
            reply(ctx, ShortCircuitSocket.granted(false, probe == null ? -1 : probe[1]));
            return;
          }
        }
      }
      FileDescriptor d = new FileDescriptor(NativeFiles.openForPassing(data.toString()));
      if (behavior == Behavior.ONE_THEN_CLOSE) {
        ctx.writeAndFlush(d).addListener(f -> d.close()).addListener(ChannelFutureListener.CLOSE);
        return;
      }
      FileDescriptor m = new FileDescriptor(NativeFiles.openForPassing(meta.toString()));
      ctx.write(d).addListener(f -> d.close());
      // then closes, as the DataNode's plugin does
      ctx.writeAndFlush(m).addListener(f -> m.close()).addListener(ChannelFutureListener.CLOSE);
    }

    private io.netty.channel.ChannelFuture reply(ChannelHandlerContext ctx, BlockOpResponseProto r) {
      byte[] body = r.toByteArray();
      ByteBuf b = ctx.alloc().buffer(4 + body.length);
      b.writeInt(body.length).writeBytes(body);
      return ctx.writeAndFlush(b);
    }
  }
}
