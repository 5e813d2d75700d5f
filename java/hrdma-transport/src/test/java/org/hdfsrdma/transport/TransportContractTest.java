package org.hdfsrdma.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.util.ResourceLeakDetector;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The behaviour every transport must have, run once per transport by a
 * subclass. Each test builds a server and a client transport, and checks
 * afterwards that no buffer leaked ({@code buffersOutstanding() == 0} on both
 * sides) and no endpoint stayed open.
 */
public abstract class TransportContractTest {
  protected static final long WAIT_MS = 10_000;

  /** A transport of the kind under test, configured with {@code conf}. */
  protected abstract Transport newTransport(TransportConf conf) throws Exception;

  protected Transport newTransport() throws Exception {
    return newTransport(baseConf());
  }

  /** Settings every test starts from. */
  protected TransportConf baseConf() {
    return TransportConf.defaults().with(TransportConf.CONNECT_TIMEOUT_KEY, "5000");
  }

  protected InetSocketAddress bindAddress() {
    return new InetSocketAddress("127.0.0.1", 0);
  }

  /** Whether the transport under test claims one-sided access. */
  protected boolean supportsOneSided() {
    return server.capabilities().contains(Capability.ONE_SIDED);
  }

  /** Endpoints the transport still has open, or -1 when it cannot say. */
  protected int openEndpoints(Transport t) {
    return -1;
  }

  /** A connection that never says HELLO (a silent or hostile peer), opened by {@link #silentPeer}. */
  public interface SilentPeer extends AutoCloseable {
    /** Whether the other side closed this connection within {@code waitMs}. */
    boolean closedByServer(long waitMs) throws Exception;

    @Override
    void close() throws java.io.IOException;
  }

  /** Opens a connection to {@code address} over the transport under test that never says HELLO. */
  protected abstract SilentPeer silentPeer(InetSocketAddress address) throws Exception;

  /** Accepted connections {@code t} closed to bound those waiting for their hello. */
  protected abstract long pendingHellosEvicted(Transport t);

  /** Releases whatever arrives. */
  protected static final EndpointHandler RELEASE = (endpoint, message) -> message.release();

  protected Transport server;
  protected Transport client;
  protected Listener listener;
  private final List<Endpoint> endpoints = new CopyOnWriteArrayList<>();
  private final Queue<Throwable> errors = new ConcurrentLinkedQueue<>();
  private Process child;

  @BeforeAll
  static void paranoidLeaks() {
    ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
  }

  /** Starts both transports and a listener reporting to {@code serverHandler}. */
  protected void start(TransportConf serverConf, TransportConf clientConf, EndpointHandler serverHandler)
      throws Exception {
    server = newTransport(serverConf);
    client = newTransport(clientConf);
    listener = server.listen(bindAddress(), tracking(serverHandler));
  }

  protected void start(EndpointHandler serverHandler) throws Exception {
    start(baseConf(), baseConf(), serverHandler);
  }

  protected Endpoint connect(EndpointHandler handler) throws Exception {
    Endpoint ep = client.connect(listener.localAddress(), handler).get(WAIT_MS, TimeUnit.MILLISECONDS);
    endpoints.add(ep);
    return ep;
  }

