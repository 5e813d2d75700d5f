package org.hdfsrdma.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.netty.util.ResourceLeakDetector;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.hdfsrdma.proto.HrdmaProtos.Hello;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.Listener;
import org.hdfsrdma.transport.Protocol;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportConf;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Large DATA frames received straight into their own buffer
 * ({@link TcpFrames.DIRECT_RECEIVE_MIN} and up): contents intact whether the
 * header and payload arrive in many small pieces or all at once, at and
 * around the threshold, mixed with small frames, and nothing leaks when the
 * stream ends inside such a frame.
 */
class TcpDirectReceiveTest {
  private static final int WAIT_MS = 10_000;
  private static final int MIN = TcpFrames.DIRECT_RECEIVE_MIN;

  private TcpTransport server;
  private Listener listener;
  private final BlockingQueue<byte[]> received = new LinkedBlockingQueue<>();
  private final CompletableFuture<TcpEndpoint> serverEndpoint = new CompletableFuture<>();
  private final CompletableFuture<Throwable> serverClosed = new CompletableFuture<>();

  @BeforeAll
  static void paranoidLeaks() {
    ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
  }

  @BeforeEach
  void start() throws Exception {
    server = new TcpTransport(TransportConf.defaults()
        .with(TransportConf.MAX_MESSAGE_KEY, Integer.toString(2 << 20)));
    listener = server.listen(new InetSocketAddress("127.0.0.1", 0), new EndpointHandler() {
      @Override
      public void onConnected(Endpoint endpoint) {
        serverEndpoint.complete((TcpEndpoint) endpoint);
      }

      @Override
      public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
        try {
          assertTrue(message.nio().isDirect());
          byte[] b = new byte[message.readableBytes()];
          message.nio().duplicate().get(b);
          received.add(b);
        } finally {
          message.release();
        }
      }

      @Override
      public void onClosed(Endpoint endpoint, Throwable cause) {
        serverClosed.complete(cause);
      }
    });
  }

  @AfterEach
  void nothingLeaked() throws Exception {
    try {
      long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
      while (server.allocator().buffersOutstanding() != 0) {
        if (System.nanoTime() > end) {
          fail("server leaked " + server.allocator().buffersOutstanding() + " buffers");
        }
        Thread.sleep(5);
      }
      if (serverEndpoint.isDone()) {
        TcpEndpoint ep = serverEndpoint.get();
        ep.channel().closeFuture().await(WAIT_MS);
        assertTrue(onIo(ep, () -> !ep.decoder().holdsLargeFrame()), "large frame buffer not released");
      }
    } finally {
      server.close();
    }
  }

  private static <T> T onIo(TcpEndpoint ep, java.util.concurrent.Callable<T> c) throws Exception {
    return ep.channel().eventLoop().submit(c).get(WAIT_MS, TimeUnit.MILLISECONDS);
  }

  private static byte[] pattern(int n, int seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  private static void frame(DataOutputStream out, int type, byte[] payload) throws IOException {
    out.writeInt(payload.length + 1);
    out.writeByte(type);
    out.write(payload);
  }

  /** A raw client that has done its hello; the server's reply is left unread. */
  private Socket helloed() throws Exception {
    Socket s = new Socket();
    s.connect(listener.localAddress(), WAIT_MS);
    s.setTcpNoDelay(true);
    s.setSoTimeout(WAIT_MS);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    frame(new DataOutputStream(bytes), TcpFrames.HELLO, Hello.newBuilder()
        .setVersion(Protocol.VERSION).setCredits(8).setMaxMessageSize(1 << 20).build().toByteArray());
    s.getOutputStream().write(bytes.toByteArray());
    serverEndpoint.get(WAIT_MS, TimeUnit.MILLISECONDS);
    return s;
  }

  /** Payload sizes at and around the threshold, large and small, mixed. */
  private static List<byte[]> messages() {
    int[] sizes = {MIN - 1, MIN, MIN + 1, 5, 1 << 20, 0, 300_000, 17, MIN};
    List<byte[]> m = new ArrayList<>();
    for (int i = 0; i < sizes.length; i++) {
      m.add(pattern(sizes[i], i));
    }
    return m;
  }

  private static byte[] stream(List<byte[]> messages) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    for (byte[] p : messages) {
      frame(out, TcpFrames.DATA, p);
    }
    return bytes.toByteArray();
  }

  private void expect(List<byte[]> messages) throws InterruptedException {
    for (int i = 0; i < messages.size(); i++) {
      byte[] got = received.poll(WAIT_MS, TimeUnit.MILLISECONDS);
      assertNotNull(got, "message " + i + " did not arrive");
      assertArrayEquals(messages.get(i), got, "message " + i + " (" + messages.get(i).length + " bytes)");
    }
  }

  @Test
  @Timeout(60)
  void framesArrivingInManySmallPiecesAreIntact() throws Exception {
    List<byte[]> messages = messages();
    byte[] all = stream(messages);
    Random r = new Random(42);
    try (Socket s = helloed()) {
      OutputStream out = s.getOutputStream();
      int pieces = 0;
      for (int at = 0; at < all.length; ) {
        // Headers split too: pieces of 1..3 bytes now and then, else up to 4000.
        int n = Math.min(all.length - at, r.nextInt(8) == 0 ? 1 + r.nextInt(3) : 1 + r.nextInt(4000));
        out.write(all, at, n);
        out.flush();
        at += n;
        if (++pieces % 16 == 0) {
          Thread.sleep(1); // let the server read what is there
        }
      }
      expect(messages);
      TcpEndpoint ep = serverEndpoint.get();
      long frames = onIo(ep, () -> ep.decoder().directFrames());
      long reads = onIo(ep, () -> ep.decoder().directReads());
      assertTrue(frames >= 1 && reads > frames, "direct frames " + frames + ", reads " + reads);
    }
    assertNotNull(serverClosed.get(WAIT_MS, TimeUnit.MILLISECONDS)); // end of stream without CLOSE
  }

  @Test
  @Timeout(60)
  void framesArrivingAllAtOnceAreIntact() throws Exception {
    List<byte[]> messages = messages();
    try (Socket s = helloed()) {
      s.getOutputStream().write(stream(messages));
      expect(messages);
    }
    serverClosed.get(WAIT_MS, TimeUnit.MILLISECONDS);
  }

  @Test
  @Timeout(60)
  void endOfStreamInsideALargeFrameIsATruncatedFrame() throws Exception {
    byte[] big = stream(List.of(pattern(1 << 20, 7)));
    try (Socket s = helloed()) {
      OutputStream out = s.getOutputStream();
      out.write(big, 0, 5 + 1000);
      out.flush();
      Thread.sleep(50);
      out.write(big, 5 + 1000, 200_000);
      out.flush();
      TcpEndpoint ep = serverEndpoint.get();
      long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
      while (!onIo(ep, () -> ep.decoder().holdsLargeFrame())) {
        assertTrue(System.nanoTime() < end, "the large frame never started");
        Thread.sleep(1);
      }
      s.shutdownOutput();
      Throwable cause = serverClosed.get(WAIT_MS, TimeUnit.MILLISECONDS);
      assertNotNull(cause);
      assertTrue(cause.getMessage().contains("truncated frame"), cause.toString());
    }
    assertEquals(0, received.size());
  }

  @Test
  @Timeout(60)
  void largeMessagesBetweenTransportsGoStraightIntoTheirBuffers() throws Exception {
    try (TcpTransport client = new TcpTransport(TransportConf.defaults())) {
      Endpoint ep = client.connect(listener.localAddress(), (e, m) -> m.release())
          .get(WAIT_MS, TimeUnit.MILLISECONDS);
      List<byte[]> sent = new ArrayList<>();
      List<CompletableFuture<Void>> done = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        byte[] p = pattern(i % 3 == 0 ? MIN : (1 << 20) - i, 100 + i);
        sent.add(p);
        RegisteredBuffer b = client.allocator().allocate(p.length);
        b.nio().put(b.nio().position(), p);
        done.add(ep.send(b));
      }
      CompletableFuture.allOf(done.toArray(new CompletableFuture<?>[0])).get(WAIT_MS, TimeUnit.MILLISECONDS);
      expect(sent);
      TcpEndpoint se = serverEndpoint.get();
      long frames = onIo(se, () -> se.decoder().directFrames());
      assertTrue(frames >= 1, "no frame was received directly");
      ep.close();
      ep.closeFuture().get(WAIT_MS, TimeUnit.MILLISECONDS);
      assertEquals(null, serverClosed.get(WAIT_MS, TimeUnit.MILLISECONDS));
      assertEquals(0, client.allocator().buffersOutstanding());
    }
  }
}
