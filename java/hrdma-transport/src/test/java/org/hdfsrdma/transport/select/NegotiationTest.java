package org.hdfsrdma.transport.select;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.hdfsrdma.transport.select.HrdmaConnector.Attempt;
import org.hdfsrdma.transport.select.HrdmaConnector.Connection;
import org.hdfsrdma.transport.tcp.TcpTransport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** HrdmaServer offers, HrdmaConnector picks in the client's order and falls back. */
class NegotiationTest {
  private static final int WAIT_MS = 10_000;

  private HrdmaServer server;
  private HrdmaConnector connector;
  private final AtomicInteger serverConnected = new AtomicInteger();
  private final AtomicInteger serverClosed = new AtomicInteger();
  private final List<String> closeCauses = new java.util.concurrent.CopyOnWriteArrayList<>();

  private static TransportConf conf(String order) {
    return TransportConf.defaults()
        .with(TransportConf.ORDER_KEY, order)
        .with(TransportConf.CONNECT_TIMEOUT_KEY, "1000");
  }

  private static String text(RegisteredBuffer m) {
    byte[] b = new byte[m.readableBytes()];
    m.nio().duplicate().get(b);
    m.release();
    return new String(b, StandardCharsets.UTF_8);
  }

  private static RegisteredBuffer text(Transport t, String s) throws TransportException {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    RegisteredBuffer m = t.allocator().allocate(b.length);
    m.nio().put(m.nio().position(), b);
    return m;
  }

