package org.hdfsrdma.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.hdfsrdma.proto.HrdmaProtos.Hello;
import org.hdfsrdma.proto.HrdmaProtos.HelloReply;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.Listener;
import org.hdfsrdma.transport.Protocol;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportConf;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Raw sockets feeding a tcp listener what a broken or hostile peer would:
 * each connection must be closed by the server, nothing may leak, and the
 * listener must keep serving good clients.
 */
class TcpBadInputTest {
  private static final int WAIT_MS = 10_000;

  private TcpTransport server;
  private Listener listener;
  private final AtomicInteger connected = new AtomicInteger();
  private int passedHello;

  @BeforeEach
  void start() throws Exception {
    server = new TcpTransport(TransportConf.defaults().with(TransportConf.MAX_MESSAGE_KEY, "65536"));
    listener = server.listen(new InetSocketAddress("127.0.0.1", 0), echo());
  }

  /** Echoes every message; counts connections that passed their hello. */
  private EndpointHandler echo() {
    return new EndpointHandler() {
      @Override
      public void onConnected(Endpoint endpoint) {
        connected.incrementAndGet();
      }

      @Override
      public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
        try {
          RegisteredBuffer copy = server.allocator().allocate(message.readableBytes());
          copy.nio().put(copy.nio().position(), message.nio(), message.nio().position(),
              message.readableBytes());
          endpoint.send(copy);
        } catch (Exception e) {
          throw new IllegalStateException(e);
        } finally {
          message.release();
        }
      }
    };
  }

  @AfterEach
  void goodClientStillServed() throws Exception {
    int before = connected.get();
    assertEquals(passedHello, before, "bad peers must never reach onConnected");
    try (TcpTransport client = new TcpTransport(TransportConf.defaults())) {
      BlockingQueue<byte[]> echoes = new LinkedBlockingQueue<>();
      Endpoint ep = client.connect(listener.localAddress(), (endpoint, message) -> {
        byte[] b = new byte[message.readableBytes()];
        message.nio().duplicate().get(b);
        message.release();
        echoes.add(b);
      }).get(WAIT_MS, TimeUnit.MILLISECONDS);
      RegisteredBuffer m = client.allocator().allocate(5);
      m.nio().put(m.nio().position(), "hello".getBytes());
      ep.send(m).get(WAIT_MS, TimeUnit.MILLISECONDS);
      assertEquals("hello", new String(echoes.poll(WAIT_MS, TimeUnit.MILLISECONDS)));
      ep.close();
      ep.closeFuture().get(WAIT_MS, TimeUnit.MILLISECONDS);
      assertEquals(before + 1, connected.get());
    }
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
    while (server.allocator().buffersOutstanding() != 0 || server.openEndpoints() != 0) {
      if (System.nanoTime() > end) {
        fail("server leaked: " + server.allocator().buffersOutstanding() + " buffers, "
            + server.openEndpoints() + " endpoints");
      }
      Thread.sleep(5);
    }
    server.close();
  }

  private Socket dial() throws IOException {
    Socket s = new Socket();
    s.connect(listener.localAddress(), WAIT_MS);
    s.setSoTimeout(WAIT_MS);
    return s;
  }

  private static byte[] frame(int type, byte[] payload) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    out.writeInt(payload.length + 1);
    out.writeByte(type);
    out.write(payload);
    return bytes.toByteArray();
  }

  private static Hello hello(int version) {
    return Hello.newBuilder().setVersion(version).setCredits(8).setMaxMessageSize(1 << 20).build();
  }

  /** Reads until the server closes; fails on a read timeout. Returns what arrived. */
  private static byte[] readToEnd(Socket s) throws IOException {
    ByteArrayOutputStream got = new ByteArrayOutputStream();
    InputStream in = s.getInputStream();
    byte[] buf = new byte[4096];
    try {
      for (int n; (n = in.read(buf)) >= 0; ) {
        got.write(buf, 0, n);
      }
    } catch (SocketException reset) {
      // closed with unread input: a reset is a close too
    }
    return got.toByteArray();
  }

  /** Parses the one HELLO_REPLY frame {@code bytes} must hold. */
  private static HelloReply reply(byte[] bytes) throws IOException {
    DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(bytes));
    int len;
    try {
      len = in.readInt();
    } catch (EOFException e) {
      throw new AssertionError("the server closed without a HELLO_REPLY");
    }
    assertEquals(TcpFrames.HELLO_REPLY, in.readByte());
    byte[] payload = new byte[len - 1];
    in.readFully(payload);
    return HelloReply.parseFrom(payload);
  }

  @Test
  @Timeout(20)
  void garbageIsRefused() throws Exception {
    try (Socket s = dial()) {
      s.getOutputStream().write("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes());
      byte[] got = readToEnd(s);
      if (got.length > 0) {
        assertEquals(HelloReply.Status.BAD_REQUEST, reply(got).getStatus());
      }
    }
  }

  @Test
  @Timeout(20)
  void truncatedFrameThenEofIsRefused() throws Exception {
    try (Socket s = dial()) {
      byte[] f = frame(TcpFrames.HELLO, hello(Protocol.VERSION).toByteArray());
      s.getOutputStream().write(f, 0, f.length - 3);
      s.shutdownOutput();
      assertEquals(0, readToEnd(s).length);
    }
  }

  @Test
  @Timeout(20)
  void oversizedLengthIsRefusedBeforeAllocating() throws Exception {
    try (Socket s = dial()) {
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      out.writeInt(0x7fff_fff0);
      out.writeByte(TcpFrames.HELLO);
      out.flush();
      HelloReply r = reply(readToEnd(s));
      assertEquals(HelloReply.Status.BAD_REQUEST, r.getStatus());
      assertTrue(r.getError().contains("exceeds"), r.getError());
    }
  }

  @Test
  @Timeout(20)
  void oversizedDataAfterHelloClosesTheEndpoint() throws Exception {
    try (Socket s = dial()) {
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      out.write(frame(TcpFrames.HELLO, hello(Protocol.VERSION).toByteArray()));
      out.writeInt(65536 + 2); // one more than the server's max message + type byte
      out.writeByte(TcpFrames.DATA);
      out.flush();
      byte[] got = readToEnd(s);
      assertEquals(HelloReply.Status.OK, reply(got).getStatus());
    }
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
    while (server.openEndpoints() != 0 && System.nanoTime() < end) {
      Thread.sleep(5);
    }
    assertEquals(0, server.openEndpoints());
    passedHello = 1; // this one did pass its hello
  }

  @Test
  @Timeout(20)
  void wrongVersionGetsVersionMismatch() throws Exception {
    try (Socket s = dial()) {
      s.getOutputStream().write(frame(TcpFrames.HELLO, hello(Protocol.VERSION + 41).toByteArray()));
      HelloReply r = reply(readToEnd(s));
      assertEquals(HelloReply.Status.VERSION_MISMATCH, r.getStatus());
      assertTrue(r.getError().contains("" + (Protocol.VERSION + 41)) && r.getError().contains(
          "version " + Protocol.VERSION), r.getError());
      assertEquals(Protocol.VERSION, r.getVersion());
    }
  }

  @Test
  @Timeout(20)
  void dataBeforeHelloIsRefused() throws Exception {
    try (Socket s = dial()) {
      s.getOutputStream().write(frame(TcpFrames.DATA, "sneaky".getBytes()));
      HelloReply r = reply(readToEnd(s));
      assertEquals(HelloReply.Status.BAD_REQUEST, r.getStatus());
      assertTrue(r.getError().contains("DATA"), r.getError());
    }
  }

  @Test
  @Timeout(20)
  void malformedHelloIsRefused() throws Exception {
    try (Socket s = dial()) {
      s.getOutputStream().write(frame(TcpFrames.HELLO, new byte[] {(byte) 0xff, (byte) 0xff, 0x01}));
      HelloReply r = reply(readToEnd(s));
      assertEquals(HelloReply.Status.BAD_REQUEST, r.getStatus());
    }
  }

  @Test
  @Timeout(20)
  void unknownTypeAndEmptyFrameAreRefused() throws Exception {
    try (Socket s = dial()) {
      s.getOutputStream().write(frame(99, new byte[3]));
      assertEquals(HelloReply.Status.BAD_REQUEST, reply(readToEnd(s)).getStatus());
    }
    try (Socket s = dial()) {
      s.getOutputStream().write(new byte[] {0, 0, 0, 0});
      assertEquals(HelloReply.Status.BAD_REQUEST, reply(readToEnd(s)).getStatus());
    }
  }

  /** A peer that says nothing is closed once {@code hrdma.transport.hello-timeout-ms} has passed. */
  @Test
  @Timeout(20)
  void silentPeerIsDroppedAfterTheHelloTimeout() throws Exception {
    server.close();
    server = new TcpTransport(TransportConf.defaults().with(TransportConf.HELLO_TIMEOUT_KEY, "300"));
    Listener quick = server.listen(new InetSocketAddress("127.0.0.1", 0), (e, m) -> m.release());
    try (Socket s = new Socket()) {
      s.connect(quick.localAddress(), WAIT_MS);
      s.setSoTimeout(WAIT_MS);
      long t0 = System.nanoTime();
      assertEquals(0, readToEnd(s).length);
      // well before the connect timeout (5 s): the wait is the hello timeout's
      assertTrue(System.nanoTime() - t0 < TimeUnit.MILLISECONDS.toNanos(TransportConf.CONNECT_TIMEOUT_DEFAULT - 2000),
          "closed after " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0) + " ms");
    }
    listener = server.listen(new InetSocketAddress("127.0.0.1", 0), echo());
    assertNotNull(listener);
  }

  /**
   * Silent connections may wait a minute for their HELLO, so at most
   * {@code hrdma.transport.max-pending-hellos} of them are kept: one more closes the oldest (with
   * a REFUSED reply naming the key), and an honest client is still served (the check after each test).
   */
  @Test
  @Timeout(30)
  void pastMaxPendingHellosTheOldestSilentConnectionIsClosed() throws Exception {
    server.close();
    server = new TcpTransport(TransportConf.defaults().with(TransportConf.MAX_PENDING_HELLOS_KEY, "3"));
    listener = server.listen(new InetSocketAddress("127.0.0.1", 0), echo());
    List<Socket> silent = new ArrayList<>();
    try {
      for (int i = 0; i < 4; i++) {
        silent.add(dial());
        Thread.sleep(300); // accepted in this order (the channels are set up on two event loops)
      }
      HelloReply r = reply(readToEnd(silent.get(0)));
      assertEquals(HelloReply.Status.REFUSED, r.getStatus());
      assertTrue(r.getError().contains(TransportConf.MAX_PENDING_HELLOS_KEY), r.getError());
      assertEquals(1, server.pendingHellosEvicted());
      // the three newer ones are still open: nothing has arrived on them
      for (Socket s : silent.subList(1, 4)) {
        s.setSoTimeout(200);
        assertThrows(java.net.SocketTimeoutException.class, () -> s.getInputStream().read());
      }
    } finally {
      for (Socket s : silent) {
        s.close();
      }
    }
  }

  /**
   * A slow but honest peer (a GC pause, a loaded host) that says HELLO after the connect timeout
   * but within the hello timeout is served: the accepting side waits as stock's DataXceiver waits
   * for a first op, not as long as a connecting side gives a listener to answer.
   */
  @Test
  @Timeout(30)
  void aLateHelloWithinTheHelloTimeoutIsServed() throws Exception {
    server.close();
    server = new TcpTransport(TransportConf.defaults().with(TransportConf.CONNECT_TIMEOUT_KEY, "300")
        .with(TransportConf.HELLO_TIMEOUT_KEY, "20000"));
    listener = server.listen(new InetSocketAddress("127.0.0.1", 0), echo());
    try (Socket s = dial()) {
      Thread.sleep(1500); // the peer's stall itself: five connect timeouts without a byte
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      out.write(frame(TcpFrames.HELLO, hello(Protocol.VERSION).toByteArray()));
      out.flush();
      DataInputStream in = new DataInputStream(s.getInputStream());
      int len = in.readInt();
      assertEquals(TcpFrames.HELLO_REPLY, in.readByte());
      byte[] payload = new byte[len - 1];
      in.readFully(payload);
      assertEquals(HelloReply.Status.OK, HelloReply.parseFrom(payload).getStatus());
      long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
      while (connected.get() == 0 && System.nanoTime() < end) { // handed to the handler on the event loop
        Thread.sleep(5);
      }
    }
    passedHello = 1;
  }

  /**
   * A connect the peer refuses never makes its channel active: the endpoint
   * object created for it must still end (it used to stay counted as open).
   */
  @Test
  void aRefusedConnectLeavesNoOpenEndpointBehind() throws Exception {
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      port = s.getLocalPort(); // closed again: nothing listens there
    }
    java.util.List<String> before = org.hdfsrdma.transport.AbstractEndpoint.openEndpoints();
    var f = server.connect(new InetSocketAddress("127.0.0.1", port), echo());
    java.util.concurrent.ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(
        java.util.concurrent.ExecutionException.class, () -> f.get(WAIT_MS, TimeUnit.MILLISECONDS));
    assertTrue(e.getCause() instanceof org.hdfsrdma.transport.TransportException.Unreachable, e.toString());
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
    while (!org.hdfsrdma.transport.AbstractEndpoint.openEndpoints().equals(before)) {
      assertTrue(System.nanoTime() < end, "still open: " + org.hdfsrdma.transport.AbstractEndpoint.openEndpoints()
          + ", before: " + before);
      Thread.sleep(10);
    }
  }
}