  /** Records server-side endpoints so the teardown can close and check them. */
  private EndpointHandler tracking(EndpointHandler h) {
    return new EndpointHandler() {
      @Override
      public String admit(InetSocketAddress remote) {
        return h.admit(remote);
      }

      @Override
      public void onAbandoned(InetSocketAddress remote) {
        h.onAbandoned(remote);
      }

      @Override
      public void onConnected(Endpoint endpoint) {
        endpoints.add(endpoint);
        h.onConnected(endpoint);
      }

      @Override
      public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
        h.onMessage(endpoint, message);
      }

      @Override
      public void onClosed(Endpoint endpoint, Throwable cause) {
        h.onClosed(endpoint, cause);
      }
    };
  }

  @AfterEach
  void checkNothingLeaked() throws Exception {
    try {
      if (child != null) {
        child.destroyForcibly().waitFor(WAIT_MS, TimeUnit.MILLISECONDS);
      }
      for (Endpoint ep : endpoints) {
        ep.close();
      }
      for (Endpoint ep : endpoints) {
        try {
          ep.closeFuture().get(WAIT_MS, TimeUnit.MILLISECONDS);
        } catch (ExecutionException expected) {
          // closed by a failure: still closed
        }
        assertTrue(ep.closeFuture().isDone(), ep + " did not close");
      }
      if (server != null) {
        awaitTrue(() -> server.allocator().buffersOutstanding() == 0,
            () -> "server leaked " + server.allocator().buffersOutstanding() + " buffers");
        awaitTrue(() -> openEndpoints(server) <= 0, () -> "server has open endpoints");
      }
      if (client != null) {
        awaitTrue(() -> client.allocator().buffersOutstanding() == 0,
            () -> "client leaked " + client.allocator().buffersOutstanding() + " buffers");
        awaitTrue(() -> openEndpoints(client) <= 0, () -> "client has open endpoints");
      }
      if (!errors.isEmpty()) {
        AssertionError e = new AssertionError("handler errors: " + errors);
        errors.forEach(e::addSuppressed);
        throw e;
      }
    } finally {
      if (client != null) {
        client.close();
      }
      if (server != null) {
        server.close();
      }
    }
  }

  // --- helpers -----------------------------------------------------------

  protected static void awaitTrue(BooleanSupplier cond, java.util.function.Supplier<String> what)
      throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
    while (!cond.getAsBoolean()) {
      if (System.nanoTime() > end) {
        fail(what.get());
      }
      Thread.sleep(5);
    }
  }

  private static byte pattern(int seq, int i, int salt) {
    return (byte) (seq * 31 + i * 7 + salt);
  }

  /** A message: 4-byte sequence number, then {@code size - 4} pattern bytes. */
  protected RegisteredBuffer message(Transport t, int seq, int size, int salt) throws Exception {
    RegisteredBuffer b = t.allocator().allocate(size);
    ByteBuffer nio = b.nio();
    int p = nio.position();
    nio.putInt(p, seq);
    for (int i = 4; i < size; i++) {
      nio.put(p + i, pattern(seq, i, salt));
    }
    return b;
  }

  /** Checks a message built by {@link #message} and returns its sequence number. */
  protected static int check(RegisteredBuffer m, int salt) {
    ByteBuffer nio = m.nio();
    int p = nio.position();
    int size = nio.remaining();
    int seq = nio.getInt(p);
    for (int i = 4; i < size; i++) {
      if (nio.get(p + i) != pattern(seq, i, salt)) {
        throw new AssertionError("message " + seq + " differs at byte " + i);
      }
    }
    return seq;
  }

  private static int sizeOf(int seq) {
    return 4 + (seq * 37) % 3000;
  }

  private static void awaitAll(List<CompletableFuture<Void>> fs) throws Exception {
    CompletableFuture.allOf(fs.toArray(new CompletableFuture<?>[0])).get(WAIT_MS, TimeUnit.MILLISECONDS);
  }

  /** A handler that checks sequence and content of what arrives, then releases it. */
  private final class Checker implements EndpointHandler {
    final int salt;
    final AtomicInteger next = new AtomicInteger();
    final BlockingQueue<Endpoint> connected = new LinkedBlockingQueue<>();

    Checker(int salt) {
      this.salt = salt;
    }

    @Override
    public void onConnected(Endpoint endpoint) {
      connected.add(endpoint);
    }

    @Override
    public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
      try {
        int seq = check(message, salt);
        int want = next.getAndIncrement();
        if (seq != want) {
          errors.add(new AssertionError("expected message " + want + ", got " + seq));
        }
        if (message.readableBytes() != sizeOf(seq)) {
          errors.add(new AssertionError("message " + seq + " has " + message.readableBytes() + " bytes"));
        }
      } catch (Throwable e) {
        errors.add(e);
      } finally {
        message.release();
      }
    }
  }

  // --- the contract --------------------------------------------------------

  @Test
  @Timeout(30)
  void smallMessagesBothDirectionsInOrder() throws Exception {
    int n = 2000;
    Checker atServer = new Checker(1);
    Checker atClient = new Checker(2);
    start(atServer);
    Endpoint c = connect(atClient);
    Endpoint s = atServer.connected.poll(WAIT_MS, TimeUnit.MILLISECONDS);
    assertNotNull(s, "server saw no connection");
    List<CompletableFuture<Void>> sends = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      sends.add(c.send(message(client, i, sizeOf(i), 1)));
      sends.add(s.send(message(server, i, sizeOf(i), 2)));
    }
    awaitAll(sends);
    awaitTrue(() -> atServer.next.get() == n && atClient.next.get() == n,
        () -> "received " + atServer.next + " and " + atClient.next + " of " + n);
    assertTrue(errors.isEmpty(), () -> errors.toString());
  }

  @Test
  @Timeout(60)
  void bulkTransferIsIntact() throws Exception {
    int size = 1 << 20;
    int count = 256;
    CRC32C received = new CRC32C();
    AtomicLong bytes = new AtomicLong();
    AtomicInteger next = new AtomicInteger();
    long[] sentSums = new long[count];      // per message, to say which one differs
    long[] receivedSums = new long[count];
    start(new EndpointHandler() {
      @Override
      public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
        try {
          int seq = message.nio().getInt(message.nio().position());
          if (seq != next.getAndIncrement()) {
            errors.add(new AssertionError("bulk message " + seq + " out of order"));
          }
          received.update(message.nio().duplicate());
          if (seq >= 0 && seq < count) {
            CRC32C one = new CRC32C();
            one.update(message.nio().duplicate());
            receivedSums[seq] = one.getValue();
          }
          // counted last: the test thread reads the sums once every byte is counted
          bytes.addAndGet(message.readableBytes());
        } finally {
          message.release();
        }
      }
    });
    Endpoint c = connect(RELEASE);
    byte[] pattern = new byte[size];
    new java.util.Random(42).nextBytes(pattern);
    CRC32C sent = new CRC32C();
    Semaphore window = new Semaphore(32);
    List<CompletableFuture<Void>> sends = new ArrayList<>();
    long t0 = System.nanoTime();
    for (int i = 0; i < count; i++) {
      window.acquire();
      RegisteredBuffer b = client.allocator().allocate(size);
      b.nio().put(b.nio().position(), pattern).putInt(b.nio().position(), i);
      pattern[size - 1 - (i % 1024)] ^= 0x5a; // every message differs
      sent.update(b.nio().duplicate());
      CRC32C one = new CRC32C();
      one.update(b.nio().duplicate());
      sentSums[i] = one.getValue();
      CompletableFuture<Void> f = c.send(b);
      f.whenComplete((v, t) -> window.release());
      sends.add(f);
    }
    awaitAll(sends);
    awaitTrue(() -> bytes.get() == (long) size * count, () -> "received " + bytes + " bytes");
    double secs = (System.nanoTime() - t0) / 1e9;
    System.out.printf("%s bulk: %d x %d bytes in %.2f s, %.0f MB/s%n", server.name(), count, size, secs,
        size * (double) count / secs / 1e6);
    assertTrue(errors.isEmpty(), () -> errors.toString());
    List<Integer> differ = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      if (sentSums[i] != receivedSums[i]) {
        differ.add(i);
      }
    }
    assertEquals(List.of(), differ, "bulk messages whose bytes differ from those sent (of " + count + ")");
    assertEquals(sent.getValue(), received.getValue(), "CRC32C of the bulk stream");
  }

  @Test
  @Timeout(30)
  void oneSidedWriteAndRead() throws Exception {
    start(RELEASE);
    assumeTrue(supportsOneSided(), server.name() + " lacks Capability.ONE_SIDED");
    int len = 64 << 10;
    int off = 4096;
    int wlen = 32 << 10;
    BlockingQueue<Endpoint> serverSide = new LinkedBlockingQueue<>();
    BlockingQueue<RegisteredBuffer> atClient = new LinkedBlockingQueue<>();
    listener.close();
    listener = server.listen(bindAddress(), tracking(new EndpointHandler() {
      @Override
      public void onConnected(Endpoint endpoint) {
        serverSide.add(endpoint);
      }

      @Override
      public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
        message.release();
      }
    }));
    Endpoint c = connect(new EndpointHandler() {
      @Override
      public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
        atClient.add(message);
      }
    });
    Endpoint s = serverSide.poll(WAIT_MS, TimeUnit.MILLISECONDS);
    assertNotNull(s);
    RegisteredBuffer region = server.allocator().allocate(len);
    RegisteredBuffer local = client.allocator().allocate(len);
    RegisteredBuffer src = client.allocator().allocate(wlen);
    try {
      for (int i = 0; i < len; i++) {
        region.nio().put(i, (byte) i);
      }
      for (int i = 0; i < wlen; i++) {
        src.nio().put(i, (byte) (i * 13 + 1));
      }
      byte[] desc = s.expose(region).toBytes();
      RegisteredBuffer m = server.allocator().allocate(desc.length);
      m.nio().put(m.nio().position(), desc);
      s.send(m).get(WAIT_MS, TimeUnit.MILLISECONDS);
      RegisteredBuffer got = atClient.poll(WAIT_MS, TimeUnit.MILLISECONDS);
      assertNotNull(got, "no region descriptor");
      byte[] bytes = new byte[got.readableBytes()];
      got.nio().duplicate().get(bytes);
      got.release();
      RemoteRegion remote = RemoteRegion.fromBytes(bytes);
      c.write(src.retain(), remote, off).get(WAIT_MS, TimeUnit.MILLISECONDS);
      c.flush().get(WAIT_MS, TimeUnit.MILLISECONDS);
      c.read(local.retain(), remote, 0).get(WAIT_MS, TimeUnit.MILLISECONDS);
      for (int i = 0; i < len; i++) {
        byte want = i >= off && i < off + wlen ? (byte) ((i - off) * 13 + 1) : (byte) i;
        assertEquals(want, local.nio().get(i), "read back byte " + i);
        assertEquals(want, region.nio().get(i), "server region byte " + i);
      }
    } finally {
      region.release();
      local.release();
      src.release();
    }
  }

  @Test
  @Timeout(30)
  void manyConcurrentEndpoints() throws Exception {
    int endpointsN = 32;
    int perEndpoint = 50;
    start(new EndpointHandler() { // echo
      @Override
      public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
        try {
          RegisteredBuffer copy = server.allocator().allocate(message.readableBytes());
          copy.nio().put(copy.nio().position(), message.nio(), message.nio().position(),
              message.readableBytes());
          endpoint.send(copy);
        } catch (Exception e) {
          errors.add(e);
        } finally {
          message.release();
        }
      }
    });
    List<Checker> checkers = new ArrayList<>();
    List<Endpoint> eps = new ArrayList<>();
    List<CompletableFuture<Endpoint>> connecting = new ArrayList<>();
    for (int i = 0; i < endpointsN; i++) {
      Checker ch = new Checker(100 + i);
      checkers.add(ch);
      connecting.add(client.connect(listener.localAddress(), ch));
    }
    for (CompletableFuture<Endpoint> f : connecting) {
      Endpoint ep = f.get(WAIT_MS, TimeUnit.MILLISECONDS);
      endpoints.add(ep);
      eps.add(ep);
    }
    List<CompletableFuture<Void>> sends = new ArrayList<>();
    for (int seq = 0; seq < perEndpoint; seq++) {
      for (int i = 0; i < endpointsN; i++) {
        sends.add(eps.get(i).send(message(client, seq, sizeOf(seq), 100 + i)));
      }
    }
    awaitAll(sends);
    awaitTrue(() -> checkers.stream().allMatch(ch -> ch.next.get() == perEndpoint),
        () -> "echoes missing");
    assertTrue(errors.isEmpty(), () -> errors.toString());
  }

  @Test
  @Timeout(40)
  void peerKilledMidTransferFailsOutstandingSends() throws Exception {
    server = newTransport(baseConf());
    client = newTransport(baseConf());
    String java = ProcessHandle.current().info().command()
        .orElse(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
    List<String> cmd = new ArrayList<>(List.of(java, "-Xmx256m", "-cp",
        System.getProperty("java.class.path"), "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        PeerMain.class.getName(), server.name()));
    for (Map.Entry<String, String> e : baseConf().asMap().entrySet()) {
      cmd.add(e.getKey() + "=" + e.getValue());
    }
    child = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(),
        StandardCharsets.UTF_8));
    String line = out.readLine();
    assertNotNull(line, "peer process printed nothing");
    assertTrue(line.startsWith("PORT "), line);
    int port = Integer.parseInt(line.substring(5).trim());

    CompletableFuture<Throwable> closedWith = new CompletableFuture<>();
    Endpoint c = client.connect(new InetSocketAddress("127.0.0.1", port), new EndpointHandler() {
      @Override
      public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
        message.release();
      }

      @Override
      public void onClosed(Endpoint endpoint, Throwable cause) {
        closedWith.complete(cause);
      }
    }).get(WAIT_MS, TimeUnit.MILLISECONDS);
    endpoints.add(c);
    int credits = TransportConf.CREDITS_DEFAULT;
    List<CompletableFuture<Void>> sends = new ArrayList<>();
    for (int i = 0; i < credits * 3; i++) {
      sends.add(c.send(message(client, i, 64 << 10, 7)));
    }
    // The peer holds what it gets: after its credits, the rest wait.
    awaitTrue(() -> sends.stream().filter(CompletableFuture::isDone).count() >= credits / 2,
        () -> "no sends completed");
    assertTrue(sends.stream().anyMatch(f -> !f.isDone()), "every send finished before the kill");
    child.destroyForcibly();
    assertTrue(child.waitFor(WAIT_MS, TimeUnit.MILLISECONDS));
    // Nothing hangs. A send already in flight may still have made it out before the
    // kill; one queued beyond the peer's credits (never granted back) must fail.
    int failed = 0;
    for (int i = 0; i < sends.size(); i++) {
      try {
        sends.get(i).get(WAIT_MS, TimeUnit.MILLISECONDS);
        assertTrue(i < credits, "send " + i + " succeeded beyond the peer's " + credits + " credits");
      } catch (ExecutionException e) {
        assertInstanceOf(TransportException.class, e.getCause());
        failed++;
      }
    }
    assertTrue(failed >= sends.size() - credits, failed + " sends failed");
    Throwable cause = closedWith.get(WAIT_MS, TimeUnit.MILLISECONDS);
    assertNotNull(cause, "onClosed must carry the failure");
    // the handler hears of it first; the close future completes just after, on the I/O thread
    ExecutionException closeFailure = assertThrows(ExecutionException.class,
        () -> c.closeFuture().get(WAIT_MS, TimeUnit.MILLISECONDS));
    assertNotNull(closeFailure.getCause());
    assertFalse(c.isWritable());
  }

  @Test
  @Timeout(30)
  void closeWhileBusyFailsQueuedSendsAndReleasesBuffers() throws Exception {
    int credits = 8;
    Queue<RegisteredBuffer> held = new ConcurrentLinkedQueue<>();
    CompletableFuture<Throwable> serverClosed = new CompletableFuture<>();
    start(baseConf().with(TransportConf.CREDITS_KEY, "" + credits), baseConf(), new EndpointHandler() {
      @Override
      public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
        held.add(message);
      }

      @Override
      public void onClosed(Endpoint endpoint, Throwable cause) {
        serverClosed.complete(cause);
      }
    });
    Endpoint c = connect(RELEASE);
    List<CompletableFuture<Void>> sends = new ArrayList<>();
    for (int i = 0; i < credits * 5; i++) {
      sends.add(c.send(message(client, i, 4096, 3)));
    }
    awaitTrue(() -> held.size() == credits, () -> "server holds " + held.size());
    c.close();
    c.closeFuture().get(WAIT_MS, TimeUnit.MILLISECONDS);
    int failedClosed = 0;
    for (CompletableFuture<Void> f : sends) {
      try {
        f.get(WAIT_MS, TimeUnit.MILLISECONDS);
      } catch (ExecutionException e) {
        assertInstanceOf(TransportException.Closed.class, e.getCause());
        failedClosed++;
      }
    }
    assertTrue(failedClosed >= credits * 4, "queued sends failed: " + failedClosed);
    assertEquals(null, serverClosed.get(WAIT_MS, TimeUnit.MILLISECONDS), "graceful close at the server");
    RegisteredBuffer m;
    while ((m = held.poll()) != null) {
      m.release();
    }
    assertFalse(c.isWritable());
    CompletableFuture<Void> late = c.send(message(client, 0, 16, 0));
    ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
        () -> late.get(WAIT_MS, TimeUnit.MILLISECONDS));
    assertInstanceOf(TransportException.Closed.class, e.getCause());
  }

  @Test
  @Timeout(30)
  void backpressureStopsAtCreditsAndResumes() throws Exception {
    int credits = 8;
    int n = credits * 3;
    Queue<RegisteredBuffer> held = new ConcurrentLinkedQueue<>();
    AtomicInteger holding = new AtomicInteger();
    AtomicInteger maxHeld = new AtomicInteger();
    AtomicInteger received = new AtomicInteger();
    CountDownLatch releaseAll = new CountDownLatch(1);
    start(baseConf().with(TransportConf.CREDITS_KEY, "" + credits), baseConf(), new EndpointHandler() {
      @Override
      public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
        received.incrementAndGet();
        int h = holding.incrementAndGet();
        maxHeld.accumulateAndGet(h, Math::max);
        if (releaseAll.getCount() == 0) {
          holding.decrementAndGet();
          message.release();
        } else {
          held.add(message);
        }
      }
    });
    Endpoint c = connect(RELEASE);
    List<CompletableFuture<Void>> sends = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      sends.add(c.send(message(client, i, 4096, 5)));
    }
    awaitTrue(() -> held.size() == credits, () -> "server holds " + held.size());
    Thread.sleep(300);
    assertEquals(credits, received.get(), "the sender went past the receiver's credits");
    assertFalse(c.isWritable(), "sender still writable with its credits spent");
    for (int i = credits; i < n; i++) {
      assertFalse(sends.get(i).isDone(), "send " + i + " completed without credit");
    }
    releaseAll.countDown();
    RegisteredBuffer m;
    while ((m = held.poll()) != null) {
      holding.decrementAndGet();
      m.release();
    }
    awaitAll(sends);
    awaitTrue(() -> received.get() == n, () -> "received " + received + " of " + n);
    awaitTrue(c::isWritable, () -> "sender not writable after the receiver caught up");
    assertTrue(maxHeld.get() <= credits, "receiver held " + maxHeld + " > " + credits);
    // late arrivals may have slipped into the queue after the drain
    while ((m = held.poll()) != null) {
      m.release();
    }
  }

  /**
   * A client that sends request after request (each answered once, its requests released at once)
   * and takes none of its answers (grants no credits back) is owed at most two windows of queued
   * answers: past one window the server grants it no credits, so its own sends stall. Once it
   * takes its answers, every request is answered. Before, the server queued all 2000 answers.
   */
  @Test
  @Timeout(60)
  void aClientThatTakesNoAnswersIsOwedAtMostTwoWindowsAndStalls() throws Exception {
    floodWithoutTakingAnswers();
  }

  /**
   * An honest client whose sends queue behind a server that holds its messages (a slow disk) and
   * answers each as it lets it go is never stalled: the client, whose own queue is long, still
   * grants the server credits for the answers it takes, so the server's answers never back up
   * and everything is answered. Were the connecting side to withhold its credits as the
   * accepting side does, both would wait for the other's for ever.
   */
  @Test
  @Timeout(60)
  void aClientWhoseSendsQueueBehindASlowServerIsNeverStalled() throws Exception {
    int credits = 16;
    int n = 2000;
    BlockingQueue<RegisteredBuffer> held = new LinkedBlockingQueue<>();
    BlockingQueue<Endpoint> accepted = new LinkedBlockingQueue<>();
    AtomicInteger answers = new AtomicInteger();
    TransportConf conf = baseConf().with(TransportConf.CREDITS_KEY, "" + credits);
    start(conf, conf, new EndpointHandler() {
      @Override
      public void onConnected(Endpoint endpoint) {
        accepted.add(endpoint);
      }

      @Override
      public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
        held.add(message); // the slow disk: let go of (and answered) by the test thread
      }
    });
    Endpoint c = connect((ep, m) -> {
      answers.incrementAndGet();
      m.release();
    });
    Endpoint s = accepted.poll(WAIT_MS, TimeUnit.MILLISECONDS);
    assertNotNull(s, "server saw no connection");
    List<CompletableFuture<Void>> sends = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      sends.add(c.send(message(client, i, 64, 4)));
    }
    // the client's queue is long (more than a window) while the server holds its window
    awaitTrue(() -> held.size() == credits && c.pendingSends() > credits,
        () -> "server holds " + held.size() + ", client queued " + c.pendingSends());
    try {
      for (int done = 0; done < n; done++) {
        RegisteredBuffer m = held.poll(WAIT_MS, TimeUnit.MILLISECONDS);
        assertNotNull(m, "stalled after " + done + " of " + n + " messages: server queued " + s.pendingSends()
            + ", client queued " + c.pendingSends());
        int seq = m.nio().getInt(m.nio().position());
        m.release();
        s.send(message(server, seq, 64, 3));
      }
      awaitAll(sends);
      awaitTrue(() -> answers.get() == n, () -> answers + " answers of " + n);
      awaitTrue(() -> s.pendingSends() == 0, () -> s.pendingSends() + " answers still queued");
    } finally {
      RegisteredBuffer m;
      while ((m = held.poll()) != null) {
        m.release();
      }
    }
  }

  private void floodWithoutTakingAnswers() throws Exception {
    int credits = 16;
    int n = 2000;
    AtomicInteger requests = new AtomicInteger();
    AtomicInteger maxOwed = new AtomicInteger();
    AtomicInteger answersTaken = new AtomicInteger();
    Queue<RegisteredBuffer> held = new ConcurrentLinkedQueue<>();
    AtomicBoolean taking = new AtomicBoolean();
    BlockingQueue<Endpoint> accepted = new LinkedBlockingQueue<>();
    // answers each request with one small message and releases the request at once
    EndpointHandler answering = new EndpointHandler() {
      @Override
      public void onConnected(Endpoint endpoint) {
        accepted.add(endpoint);
      }

      @Override
      public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
        int seq = message.nio().getInt(message.nio().position());
        message.release();
        requests.incrementAndGet();
        try {
          endpoint.send(message(endpoint.transport(), seq, 64, 3));
        } catch (Exception e) {
          errors.add(e);
        }
        maxOwed.accumulateAndGet(endpoint.pendingSends(), Math::max);
      }
    };
    // takes nothing it is sent (so grants no credits back) until told to
    EndpointHandler hoarding = new EndpointHandler() {
      @Override
      public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
        answersTaken.incrementAndGet();
        if (taking.get()) {
          message.release();
        } else {
          held.add(message);
        }
      }
    };
    TransportConf conf = baseConf().with(TransportConf.CREDITS_KEY, "" + credits);
    start(conf, conf, answering);
    Endpoint flooder = connect(hoarding);
    Endpoint answerer = accepted.poll(WAIT_MS, TimeUnit.MILLISECONDS);
    assertNotNull(answerer, "server saw no connection");
    long stallsBefore = AbstractEndpoint.backlogStalls();
    List<CompletableFuture<Void>> sends = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      sends.add(flooder.send(message(client, i, 64, 4)));
    }
    try {
      // stalled and quiet: the answerer grants nothing, has answered every request that left, and
      // the rest of them wait for its credits
      awaitTrue(() -> AbstractEndpoint.backlogStalls() > stallsBefore && flooder.pendingSends() > 0
          && requests.get() == n - flooder.pendingSends(),
          () -> "no stall: requests " + requests + ", flooder queued " + flooder.pendingSends()
              + ", answers queued " + answerer.pendingSends() + " (at most " + maxOwed + ")");
      int owed = answerer.pendingSends();
      assertTrue(owed <= 2 * credits, owed + " answers queued for a peer that takes none, more than two windows");
      assertTrue(maxOwed.get() <= 2 * credits, "at most " + maxOwed + " answers were queued at once");
      assertTrue(requests.get() <= 3 * credits, requests + " requests taken from a peer that takes no answers");
      assertFalse(flooder.isWritable(), "the flooder can still send");
      assertTrue(held.size() <= credits, "the flooder holds " + held.size() + " answers, past its window");

      // it takes its answers: everything flows again, every request is answered
      taking.set(true);
      RegisteredBuffer m;
      while ((m = held.poll()) != null) {
        m.release();
      }
      awaitAll(sends);
      awaitTrue(() -> answersTaken.get() == n, () -> answersTaken + " answers of " + n);
      awaitTrue(() -> answerer.pendingSends() == 0 && flooder.isWritable(), () -> "still queued");
    } finally {
      taking.set(true);
      RegisteredBuffer m;
      while ((m = held.poll()) != null) { // taken before the switch, put aside after the drain
        m.release();
      }
    }
  }

  @Test
  @Timeout(30)
  void messageLargerThanPeerMaxFails() throws Exception {
    int max = 64 << 10;
    AtomicInteger got = new AtomicInteger(-1);
    start(baseConf().with(TransportConf.MAX_MESSAGE_KEY, "" + max), baseConf(), new EndpointHandler() {
      @Override
      public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
        got.set(message.readableBytes());
        message.release();
      }
    });
    Endpoint c = connect(RELEASE);
    CompletableFuture<Void> big = c.send(client.allocator().allocate(max + 1));
    ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
        () -> big.get(WAIT_MS, TimeUnit.MILLISECONDS));
    assertInstanceOf(TransportException.class, e.getCause());
    c.send(client.allocator().allocate(max)).get(WAIT_MS, TimeUnit.MILLISECONDS);
    awaitTrue(() -> got.get() == max, () -> "the largest allowed message did not arrive");
    assertFalse(c.closeFuture().isDone(), "a refused send must not close the endpoint");
  }

  // --- the hello --------------------------------------------------------------

  /**
   * A server whose answer to a hello takes {@code ms}: a loaded DataNode (its admission blocks
   * the I/O thread here only to make it late; real handlers must not block).
   */
  private static EndpointHandler answersLate(long ms) {
    return new EndpointHandler() {
      @Override
      public String admit(InetSocketAddress remote) {
        try {
          Thread.sleep(ms);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return null;
      }

      @Override
      public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
        message.release();
      }
    };
  }

  /**
   * A peer that answers our hello after the connect timeout but within the hello timeout is
   * served: the connecting side waits for the reply as long as the accepting side waits for a
   * hello (dfs.client.socket-timeout on a cluster, as stock's client waits for a DataNode's
   * responses), not the connect timeout.
   */
  @Test
  @Timeout(60)
  void aHelloReplyLaterThanTheConnectTimeoutIsServed() throws Exception {
    start(baseConf(), baseConf().with(TransportConf.CONNECT_TIMEOUT_KEY, "300")
        .with(TransportConf.HELLO_TIMEOUT_KEY, "20000"), answersLate(1500));
    Endpoint c = connect(RELEASE);
    c.send(client.allocator().allocate(100)).get(WAIT_MS, TimeUnit.MILLISECONDS);
    assertFalse(c.closeFuture().isDone());
  }

  /** A peer that never answers our hello fails the connect after the hello timeout, naming it. */
  @Test
  @Timeout(60)
  void aPeerThatNeverRepliesFailsAfterTheHelloTimeout() throws Exception {
    int helloMs = 1500;
    start(baseConf(), baseConf().with(TransportConf.CONNECT_TIMEOUT_KEY, "300")
        .with(TransportConf.HELLO_TIMEOUT_KEY, String.valueOf(helloMs)), answersLate(helloMs + 2500L));
    long t0 = System.nanoTime();
    CompletableFuture<Endpoint> f = client.connect(listener.localAddress(), RELEASE);
    ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(WAIT_MS, TimeUnit.MILLISECONDS));
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    assertInstanceOf(TransportException.Timeout.class, e.getCause());
    assertTrue(e.getCause().getMessage().contains(TransportConf.HELLO_TIMEOUT_KEY), e.getCause().getMessage());
    assertTrue(ms >= helloMs, "gave up after " + ms + " ms, before the hello timeout");
    Thread.sleep(3000); // the server's late answer finds the connection closed: nothing stays open
  }

  /**
   * At most {@code hrdma.transport.max-pending-hellos} accepted connections wait for their hello:
   * one more closes the oldest (counted), the newer ones stay, and an honest client is served.
   */
  @Test
  @Timeout(60)
  void pastMaxPendingHellosTheOldestSilentConnectionIsClosed() throws Exception {
    start(baseConf().with(TransportConf.MAX_PENDING_HELLOS_KEY, "3"), baseConf(), RELEASE);
    List<SilentPeer> silent = new ArrayList<>();
    try {
      for (int i = 0; i < 4; i++) {
        silent.add(silentPeer(listener.localAddress()));
        Thread.sleep(300); // accepted in this order
      }
      assertTrue(silent.get(0).closedByServer(WAIT_MS), "the oldest silent connection was not closed");
      assertEquals(1, pendingHellosEvicted(server));
      for (SilentPeer p : silent.subList(1, 4)) {
        assertFalse(p.closedByServer(200), "a newer silent connection was closed");
      }
      // an honest client is served, and while it waits for its own hello it is one of the
      // four: the oldest silent connection left makes room
      Endpoint c = connect(RELEASE);
      c.send(client.allocator().allocate(100)).get(WAIT_MS, TimeUnit.MILLISECONDS);
      assertTrue(silent.get(1).closedByServer(WAIT_MS), "the next oldest silent connection was not closed");
      assertEquals(2, pendingHellosEvicted(server));
    } finally {
      for (SilentPeer p : silent) {
        p.close();
      }
    }
  }
}
