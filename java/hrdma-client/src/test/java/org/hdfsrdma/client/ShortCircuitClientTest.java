package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
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
import io.netty.channel.unix.Socket;
import io.netty.channel.unix.UnixChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.hdfsrdma.nativelib.NativeFiles;
import org.hdfsrdma.protocol.ShortCircuitSocket;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The short-circuit exchange against a DataNode stand-in of this test. */
@Timeout(60)
class ShortCircuitClientTest {
  /**
   * The exchange's channel is closed once the descriptors are in, and another socket of the
   * process gets the closed descriptor's number at once (here inside the close, as a
   * DataNode's accept on another thread may): nothing is read from that socket. Netty's
   * descriptor read loop reads again after a handler closes the channel, so an exchange that
   * closed from inside it took bytes meant for the other socket (in a cluster on one host: the
   * request of another exchange, which then waited for the DataNode's timeout).
   */
  @Test
  void aDescriptorNumberTakenAtTheCloseIsNotReadByTheExchange() throws Exception {
    assumeTrue(ShortCircuitClient.unavailable() == null, ShortCircuitClient.unavailable());
    Path dir = Files.createTempDirectory(Path.of("target"), "scc-").toAbsolutePath();
    Path data = Files.write(dir.resolve("blk"), new byte[4096]);
    Path meta = Files.write(dir.resolve("blk.meta"), new byte[7]);
    Path dnSocket = dir.resolve("dn.sock");
    Path otherSocket = dir.resolve("other.sock");
    long fds0 = NativeFiles.fdsHeld();
    EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
    List<AutoCloseable> open = new ArrayList<>();
    try (ServerSocketChannel other = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        ShortCircuitClient client = new ShortCircuitClient(10_000, true)) {
      other.bind(UnixDomainSocketAddress.of(otherSocket));
      Channel server = new ServerBootstrap().group(group).channel(EpollServerDomainSocketChannel.class)
          .childHandler(new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel ch) {
              ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(ShortCircuitSocket.MAX_MESSAGE_BYTES, 0, 4, 0, 4),
                  new GrantingDataNode(data, meta));
            }
          }).bind(new DomainSocketAddress(dnSocket.toFile())).sync().channel();
      open.add(() -> server.close().sync());

      // when the exchange's channel closes: a socket of the same number, with 8 bytes waiting on it
      AtomicReference<Socket> reused = new AtomicReference<>();
      AtomicInteger closedFd = new AtomicInteger(-1);
      AtomicReference<Throwable> hookFailed = new AtomicReference<>();
      client.channelHook(ch -> ch.closeFuture().addListener(f -> {
        try {
          int fd = ((UnixChannel) ch).fd().intValue();
          closedFd.set(fd);
          // the kernel gives the lowest free number: fill the holes below it until it comes
          for (int i = 0; i < 256 && reused.get() == null; i++) {
            Socket s = Socket.newSocketDomain();
            open.add(s::close);
            if (s.intValue() == fd) {
              s.connect(new DomainSocketAddress(otherSocket.toFile()));
              try (SocketChannel peer = other.accept()) {
                peer.write(ByteBuffer.wrap("12345678".getBytes(java.nio.charset.StandardCharsets.US_ASCII)));
              }
              reused.set(s);
            }
          }
        } catch (Throwable t) {
          hookFailed.set(t);
        }
      }));

      ExtendedBlock block = new ExtendedBlock("BP-test", 1, 4096, 1001);
      try (ShortCircuitClient.Fds f = client.request(dnSocket.toString(), block, null)) {
        assertEquals(4096, f.data().size());
        assertEquals(7, f.meta().size());
      }
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (reused.get() == null && hookFailed.get() == null && System.nanoTime() < until) {
        Thread.sleep(1);
      }
      assertNull(hookFailed.get(), "the hook failed");
      Socket s = reused.get();
      assertEquals(closedFd.get(), s == null ? -1 : s.intValue(), "a socket took the closed descriptor's number");
      Thread.sleep(200); // a read the exchange still made would have happened by now
      ByteBuffer got = ByteBuffer.allocateDirect(16);
      int n = s.read(got, 0, got.capacity());
      assertEquals(8, n, "bytes left on the socket that took the number (the exchange read the rest)");
    } finally {
      for (int i = open.size() - 1; i >= 0; i--) {
        open.get(i).close();
      }
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
      for (Path p : new Path[] {dnSocket, otherSocket, data, meta, dir}) {
        Files.deleteIfExists(p);
      }
    }
    assertEquals(fds0, NativeFiles.fdsHeld(), "descriptors held");
  }

  /** Grants every request: reply, then on the go-ahead the two files' descriptors, then closes. */
  private static final class GrantingDataNode extends SimpleChannelInboundHandler<ByteBuf> {
    private final Path data;
    private final Path meta;
    private boolean replied;

    GrantingDataNode(Path data, Path meta) {
      this.data = data;
      this.meta = meta;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, ByteBuf frame) throws Exception {
      if (!replied) {
        replied = true;
        BlockOpResponseProto r = ShortCircuitSocket.granted(false);
        byte[] body = r.toByteArray();
        ByteBuf b = ctx.alloc().buffer(4 + body.length);
        b.writeInt(body.length).writeBytes(body);
        ctx.writeAndFlush(b);
        return;
      }
      FileDescriptor d = new FileDescriptor(NativeFiles.openForPassing(data.toString()));
      FileDescriptor m = new FileDescriptor(NativeFiles.openForPassing(meta.toString()));
      ctx.write(d).addListener(f -> d.close());
      // then closes, as the DataNode's plugin does: the client's loop reading descriptors goes on to the end
      ctx.writeAndFlush(m).addListener(f -> m.close()).addListener(ChannelFutureListener.CLOSE);
    }
  }
}
