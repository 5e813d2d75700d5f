package org.hdfsrdma.transport.select;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
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
    assertEquals(2, serverConnected.get());
    // The client forgets its side once the channel's close completes, a little
    // after the server saw the close.
    TcpTransport clientTcp = (TcpTransport) connector.transports().get("tcp");
    while (clientTcp.openEndpoints() > 0 && System.nanoTime() < end) {
      Thread.sleep(5);
    }
    assertEquals(0, clientTcp.openEndpoints(), "bootstrap endpoint left open");
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
    TcpTransport clientTcp = (TcpTransport) connector.transports().get("tcp");
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
    while (clientTcp.openEndpoints() != 0 && System.nanoTime() < end) {
      Thread.sleep(5);
    }
    assertEquals(0, clientTcp.openEndpoints());
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

  @Test
  @Timeout(30)
  void serverSkipsWhatItCannotRun() throws Exception {
    startServer("nosuch,broken,tcp");
    assertNotNull(server.skipped().get("nosuch"));
    assertEquals(List.of("broken", "tcp"),
        server.offers().stream().map(a -> a.getTransport()).toList());
  }
}
