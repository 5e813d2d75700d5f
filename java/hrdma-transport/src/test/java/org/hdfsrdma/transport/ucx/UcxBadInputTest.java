package org.hdfsrdma.transport.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.Listener;
import org.hdfsrdma.transport.Protocol;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A peer that breaks the protocol gets a clear error and a closed connection;
 * the listener goes on serving others and no buffer leaks.
 */
@Timeout(60)
class UcxBadInputTest {
  private static final int SERVER_MAX = 64 * 1024;

  private AbstractUcxTransport server;
  private Listener listener;
  private final BlockingQueue<Throwable> serverClosures = new LinkedBlockingQueue<>();

  private static TransportConf conf() {
    return TransportConf.defaults()
        .with(TransportConf.UCX_CONFIG_KEY, "TLS=tcp")
        .with(TransportConf.CONNECT_TIMEOUT_KEY, "3000");
  }

  private AbstractUcxTransport transport(String name, TransportConf c) throws TransportException {
    return name.equals("ucx") ? new UcxTransport(c) : new StreamTransport(c);
  }

  private void startServer(String name) throws Exception {
    startServer(name, conf());
  }

  private void startServer(String name, TransportConf c) throws Exception {
    server = transport(name, c.with(TransportConf.MAX_MESSAGE_KEY, "" + SERVER_MAX));
    listener = server.listen(new InetSocketAddress("127.0.0.1", 0), new EndpointHandler() {
      @Override
      public void onMessage(Endpoint ep, RegisteredBuffer m) {
        ep.send(m); // echo the same buffer back
      }

      @Override
      public void onClosed(Endpoint ep, Throwable cause) {
        serverClosures.add(cause == null ? new Exception("clean close") : cause);
      }
    });
  }

  @AfterEach
  void stop() throws Exception {
    if (server != null) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (server.allocator().buffersOutstanding() > 0 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertEquals(0, server.allocator().buffersOutstanding(), "server buffers leaked");
      server.close();
      assertEquals(0, server.nativeStats()[1], "registered regions left after close");
    }
  }

  /** A well-behaved client still gets its echo. */
  private void assertServesGoodClient(String name) throws Exception {
    try (AbstractUcxTransport good = transport(name, conf())) {
      BlockingQueue<byte[]> echoes = new LinkedBlockingQueue<>();
      Endpoint ep = good.connect(listener.localAddress(), (e, m) -> {
        byte[] b = new byte[m.readableBytes()];
        m.nio().get(b);
        m.release();
        echoes.add(b);
      }).get(10, TimeUnit.SECONDS);
      RegisteredBuffer b = good.allocator().allocate(5);
      b.nio().put("hello".getBytes()).flip();
      ep.send(b).get(10, TimeUnit.SECONDS);
      assertEquals("hello", new String(echoes.poll(10, TimeUnit.SECONDS)));
      ep.close();
      ep.closeFuture().handle((v, t) -> null).get(10, TimeUnit.SECONDS);
      assertEquals(0, good.allocator().buffersOutstanding());
    }
  }

