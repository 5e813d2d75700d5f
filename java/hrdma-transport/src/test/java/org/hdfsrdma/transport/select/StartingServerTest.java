package org.hdfsrdma.transport.select;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.EOFException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.hdfsrdma.proto.HrdmaProtos.Hello;
import org.hdfsrdma.proto.HrdmaProtos.HelloReply;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.Protocol;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.hdfsrdma.transport.select.HrdmaConnector.Connection;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A server that listens before it serves ({@link StartingHandler}): every hello is refused as
 * "starting" (REFUSED, refusal STARTING), which the connecting side tells apart from every other
 * failure ({@link TransportException.Starting}), and is served normally once it serves.
 */
class StartingServerTest {
  private static final int WAIT_MS = 10_000;

  private HrdmaServer server;
  private HrdmaConnector connector;

  private static TransportConf conf(String order) {
    return TransportConf.defaults()
        .with(TransportConf.ORDER_KEY, order)
        .with(TransportConf.CONNECT_TIMEOUT_KEY, "1000");
  }

  @AfterEach
  void closeAll() {
    if (connector != null) {
      connector.close();
    }
    if (server != null) {
      server.close();
    }
  }

  /** Echoes every message. */
  private static final class Echo implements EndpointHandler {
    @Override
    public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
      try {
        RegisteredBuffer m = endpoint.transport().allocator().allocate(message.readableBytes());
        m.nio().put(m.nio().position(), message.nio(), message.nio().position(), message.readableBytes());
        message.release();
        endpoint.send(m);
      } catch (TransportException e) {
        throw new IllegalStateException(e);
      }
    }
  }

  private static final class Received implements EndpointHandler {
    final BlockingQueue<String> messages = new LinkedBlockingQueue<>();

    @Override
    public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
      byte[] b = new byte[message.readableBytes()];
      message.nio().duplicate().get(b);
      message.release();
      messages.add(new String(b, StandardCharsets.UTF_8));
    }
  }

  private static void ping(Connection c, Received h) throws Exception {
    byte[] b = "ping".getBytes(StandardCharsets.UTF_8);
    RegisteredBuffer m = c.endpoint().transport().allocator().allocate(b.length);
    m.nio().put(m.nio().position(), b);
    c.endpoint().send(m).get(WAIT_MS, TimeUnit.MILLISECONDS);
    assertEquals("ping", h.messages.poll(WAIT_MS, TimeUnit.MILLISECONDS));
  }

  /**
   * Starting: the bootstrap (another transport first) and tcp's own connection (tcp first) both
   * fail with Starting, at once; serving: both connect and carry messages.
   */
  @Test
  @Timeout(60)
  void aStartingServerRefusesAsStartingThenServes() throws Exception {
    StartingHandler gate = new StartingHandler();
    server = HrdmaServer.start(conf("tcp2,tcp"), gate, "127.0.0.1", 0);
    for (String order : new String[] {"tcp2,tcp", "tcp,tcp2"}) {
      try (HrdmaConnector c = new HrdmaConnector(conf(order))) {
        long t0 = System.nanoTime();
        TransportException e = assertThrows(TransportException.class,
            () -> c.connect(server.serviceAddress(), new Received()));
        assertInstanceOf(TransportException.Starting.class, e, order + ": " + e);
        assertTrue(e.getMessage().contains("starting"), e.getMessage());
        assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0) < 2000, "refused at once");
      }
    }
    assertEquals(2, gate.refusedStarting());
    assertFalse(gate.serving());
    gate.serve(new Echo());
    assertThrows(IllegalStateException.class, () -> gate.serve(new Echo()));
    for (String order : new String[] {"tcp2,tcp", "tcp,tcp2"}) {
      try (HrdmaConnector c = new HrdmaConnector(conf(order))) {
        Received h = new Received();
        Connection conn = c.connect(server.serviceAddress(), h);
        assertEquals(order.substring(0, order.indexOf(',')), conn.transport());
        ping(conn, h);
      }
    }
    assertEquals(2, gate.refusedStarting(), "served, not refused");
  }

  /**
   * The refusal on the wire: status REFUSED (what an older client, which knows no refusal field,
   * acts on), refusal STARTING, and the connection closed by the server right after it: a
   * starting server holds no connection.
   */
  @Test
  @Timeout(30)
  void theStartingRefusalIsAPlainRefusedReplyAndTheConnectionCloses() throws Exception {
    server = HrdmaServer.start(conf("tcp"), new StartingHandler(), "127.0.0.1", 0);
    try (Socket s = new Socket()) {
      s.connect(server.serviceAddress(), WAIT_MS);
      s.setSoTimeout(WAIT_MS);
      byte[] hello = Hello.newBuilder().setVersion(Protocol.VERSION).setCredits(8).setMaxMessageSize(1 << 16)
          .addTransports("tcp").build().toByteArray();
      s.getOutputStream().write(ByteBuffer.allocate(5 + hello.length).putInt(hello.length + 1).put((byte) 1)
          .put(hello).array());
      DataInputStream in = new DataInputStream(s.getInputStream());
      byte[] frame = new byte[in.readInt()];
      in.readFully(frame);
      assertEquals(2, frame[0], "HELLO_REPLY");
      HelloReply r = HelloReply.parseFrom(ByteBuffer.wrap(frame, 1, frame.length - 1));
      assertEquals(HelloReply.Status.REFUSED, r.getStatus());
      assertEquals(HelloReply.Refusal.STARTING, r.getRefusal());
      assertEquals(EndpointHandler.REFUSED_STARTING, r.getError());
      assertTrue(r.getOffersList().isEmpty(), "no offers before it serves");
      assertThrows(EOFException.class, () -> {
        while (true) {
          in.readByte(); // the server's CLOSE frame, if any, then the end of the stream
        }
      });
    }
  }

  /**
   * Every other refusal, and a refusal from a server that predates the refusal field, stays a
   * plain Protocol failure: only STARTING is Starting.
   */
  @Test
  @Timeout(30)
  void otherRefusalsAreNotStarting() throws Exception {
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
    for (String order : new String[] {"tcp2,tcp", "tcp"}) {
      connector = new HrdmaConnector(conf(order));
      TransportException e = assertThrows(TransportException.class,
          () -> connector.connect(server.serviceAddress(), new Received()));
      assertInstanceOf(TransportException.Protocol.class, e, e.toString());
      assertFalse(e instanceof TransportException.Starting, e.toString());
      connector.close();
    }
    // a server without the field: REFUSED alone, as servers before it answered
    byte[] reply = HelloReply.newBuilder().setVersion(Protocol.VERSION).setStatus(HelloReply.Status.REFUSED)
        .setError("the server is starting").build().toByteArray();
    try (ServerSocket raw = new ServerSocket(0, 5, InetAddress.getLoopbackAddress())) {
      Thread t = new Thread(() -> {
        try (Socket s = raw.accept()) {
          DataInputStream in = new DataInputStream(s.getInputStream());
          in.readFully(new byte[in.readInt()]);
          s.getOutputStream().write(ByteBuffer.allocate(5 + reply.length).putInt(reply.length + 1).put((byte) 2)
              .put(reply).array());
          s.getInputStream().read();
        } catch (java.io.IOException closed) {
          // the client's close
        }
      });
      t.setDaemon(true);
      t.start();
      connector = new HrdmaConnector(conf("tcp2,tcp"));
      TransportException e = assertThrows(TransportException.class, () -> connector.connect(
          new InetSocketAddress(raw.getInetAddress(), raw.getLocalPort()), new Received()));
      assertInstanceOf(TransportException.Protocol.class, e, e.toString());
      assertFalse(e instanceof TransportException.Starting, e.toString());
      t.join(WAIT_MS);
    }
  }
}
