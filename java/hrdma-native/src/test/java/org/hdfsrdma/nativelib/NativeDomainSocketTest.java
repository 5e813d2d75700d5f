package org.hdfsrdma.nativelib;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.EOFException;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The JNI side of native/src/uds: descriptors passed and taken over, a peer that closes early or
 * never answers, descriptors beyond what a read takes refused and closed. Leaks are counted by
 * {@link NativeFiles#fdsHeld()}, {@link NativeDomainSocket#openSockets()} and the process's open
 * descriptors of the test's file.
 */
@Timeout(30)
class NativeDomainSocketTest {
  private Path dir;
  private Path file;
  private long held0;
  private long sockets0;

  @BeforeEach
  void setUp() throws IOException {
    HrdmaNative.ensureAvailable();
    dir = Files.createTempDirectory(Path.of("target"), "uds-").toAbsolutePath();
    file = Files.write(dir.resolve("file"), new byte[1234]).toRealPath(); // as /proc/self/fd shows it
    held0 = NativeFiles.fdsHeld();
    sockets0 = NativeDomainSocket.openSockets();
  }

  @AfterEach
  void tearDown() throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      for (Path p : (Iterable<Path>) s::iterator) {
        Files.deleteIfExists(p);
      }
    }
    Files.deleteIfExists(dir);
    assertEquals(held0, NativeFiles.fdsHeld(), "descriptors held");
    assertEquals(sockets0, NativeDomainSocket.openSockets(), "sockets open");
  }

  /** Descriptors of this process open on {@code p} now. */
  private static long openOn(Path p) throws IOException {
    long n = 0;
    try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
      for (Path fd : (Iterable<Path>) s::iterator) {
        try {
          if (Files.readSymbolicLink(fd).equals(p)) {
            n++;
          }
        } catch (IOException gone) {
          // closed meanwhile (the listing's own descriptor among them)
        }
      }
    }
    return n;
  }

  private int[] openForPassing(int n) throws NativeException {
    int[] fds = new int[n];
    for (int i = 0; i < n; i++) {
      fds[i] = NativeFiles.openForPassing(file.toString());
    }
    return fds;
  }

  private static void closeAll(int[] fds) {
    for (int fd : fds) {
      NativeDomainSocket.closeReceived(fd);
    }
  }

  @Test
  void descriptorsArriveWithTheirByteAndAreAdopted() throws Exception {
    NativeDomainSocket[] p = NativeDomainSocket.pair();
    int[] sent = openForPassing(2);
    try (NativeDomainSocket a = p[0]; NativeDomainSocket b = p[1]) {
      assertEquals(sockets0 + 2, NativeDomainSocket.openSockets(), "the pair counted");
      a.write(new byte[] {'F', 'G'}, 0, 2, sent, 1000);
      closeAll(sent); // the peer has its own now
      byte[] one = new byte[2];
      int[] fds = new int[3];
      assertEquals(1, b.read(one, 0, 1, fds, 1000));
      assertEquals(-1, fds[2]);
      assertEquals(2, openOn(file), "the two received");
      try (NativeFiles.Fd f0 = NativeFiles.adopt(fds[0]); NativeFiles.Fd f1 = NativeFiles.adopt(fds[1])) {
        assertEquals(1234, f0.size());
        assertEquals(1234, f1.size());
        assertEquals(held0 + 2, NativeFiles.fdsHeld());
      }
      assertEquals(1, b.read(one, 1, 1, fds, 1000), "the second byte, no descriptor");
      assertArrayEquals(new int[] {-1, -1, -1}, fds);
      assertArrayEquals(new byte[] {'F', 'G'}, one);
    }
    assertEquals(0, openOn(file));
  }

  @Test
  void aListenerPeerThatClosesEarly() throws Exception {
    Path sock = dir.resolve("s.sock");
    try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      server.bind(UnixDomainSocketAddress.of(sock));
      try (NativeDomainSocket c = NativeDomainSocket.connect(sock.toString(), 1000)) {
        assertEquals(sockets0 + 1, NativeDomainSocket.openSockets(), "the socket counted");
        try (SocketChannel peer = server.accept()) {
          c.write("ping".getBytes(StandardCharsets.US_ASCII), 0, 4, 1000);
          ByteBuffer in = ByteBuffer.allocate(4);
          while (in.hasRemaining()) {
            peer.read(in);
          }
          assertEquals("ping", new String(in.array(), StandardCharsets.US_ASCII));
          peer.write(ByteBuffer.wrap("po".getBytes(StandardCharsets.US_ASCII)));
        }
        byte[] got = new byte[4];
        EOFException e = assertThrows(EOFException.class, () -> c.readFully(got, 0, 4, 1000));
        assertEquals(sock + " closed after 2 of 4 bytes", e.getMessage());
        assertEquals(-1, c.read(got, 0, 4, new int[2], 1000));
        NativeException w = assertThrows(NativeException.class, () -> c.write(new byte[1], 0, 1, 1000));
        assertEquals(NativeException.ERR_PEER_FAILED, w.status());
      }
    }
    NativeException e = assertThrows(NativeException.class, () -> NativeDomainSocket.connect(sock.toString(), 1000));
    assertEquals(NativeException.ERR_UNREACHABLE, e.status());
    assertTrue(e.getMessage().startsWith("connect to " + sock + ": "), e.getMessage());
  }

  /** A peer that never answers costs a read its timeout; readFully's timeout is for all of it. */
  @Test
  void readsEndAtTheirTimeout() throws Exception {
    NativeDomainSocket[] p = NativeDomainSocket.pair();
    try (NativeDomainSocket a = p[0]; NativeDomainSocket b = p[1]) {
      byte[] buf = new byte[4];
      long t0 = System.nanoTime();
      NativeException e = assertThrows(NativeException.class, () -> b.read(buf, 0, 4, null, 200));
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertEquals(NativeException.ERR_TIMEOUT, e.status());
      assertTrue(ms >= 190 && ms < 3000, ms + " ms");
      a.write(new byte[] {1}, 0, 1, 1000);
      t0 = System.nanoTime();
      e = assertThrows(NativeException.class, () -> b.readFully(buf, 0, 4, 200));
      ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertEquals(NativeException.ERR_TIMEOUT, e.status());
      assertTrue(ms >= 190 && ms < 3000, ms + " ms");
    }
  }

  /** More descriptors than a read takes, or more than its control buffer holds: refused, all closed. */
  @Test
  void descriptorsBeyondWhatAReadTakesAreRefusedAndClosed() throws Exception {
    NativeDomainSocket[] p = NativeDomainSocket.pair();
    int[] sent = openForPassing(3);
    try (NativeDomainSocket a = p[0]; NativeDomainSocket b = p[1]) {
      byte[] buf = new byte[8];
      a.write(buf, 0, 1, new int[] {sent[0], sent[1]}, 1000); // two where one is asked for
      a.write(buf, 0, 1, sent, 1000);                        // three: the kernel cuts them short
      a.write(buf, 0, 1, new int[] {sent[0]}, 1000);         // one where none is asked for
      for (int[] fds : new int[][] {new int[1], new int[1], null}) {
        NativeException e = assertThrows(NativeException.class, () -> b.read(buf, 0, 1, fds, 1000));
        assertEquals(NativeException.ERR_TRUNCATED, e.status());
        assertEquals(3, openOn(file), "only the sender's own");
      }
      a.write(buf, 0, 1, new int[] {sent[2]}, 1000); // the socket still works
      int[] fds = new int[1];
      assertEquals(1, b.read(buf, 0, 1, fds, 1000));
      NativeDomainSocket.closeReceived(fds[0]);
    } finally {
      closeAll(sent);
    }
    assertEquals(0, openOn(file));
  }

  /**
   * Close is idempotent, counted once, and waits for a read in progress on another thread (which
   * keeps its descriptor until it is done); calls after it fail without touching the number.
   */
  @Test
  void closeWaitsForACallInProgressAndEndsEveryLaterOne() throws Exception {
    NativeDomainSocket[] p = NativeDomainSocket.pair();
    NativeDomainSocket b = p[1];
    try (NativeDomainSocket a = p[0]) {
      java.util.concurrent.CompletableFuture<Throwable> reader = new java.util.concurrent.CompletableFuture<>();
      Thread t = new Thread(() -> {
        try {
          b.read(new byte[1], 0, 1, null, 300);
          reader.complete(null);
        } catch (Throwable e) {
          reader.complete(e);
        }
      });
      t.start();
      Thread.sleep(100);
      long c0 = System.nanoTime();
      b.close();
      long closeMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - c0);
      Throwable e0 = reader.get(10, TimeUnit.SECONDS);
      assertTrue(e0 instanceof NativeException, String.valueOf(e0));
      int st = ((NativeException) e0).status();
      // the read had begun (close waited for its timeout, 200 ms more) or it had not (closed)
      assertTrue(st == NativeException.ERR_TIMEOUT && closeMs >= 100 || st == NativeException.ERR_CLOSED,
          "status " + st + ", close took " + closeMs + " ms");
      t.join();
      b.close();
      assertTrue(b.isClosed());
      assertEquals(sockets0 + 1, NativeDomainSocket.openSockets(), "one end left");
      NativeException e = assertThrows(NativeException.class, () -> b.read(new byte[1], 0, 1, null, 10));
      assertEquals(NativeException.ERR_CLOSED, e.status());
      e = assertThrows(NativeException.class, () -> b.write(new byte[1], 0, 1, 10));
      assertEquals(NativeException.ERR_CLOSED, e.status());
    }
  }
}