  private static Throwable failureOf(CompletableFuture<?> f) throws Exception {
    ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(10, TimeUnit.SECONDS));
    return e.getCause();
  }

  @ParameterizedTest
  @ValueSource(strings = {"ucx", "stream"})
  void wrongProtocolVersionIsRefusedWithBothVersionsNamed(String name) throws Exception {
    startServer(name);
    try (AbstractUcxTransport bad = transport(name, conf())) {
      bad.helloVersion = 99;
      Throwable t = failureOf(bad.connect(listener.localAddress(), (e, m) -> m.release()));
      assertInstanceOf(TransportException.Protocol.class, t);
      assertTrue(t.getMessage().contains("VERSION_MISMATCH"), t.getMessage());
      assertTrue(t.getMessage().contains("99") && t.getMessage().contains("" + Protocol.VERSION),
          t.getMessage());
    }
    assertServesGoodClient(name);
  }

  @ParameterizedTest
  @ValueSource(strings = {"ucx", "stream"})
  void unknownMessageKindClosesTheConnection(String name) throws Exception {
    startServer(name);
    try (AbstractUcxTransport bad = transport(name, conf())) {
      UcxConnection ep = (UcxConnection) bad.connect(listener.localAddress(),
          (e, m) -> m.release()).get(10, TimeUnit.SECONDS);
      bad.loop.execute(() -> ep.sendRawFrame(9, new byte[] {1, 2, 3}));
      failureOrClose(ep);
      Throwable cause = serverClosures.poll(10, TimeUnit.SECONDS);
      assertNotNull(cause);
      assertInstanceOf(TransportException.Protocol.class, cause);
      assertTrue(cause.getMessage().contains("9"), cause.getMessage());
    }
    assertServesGoodClient(name);
  }

  /**
   * A peer that sends more messages than the credits it was granted (here: 4, none given
   * back while the handler holds them) is a protocol error decided before a buffer is taken
   * for the extra message: the connection closes, the server's buffers all come back.
   */
  @ParameterizedTest
  @ValueSource(strings = {"ucx", "stream"})
  void messagesBeyondTheCreditsCloseTheConnection(String name) throws Exception {
    java.util.List<RegisteredBuffer> held = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
    server = transport(name, conf().with(TransportConf.CREDITS_KEY, "4"));
    listener = server.listen(new InetSocketAddress("127.0.0.1", 0), new EndpointHandler() {
      @Override
      public void onMessage(Endpoint ep, RegisteredBuffer m) {
        held.add(m); // never released while the peer sends: its credits do not come back
      }

      @Override
      public void onClosed(Endpoint ep, Throwable cause) {
        serverClosures.add(cause == null ? new Exception("clean close") : cause);
      }
    });
    try (AbstractUcxTransport bad = transport(name, conf())) {
      UcxConnection ep = (UcxConnection) bad.connect(listener.localAddress(),
          (e, m) -> m.release()).get(10, TimeUnit.SECONDS);
      for (int i = 0; i < 6; i++) { // DATA frames sent raw: past the sender's own credit check
        bad.loop.execute(() -> ep.sendRawFrame(UcxConnection.DATA, new byte[] {1, 2, 3}));
      }
      failureOrClose(ep);
      Throwable cause = serverClosures.poll(10, TimeUnit.SECONDS);
      assertNotNull(cause);
      assertInstanceOf(TransportException.Protocol.class, cause);
      assertTrue(cause.getMessage().contains("credits"), cause.getMessage());
      // the ones within the credits may have been delivered (stream) or dropped with the
      // connection before their data completed (ucx): never more
      int before = held.size();
      assertTrue(before <= 4, before + " messages delivered on 4 credits");
      try (AbstractUcxTransport good = transport(name, conf())) { // another client is still served
        Endpoint g = good.connect(listener.localAddress(), (e, m) -> m.release()).get(10, TimeUnit.SECONDS);
        RegisteredBuffer b = good.allocator().allocate(5);
        b.nio().put("hello".getBytes()).flip();
        g.send(b).get(10, TimeUnit.SECONDS);
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (held.size() < before + 1 && System.nanoTime() < end) {
          Thread.sleep(10);
        }
        assertEquals(before + 1, held.size());
        g.close();
        g.closeFuture().handle((v, t) -> null).get(10, TimeUnit.SECONDS);
      }
    } finally {
      for (RegisteredBuffer m : held) {
        m.release();
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"ucx", "stream"})
  void oversizedMessageClosesTheConnection(String name) throws Exception {
    startServer(name);
    try (AbstractUcxTransport bad = transport(name, conf())) {
      UcxConnection ep = (UcxConnection) bad.connect(listener.localAddress(),
          (e, m) -> m.release()).get(10, TimeUnit.SECONDS);
      // The local check refuses it...
      RegisteredBuffer big = bad.allocator().allocate(SERVER_MAX + 1);
      Throwable local = failureOf(ep.send(big));
      assertInstanceOf(TransportException.Protocol.class, local);
      // ...and a peer that skips the check is cut off.
      bad.loop.execute(() -> ep.sendRawFrame(UcxConnection.DATA, new byte[SERVER_MAX + 1]));
      failureOrClose(ep);
      Throwable cause = serverClosures.poll(10, TimeUnit.SECONDS);
      assertInstanceOf(TransportException.Protocol.class, cause);
      assertTrue(cause.getMessage().contains("exceeds"), cause.getMessage());
    }
    assertServesGoodClient(name);
  }

  @Test
  void garbageOnTheStreamClosesTheConnection() throws Exception {
    startServer("stream");
    try (AbstractUcxTransport bad = transport("stream", conf())) {
      StreamEndpoint ep = (StreamEndpoint) bad.connect(listener.localAddress(),
          (e, m) -> m.release()).get(10, TimeUnit.SECONDS);
      byte[] junk = new byte[64];
      new Random(1).nextBytes(junk);
      junk[4] = 0x77; // no such frame kind
      bad.loop.execute(() -> {
        try {
          ep.sendRawBytes(junk);
        } catch (TransportException e) {
          throw new IllegalStateException(e);
        }
      });
      failureOrClose(ep);
      Throwable cause = serverClosures.poll(10, TimeUnit.SECONDS);
      assertInstanceOf(TransportException.Protocol.class, cause);
      assertTrue(cause.getMessage().contains("garbage"), cause.getMessage());
    }
    assertServesGoodClient("stream");
  }

  @Test
  void peerStalledInTheMiddleOfAFrameIsClosedAfterTheReadTimeout() throws Exception {
    startServer("stream", conf().with(TransportConf.READ_TIMEOUT_KEY, "300"));
    long before = UcxConnection.partialTimeouts();
    try (AbstractUcxTransport bad = transport("stream", conf())) {
      StreamEndpoint ep = (StreamEndpoint) bad.connect(listener.localAddress(),
          (e, m) -> m.release()).get(10, TimeUnit.SECONDS);
      // a DATA frame's header and 10 of its 1000 bytes, then nothing
      ByteBuffer frame = ByteBuffer.allocate(StreamEndpoint.HEADER + 10);
      frame.putInt(1000).put((byte) UcxConnection.DATA).put((byte) 0).putShort((short) 0);
      long t0 = System.nanoTime();
      bad.loop.execute(() -> {
        try {
          ep.sendRawBytes(frame.array());
        } catch (TransportException e) {
          throw new IllegalStateException(e);
        }
      });
      Throwable cause = serverClosures.poll(10, TimeUnit.SECONDS);
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertInstanceOf(TransportException.Timeout.class, cause, String.valueOf(cause));
      assertTrue(cause.getMessage().contains("nothing more for 300 ms"), cause.getMessage());
      assertTrue(ms >= 300, "closed after " + ms + " ms, before the read timeout");
      assertEquals(before + 1, UcxConnection.partialTimeouts());
      failureOrClose(ep);
    }
    // a peer idle between messages is not closed, however long past the read timeout
    try (AbstractUcxTransport idle = transport("stream", conf())) {
      BlockingQueue<byte[]> echoes = new LinkedBlockingQueue<>();
      Endpoint ep = idle.connect(listener.localAddress(), (e, m) -> {
        byte[] b = new byte[m.readableBytes()];
        m.nio().get(b);
        m.release();
        echoes.add(b);
      }).get(10, TimeUnit.SECONDS);
      Thread.sleep(1000);
      RegisteredBuffer b = idle.allocator().allocate(4);
      b.nio().put("late".getBytes()).flip();
      ep.send(b).get(10, TimeUnit.SECONDS);
      assertEquals("late", new String(echoes.poll(10, TimeUnit.SECONDS)));
      assertEquals(before + 1, UcxConnection.partialTimeouts());
      ep.close();
      ep.closeFuture().handle((v, t) -> null).get(10, TimeUnit.SECONDS);
    }
    assertServesGoodClient("stream");
  }

  @Test
  void truncatedFrameReleasesItsBuffer() throws Exception {
    startServer("stream");
    try (AbstractUcxTransport bad = transport("stream", conf())) {
      StreamEndpoint ep = (StreamEndpoint) bad.connect(listener.localAddress(),
          (e, m) -> m.release()).get(10, TimeUnit.SECONDS);
      ByteBuffer frame = ByteBuffer.allocate(StreamEndpoint.HEADER + 10);
      frame.putInt(1000).put((byte) UcxConnection.DATA).put((byte) 0).putShort((short) 0);
      bad.loop.execute(() -> {
        try {
          ep.sendRawBytes(frame.array());
        } catch (TransportException e) {
          throw new IllegalStateException(e);
        }
      });
      Thread.sleep(200);
      bad.loop.execute(() -> ep.fail(new TransportException.Closed("test drops the peer")));
      assertNotNull(serverClosures.poll(10, TimeUnit.SECONDS), "server saw the connection end");
    }
    assertServesGoodClient("stream");
  }

  @ParameterizedTest
  @ValueSource(strings = {"ucx", "stream"})
  void rawTcpGarbageAtTheListenerPortDoesNotHurtIt(String name) throws Exception {
    startServer(name);
    byte[] junk = new byte[4096];
    new Random(2).nextBytes(junk);
    for (int i = 0; i < 3; i++) {
      try (Socket s = new Socket("127.0.0.1", listener.localAddress().getPort())) {
        OutputStream out = s.getOutputStream();
        out.write(junk, 0, 16 + i * 1000);
        out.flush();
      }
    }
    assertServesGoodClient(name);
  }

  @ParameterizedTest
  @ValueSource(strings = {"ucx", "stream"})
  void connectingWhereNobodyListensFailsAsUnreachable(String name) throws Exception {
    try (AbstractUcxTransport c = transport(name, conf())) {
      int port;
      try (java.net.ServerSocket ss = new java.net.ServerSocket(0)) {
        port = ss.getLocalPort();
      }
      Throwable t = failureOf(c.connect(new InetSocketAddress("127.0.0.1", port),
          (e, m) -> m.release()));
      assertInstanceOf(TransportException.class, t);
      assertTrue(t instanceof TransportException.Unreachable || t instanceof TransportException.Timeout,
          t.toString());
    }
  }

  /** The bad client's endpoint ends, one way or the other, soon. */
  private static void failureOrClose(Endpoint ep) throws Exception {
    ep.closeFuture().handle((v, t) -> null).get(10, TimeUnit.SECONDS);
  }
}