  /** Greets every connection, then echoes with a prefix. */
  private void startServer(String order) throws Exception {
    server = HrdmaServer.start(conf(order), new EndpointHandler() {
      @Override
      public void onConnected(Endpoint endpoint) {
        serverConnected.incrementAndGet();
        try {
          endpoint.send(text(endpoint.transport(), "welcome"));
        } catch (TransportException e) {
          throw new IllegalStateException(e);
        }
      }

      @Override
      public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
        try {
          endpoint.send(text(endpoint.transport(), "echo:" + text(message)));
        } catch (TransportException e) {
          throw new IllegalStateException(e);
        }
      }

      @Override
      public void onClosed(Endpoint endpoint, Throwable cause) {
        closeCauses.add(String.valueOf(cause));
        serverClosed.incrementAndGet();
      }
    }, "127.0.0.1", 0);
  }

  /** Records what the user's handler sees on the client. */
  private static final class ClientHandler implements EndpointHandler {
    final BlockingQueue<String> messages = new LinkedBlockingQueue<>();
    final AtomicInteger connected = new AtomicInteger();
    final AtomicInteger closed = new AtomicInteger();

    @Override
    public void onConnected(Endpoint endpoint) {
      connected.incrementAndGet();
    }

    @Override
    public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
      messages.add(text(message));
    }

    @Override
    public void onClosed(Endpoint endpoint, Throwable cause) {
      closed.incrementAndGet();
    }
  }

  private void exchange(Connection c, ClientHandler h) throws Exception {
    assertEquals("welcome", h.messages.poll(WAIT_MS, TimeUnit.MILLISECONDS),
        "a message sent while negotiating must reach the handler, first");
    c.endpoint().send(text(c.endpoint().transport(), "ping")).get(WAIT_MS, TimeUnit.MILLISECONDS);
    assertEquals("echo:ping", h.messages.poll(WAIT_MS, TimeUnit.MILLISECONDS));
    assertEquals(1, h.connected.get(), "the user's handler sees exactly one connection");
  }

  @AfterEach
  void closeAll() throws Exception {
    try {
      if (server != null) {
        for (Transport t : server.transports().values()) {
          long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
          while (t.allocator().buffersOutstanding() != 0) {
            if (System.nanoTime() > end) {
              fail(t.name() + " leaked " + t.allocator().buffersOutstanding() + " buffers");
            }
            Thread.sleep(5);
          }
        }
      }
    } finally {
      if (connector != null) {
        connector.close();
      }
      if (server != null) {
        server.close();
      }
    }
  }

  @Test
  @Timeout(30)
  void brokenTransportFallsBackToTcp() throws Exception {
    startServer("broken,tcp");
    assertEquals(List.of("broken", "tcp"),
        server.offers().stream().map(a -> a.getTransport()).toList());
    connector = new HrdmaConnector(conf("zzz,broken,tcp"));
    ClientHandler h = new ClientHandler();
    Connection c = connector.connect(server.serviceAddress(), h);
    assertEquals("tcp", c.transport());
    List<Attempt> a = c.attempts();
    assertEquals(3, a.size(), a.toString());
    assertEquals(new Attempt("zzz", "not offered by the server"), a.get(0));
    assertEquals("broken", a.get(1).transport());
    assertTrue(a.get(1).failure().contains("broken on purpose"), a.get(1).failure());
    assertEquals(new Attempt("tcp", null), a.get(2));
    exchange(c, h);
    c.endpoint().close();
    c.endpoint().closeFuture().get(WAIT_MS, TimeUnit.MILLISECONDS);
    assertEquals(1, h.closed.get());
  }

  @Test
  @Timeout(30)
  void preferredTransportWinsAndTheBootstrapStaysHidden() throws Exception {
    startServer("tcp2,tcp");
    connector = new HrdmaConnector(conf("tcp2,tcp"));
    ClientHandler h = new ClientHandler();
    Connection c = connector.connect(server.serviceAddress(), h);
    assertEquals("tcp2", c.transport());
    assertEquals(List.of(new Attempt("tcp2", null)), c.attempts());
    exchange(c, h);
    // The bootstrap connection closes gracefully; the server saw it come and go.
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
    while (serverClosed.get() < 1 && System.nanoTime() < end) {
      Thread.sleep(5);
    }
    assertEquals(1, serverClosed.get(), "the bootstrap endpoint closes at the server");
    assertEquals(List.of("null"), closeCauses, "an orderly close (CLOSE), not a broken connection");
    assertEquals(2, serverConnected.get());
    // The bootstrap was a plain socket: no tcp transport (no Netty) on the client.
    assertEquals(List.of("tcp2"), List.copyOf(connector.transports().keySet()));
    Thread.sleep(100);
    assertEquals(0, h.closed.get(), "the bootstrap's close must not reach the user's handler");
    assertEquals(1, h.connected.get());
  }

  @Test
  @Timeout(30)
  void hangingTransportTimesOutAndFallsBack() throws Exception {
    startServer("hanging,tcp");
    connector = new HrdmaConnector(conf("hanging,tcp").with(TransportConf.CONNECT_TIMEOUT_KEY, "200")
        .with(TransportConf.HELLO_TIMEOUT_KEY, "200")); // it neither connects nor replies
    ClientHandler h = new ClientHandler();
    Connection c = connector.connect(server.serviceAddress(), h);
    assertEquals("tcp", c.transport());
    assertEquals("hanging", c.attempts().get(0).transport());
    assertTrue(c.attempts().get(0).failure().contains("did not finish"), c.attempts().toString());
    exchange(c, h);
  }

  /**
   * One deadline for the whole negotiation (a connect and a hello timeout and a second), not one
   * per transport: two hanging transports in a row cost one wait, and the bootstrap (tcp) is
   * chosen after them.
   */
  @Test
  @Timeout(30)
  void twoHangingTransportsShareOneDeadline() throws Exception {
    startServer("hanging,hanging2,tcp");
    connector = new HrdmaConnector(conf("hanging,hanging2,tcp").with(TransportConf.CONNECT_TIMEOUT_KEY, "200")
        .with(TransportConf.HELLO_TIMEOUT_KEY, "2000")); // a deadline of 3.2 s
    ClientHandler h = new ClientHandler();
    long t0 = System.nanoTime();
    Connection c = connector.connect(server.serviceAddress(), h);
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    assertEquals("tcp", c.transport());
    assertTrue(c.attempts().get(0).failure().contains("did not finish"), c.attempts().toString());
    assertTrue(c.attempts().get(1).failure().contains("did not finish"), c.attempts().toString());
    assertTrue(ms < 5000, "each hanging transport had its own deadline: " + ms + " ms");
    exchange(c, h);
  }

  /** A caller's budget (a DataNode's pipeline set-up) bounds the negotiation below its own deadline. */
  @Test
  @Timeout(30)
  void aCallersBudgetBoundsTheNegotiation() throws Exception {
    startServer("hanging,tcp");
    connector = new HrdmaConnector(conf("hanging,tcp").with(TransportConf.CONNECT_TIMEOUT_KEY, "200")
        .with(TransportConf.HELLO_TIMEOUT_KEY, "10000"));
    ClientHandler h = new ClientHandler();
    long t0 = System.nanoTime();
    Connection c = connector.connect(server.serviceAddress(), h, 500);
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    assertEquals("tcp", c.transport());
    assertTrue(ms < 5000, "the budget of 500 ms was not kept: " + ms + " ms");
    exchange(c, h);
  }

  @Test
  @Timeout(30)
  void nothingWorksSaysWhyForEach() throws Exception {
    startServer("broken,tcp");
    connector = new HrdmaConnector(conf("broken,hanging"));
    ClientHandler h = new ClientHandler();
    HrdmaConnector.NegotiationException e = assertThrows(HrdmaConnector.NegotiationException.class,
        () -> connector.connect(server.serviceAddress(), h));
    assertEquals(2, e.attempts().size(), e.attempts().toString());
    assertEquals(new Attempt("hanging", "not offered by the server"), e.attempts().get(1));
    assertTrue(e.getMessage().contains("broken"), e.getMessage());
    assertEquals(0, h.connected.get());
    assertNull(connector.transports().get("tcp"), "the bootstrap needs no tcp transport");
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
    while (serverClosed.get() < 1 && System.nanoTime() < end) {
      Thread.sleep(5);
    }
    assertEquals(1, serverClosed.get(), "the bootstrap connection closes at the server");
    assertEquals(0, h.closed.get());
  }

  @Test
  @Timeout(30)
  void unreachableServiceIsUnreachable() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    connector = new HrdmaConnector(conf("tcp"));
    TransportException e = assertThrows(TransportException.class,
        () -> connector.connect(new InetSocketAddress("127.0.0.1", port), new ClientHandler()));
    assertInstanceOf(TransportException.Unreachable.class, e, e.toString());
  }

  /** With tcp first in the order, tcp's own connection is the bootstrap: one connection, one hello. */
  @Test
  @Timeout(30)
  void tcpFirstNeedsNoBootstrapOfItsOwn() throws Exception {
    startServer("tcp2,tcp");
    connector = new HrdmaConnector(conf("tcp,tcp2"));
    ClientHandler h = new ClientHandler();
    Connection c = connector.connect(server.serviceAddress(), h);
    assertEquals("tcp", c.transport());
    assertEquals(List.of(new Attempt("tcp", null)), c.attempts());
    exchange(c, h);
    assertEquals(1, serverConnected.get(), "one connection");
    assertEquals(List.of("tcp"), List.copyOf(connector.transports().keySet()));
  }

  // --- the bootstrap hello (a blocking JDK socket) and its failures ---------------------

  /**
   * A service port on a plain socket: reads the client's HELLO frame, then {@code answer}s it
   * (writes what it likes, closes, or nothing); connections stay open until {@link #close}.
   */
  private static final class RawService implements AutoCloseable {
    interface Answer {
      void to(java.net.Socket s) throws java.io.IOException;
    }

    final ServerSocket server;
    private final List<java.net.Socket> accepted = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final Thread acceptor;

    RawService(Answer answer) throws java.io.IOException {
      server = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
      acceptor = new Thread(() -> {
        try {
          while (true) {
            java.net.Socket s = server.accept();
            accepted.add(s);
            java.io.DataInputStream in = new java.io.DataInputStream(s.getInputStream());
            byte[] frame = new byte[in.readInt()];
            in.readFully(frame);
            assertEquals(1, frame[0], "a HELLO first");
            answer.to(s);
          }
        } catch (java.io.IOException closed) {
          // close()
        }
      }, "raw-service");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    InetSocketAddress address() {
      return new InetSocketAddress(server.getInetAddress(), server.getLocalPort());
    }

    @Override
    public void close() throws Exception {
      server.close();
      for (java.net.Socket s : accepted) {
        s.close();
      }
      acceptor.join(WAIT_MS);
    }
  }

  private static byte[] frame(int type, byte[] payload) {
    java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(5 + payload.length);
    b.putInt(payload.length + 1).put((byte) type).put(payload);
    return b.array();
  }

  private TransportException bootstrapFailure(RawService.Answer answer, TransportConf conf, long budgetMs,
      long withinMs) throws Exception {
    try (RawService raw = new RawService(answer)) {
      connector = new HrdmaConnector(conf);
      long t0 = System.nanoTime();
      TransportException e = assertThrows(TransportException.class,
          () -> connector.connect(raw.address(), new ClientHandler(), budgetMs));
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertTrue(ms < withinMs, "took " + ms + " ms: " + e);
      assertTrue(connector.transports().isEmpty(), "no transport made: " + connector.transports());
      return e;
    }
  }

  /** A server that accepts and never answers costs the hello timeout, not more. */
  @Test
  @Timeout(30)
  void aSilentServiceTimesOutAfterTheHelloTimeout() throws Exception {
    TransportException e = bootstrapFailure(s -> { }, conf("ucx,tcp").with(TransportConf.HELLO_TIMEOUT_KEY, "300"),
        Long.MAX_VALUE, 2000);
    assertInstanceOf(TransportException.Timeout.class, e, e.toString());
    assertTrue(e.getMessage().contains("no hello reply") && e.getMessage().contains(TransportConf.HELLO_TIMEOUT_KEY),
        e.getMessage());
  }

  /** ... or the caller's budget, where that is shorter: one deadline for the whole connect. */
  @Test
  @Timeout(30)
  void aSilentServiceTimesOutAtTheCallersDeadline() throws Exception {
    TransportException e = bootstrapFailure(s -> { }, conf("ucx,tcp").with(TransportConf.HELLO_TIMEOUT_KEY, "20000"),
        300, 2000);
    assertInstanceOf(TransportException.Timeout.class, e, e.toString());
    assertTrue(e.getMessage().contains("the connect's deadline"), e.getMessage());
  }

  /** A reply longer than a control message may be is refused on its length, before it is read. */
  @Test
  @Timeout(30)
  void anOversizedReplyIsAProtocolError() throws Exception {
    TransportException e = bootstrapFailure(s -> {
      s.getOutputStream().write(new byte[] {0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff, 2});
      s.getOutputStream().flush();
    }, conf("ucx,tcp"), Long.MAX_VALUE, 2000);
    assertInstanceOf(TransportException.Protocol.class, e, e.toString());
    assertTrue(e.getMessage().contains("exceeds the limit of 65536"), e.getMessage());
  }

  @Test
  @Timeout(30)
  void garbageForAReplyIsAProtocolError() throws Exception {
    TransportException wrongType = bootstrapFailure(s -> s.getOutputStream().write(frame(3, new byte[] {1, 2})),
        conf("ucx,tcp"), Long.MAX_VALUE, 2000);
    assertInstanceOf(TransportException.Protocol.class, wrongType, wrongType.toString());
    assertTrue(wrongType.getMessage().contains("expected HELLO_REPLY") && wrongType.getMessage().contains("DATA"),
        wrongType.getMessage());
    TransportException malformed = bootstrapFailure(
        s -> s.getOutputStream().write(frame(2, new byte[] {(byte) 0xff, (byte) 0xff, 0x01})),
        conf("ucx,tcp"), Long.MAX_VALUE, 2000);
    assertInstanceOf(TransportException.Protocol.class, malformed, malformed.toString());
    assertTrue(malformed.getMessage().contains("malformed HELLO_REPLY"), malformed.getMessage());
  }

  @Test
  @Timeout(30)
  void aServiceThatClosesDuringTheHelloFailed() throws Exception {
    TransportException e = bootstrapFailure(java.net.Socket::close, conf("ucx,tcp"), Long.MAX_VALUE, 2000);
    assertInstanceOf(TransportException.PeerFailed.class, e, e.toString());
    assertTrue(e.getMessage().contains("closed during the hello"), e.getMessage());
  }

  /** A server that refuses the hello (here: its handler does not admit the client) says why. */
  @Test
  @Timeout(30)
  void aRefusedHelloCarriesTheServersStatusAndReason() throws Exception {
    server = HrdmaServer.start(conf("tcp"), new EndpointHandler() {
      @Override
      public String admit(InetSocketAddress remote) {
        return "too many connections";
      }

      @Override
      public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
        message.release();
      }
    }, "127.0.0.1", 0);
    connector = new HrdmaConnector(conf("ucx,tcp"));
    TransportException e = assertThrows(TransportException.class,
        () -> connector.connect(server.serviceAddress(), new ClientHandler()));
    assertInstanceOf(TransportException.Protocol.class, e, e.toString());
    assertTrue(e.getMessage().contains("refused the hello (REFUSED)") && e.getMessage().contains("too many connections"),
        e.getMessage());
    assertTrue(connector.transports().isEmpty(), connector.transports().toString());
  }

  /**
   * Connects through a raw service whose hello reply offers {@code bad} as "tcp2" first, then the
   * real tcp server: {@code bad} fails that transport alone, tcp is chosen; tcp2's failure returned.
   */
  private String secondOfferWorksAfter(org.hdfsrdma.proto.HrdmaProtos.TransportAddress.Builder bad) throws Exception {
    startServer("tcp");
    InetSocketAddress tcp = server.serviceAddress();
    byte[] reply = org.hdfsrdma.proto.HrdmaProtos.HelloReply.newBuilder()
        .setVersion(org.hdfsrdma.transport.Protocol.VERSION).setCredits(8).setMaxMessageSize(1 << 16)
        .addOffers(bad.setTransport("tcp2"))
        .addOffers(org.hdfsrdma.proto.HrdmaProtos.TransportAddress.newBuilder().setTransport("tcp")
            .setHost(tcp.getAddress().getHostAddress()).setPort(tcp.getPort()))
        .build().toByteArray();
    try (RawService raw = new RawService(s -> s.getOutputStream().write(frame(2, reply)))) {
      connector = new HrdmaConnector(conf("tcp2,tcp"));
      ClientHandler h = new ClientHandler();
      Connection c = connector.connect(raw.address(), h);
      assertEquals("tcp", c.transport());
      assertEquals(2, c.attempts().size(), c.attempts().toString());
      assertEquals("tcp2", c.attempts().get(0).transport());
      exchange(c, h);
      return c.attempts().get(0).failure();
    }
  }

  /**
   * An offer no address can be made of (a port past 65535) fails that transport, and the next
   * one offered is tried, as for any transport that fails.
   */
  @Test
  @Timeout(30)
  void anOfferWithAPortOutOfRangeFailsOnlyThatTransport() throws Exception {
    String why = secondOfferWorksAfter(org.hdfsrdma.proto.HrdmaProtos.TransportAddress.newBuilder().setPort(70000));
    assertTrue(why.contains("70000"), why);
  }

  /**
   * An offer naming a host rather than an address fails that transport without a lookup (which
   * would run outside the connect's deadline); an address, IPv4 or IPv6, is taken as it is.
   */
  @Test
  @Timeout(30)
  void anOfferNamingAHostFailsOnlyThatTransport() throws Exception {
    String why = secondOfferWorksAfter(org.hdfsrdma.proto.HrdmaProtos.TransportAddress.newBuilder()
        .setHost("datanode.example.invalid").setPort(1));
    assertTrue(why.contains("names a host, not an address: datanode.example.invalid"), why);
    for (String a : List.of("10.0.0.7", "255.255.255.255", "::1", "fe80::1%eth0", "[::1]", "::ffff:10.0.0.1")) {
      assertTrue(HrdmaConnector.isAddress(a), a);
    }
    for (String n : List.of("localhost", "10.0.0", "10.0.0.256", "1.2.3.4.5", "1..2.3", "0x7f.0.0.1", "a.b.c.d", "")) {
      assertFalse(HrdmaConnector.isAddress(n), n);
    }
  }

  @Test
  @Timeout(30)
  void serverSkipsWhatItCannotRun() throws Exception {
    startServer("nosuch,broken,tcp");
    assertNotNull(server.skipped().get("nosuch"));
    assertEquals(List.of("broken", "tcp"),
        server.offers().stream().map(a -> a.getTransport()).toList());
  }
}
