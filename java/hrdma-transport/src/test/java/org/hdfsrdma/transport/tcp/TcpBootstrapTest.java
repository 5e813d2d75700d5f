package org.hdfsrdma.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.hdfsrdma.proto.HrdmaProtos.HelloReply;
import org.hdfsrdma.transport.Protocol;
import org.hdfsrdma.transport.TransportConf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The bootstrap hello's close against a service port that sends more after its reply. */
class TcpBootstrapTest {
  private static final long WAIT_S = 10;

  private static byte[] frame(byte type, byte[] payload) {
    return ByteBuffer.allocate(TcpWire.HEADER_BYTES + payload.length).putInt(payload.length + 1).put(type)
        .put(payload).array();
  }

  private static byte[] okReply() {
    return frame(TcpWire.HELLO_REPLY, HelloReply.newBuilder().setVersion(Protocol.VERSION).setCredits(8)
        .setMaxMessageSize(1 << 16).build().toByteArray());
  }

  /**
   * A one-connection service port: reads the HELLO, writes {@code after} the OK reply in the same
   * write (returned once the kernel holds it all), then reads what the client sends until its
   * end: those bytes, or null when the connection was reset.
   */
  private static final class Service implements AutoCloseable {
    final ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
    final CompletableFuture<Void> written = new CompletableFuture<>();
    final CompletableFuture<byte[]> received = new CompletableFuture<>();

    Service(byte[] after) throws IOException {
      Thread t = new Thread(() -> {
        try (Socket s = server.accept()) {
          s.setSendBufferSize(after.length + (1 << 20)); // the whole write fits: it returns at once
          DataInputStream in = new DataInputStream(s.getInputStream());
          in.readFully(new byte[in.readInt()]);
          byte[] reply = okReply();
          OutputStream out = s.getOutputStream();
          out.write(ByteBuffer.allocate(reply.length + after.length).put(reply).put(after).array());
          written.complete(null);
          try {
            received.complete(in.readAllBytes());
          } catch (java.net.SocketException reset) {
            received.complete(null);
          }
        } catch (IOException | RuntimeException e) {
          written.completeExceptionally(e);
          received.completeExceptionally(e);
        }
      }, "bootstrap-service");
      t.setDaemon(true);
      t.start();
    }

    InetSocketAddress address() {
      return new InetSocketAddress(server.getInetAddress(), server.getLocalPort());
    }

    @Override
    public void close() throws IOException {
      server.close();
    }
  }

  private static TcpBootstrap connect(Service service) throws Exception {
    return TcpBootstrap.connect(service.address(), List.of("ucx", "tcp"), TransportConf.defaults(),
        System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_S));
  }

  /**
   * A server that sent a MiB after its reply: the close drops no more than its bound of it and
   * resets the connection, rather than reading whatever the server keeps sending.
   */
  @Test
  @Timeout(30)
  void theCloseDropsABoundedAmountOfWhatTheServerSentAfterItsReply() throws Exception {
    try (Service service = new Service(new byte[1 << 20])) {
      TcpBootstrap b = connect(service);
      service.written.get(WAIT_S, TimeUnit.SECONDS);
      b.close();
      assertTrue(b.isClosed());
      assertTrue(b.droppedAtClose() <= TcpBootstrap.CLOSE_DRAIN_BYTES,
          "the close dropped " + b.droppedAtClose() + " bytes, more than " + TcpBootstrap.CLOSE_DRAIN_BYTES);
      byte[] got = service.received.get(WAIT_S, TimeUnit.SECONDS);
      assertTrue(got == null || got.length == 0, "an orderly CLOSE after a MiB left unread");
    }
  }

  /** What an honest server may send after its reply (a CLOSE of its own) is dropped, and the close is orderly. */
  @Test
  @Timeout(30)
  void aServersOwnCloseIsDroppedAndTheCloseIsOrderly() throws Exception {
    byte[] close = frame(TcpWire.CLOSE, new byte[0]);
    try (Service service = new Service(close)) {
      TcpBootstrap b = connect(service);
      service.written.get(WAIT_S, TimeUnit.SECONDS); // with the reply, in one segment: here already
      b.close();
      assertEquals(close.length, b.droppedAtClose());
      assertArrayEquals(close, service.received.get(WAIT_S, TimeUnit.SECONDS), "CLOSE, then the end of the stream");
    }
  }
}
