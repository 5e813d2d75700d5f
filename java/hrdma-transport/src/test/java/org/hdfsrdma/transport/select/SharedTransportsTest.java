package org.hdfsrdma.transport.select;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.ProcessResources;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.hdfsrdma.transport.Transports;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Servers (and connectors) of one JVM on shared transports: one transport object per
 * transport and settings, leased by each; each server keeps its own ports and handler,
 * closing one closes its endpoints only and the others serve on; the last lease closes the
 * transport, nothing left (endpoints, buffers, UCX contexts and workers).
 */
@Timeout(120)
class SharedTransportsTest {
  private static final int WAIT_MS = 10_000;
  private final List<AutoCloseable> open = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (AutoCloseable c : open) {
      c.close();
    }
  }

  /** The transports of the order that can run here (tcp always; ucx and stream where UCX is). */
  private static String order() {
    List<String> out = new ArrayList<>();
    for (String n : List.of("ucx", "stream")) {
      if (Transports.provider(n).unavailabilityCause() == null) {
        out.add(n);
      }
    }
    out.add("tcp");
    return String.join(",", out);
  }

  private static TransportConf conf(String order) {
    return TransportConf.defaults().with(TransportConf.ORDER_KEY, order)
        .with(TransportConf.CONNECT_TIMEOUT_KEY, "3000");
  }

  /** Echoes with the server's name; counts what it saw. */
  private static final class Echo implements EndpointHandler {
    final String name;
    final AtomicInteger connected = new AtomicInteger();
    final AtomicInteger closed = new AtomicInteger();

    Echo(String name) {
      this.name = name;
    }

    @Override
    public void onConnected(Endpoint endpoint) {
      connected.incrementAndGet();
    }

    @Override
    public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
      String got = text(message);
      try {
        endpoint.send(text(endpoint.transport(), name + ":" + got));
      } catch (TransportException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    public void onClosed(Endpoint endpoint, Throwable cause) {
      closed.incrementAndGet();
    }
  }

  private static final class Client implements EndpointHandler {
    final BlockingQueue<String> got = new LinkedBlockingQueue<>();

    @Override
    public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
      got.add(text(message));
    }
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

  private static String roundTrip(Endpoint ep, Client h, String s) throws Exception {
    ep.send(text(ep.transport(), s)).get(WAIT_MS, TimeUnit.MILLISECONDS);
    return h.got.poll(WAIT_MS, TimeUnit.MILLISECONDS);
  }

  @Test
  void serversShareTransportsKeepTheirPortsAndTheLastCloseFreesThem() throws Exception {
    List<String> endpointsBefore = ProcessResources.snapshot().openEndpoints();
    assertEquals(0, SharedTransports.openCount(), "nothing shared before: " + SharedTransports.open());
    long created = SharedTransports.createdCount();
    String order = order();
    TransportConf conf = conf(order);
    Echo ea = new Echo("a");
    Echo eb = new Echo("b");
    HrdmaServer a = HrdmaServer.startShared(conf, ea, "127.0.0.1", 0);
    HrdmaServer b = HrdmaServer.startShared(conf, eb, "127.0.0.1", 0);
    open.add(b);
    open.add(a);
    int n = order.split(",").length;
    assertEquals(n, a.transports().size());
    for (String t : a.transports().keySet()) {
      assertSame(a.transports().get(t), b.transports().get(t), t);
    }
    assertEquals(n, SharedTransports.createdCount() - created, "one of each transport for both servers");
    SharedTransports.open().forEach((t, leases) -> assertEquals(2, leases, t));
    assertNotEquals(a.serviceAddress(), b.serviceAddress(), "each server its own port");
    assertNotEquals(a.offers(), b.offers(), "each server its own listeners");

    // another JVM-wide setting of a transport: its own transport, not shared with these
    try (HrdmaServer other = HrdmaServer.startShared(conf.with(TransportConf.CREDITS_KEY, "8"), new Echo("o"),
        "127.0.0.1", 0)) {
      assertNotSame(a.transports().get("tcp"), other.transports().get("tcp"));
      assertEquals(2 * n, SharedTransports.openCount());
    }
    assertEquals(n, SharedTransports.openCount());

    // a connector on the same transports reaches each server over the first transport of the order
    HrdmaConnector connector = new HrdmaConnector(conf, true);
    open.add(0, connector);
    Client ha = new Client();
    Client hb = new Client();
    HrdmaConnector.Connection ca = connector.connect(a.serviceAddress(), ha);
    HrdmaConnector.Connection cb = connector.connect(b.serviceAddress(), hb);
    assertEquals(order.split(",")[0], ca.transport());
    assertSame(a.transports().get(ca.transport()), ca.endpoint().transport(), "the connector leased the same one");
    assertEquals(2 * n, SharedTransports.createdCount() - created, "none since the other settings' server");
    assertEquals("a:1", roundTrip(ca.endpoint(), ha, "1"));
    assertEquals("b:1", roundTrip(cb.endpoint(), hb, "1"));
    // each server tracks the one endpoint it accepted (a bootstrap tcp connection ends once ucx is chosen)
    await(() -> a.trackedEndpoints() == 1 && b.trackedEndpoints() == 1,
        () -> "tracked " + a.trackedEndpoints() + ", " + b.trackedEndpoints());

    // closing a closes its endpoint, not b's; b serves on, new connections too
    int bClosed = eb.closed.get();
    a.close();
    ca.endpoint().closeFuture().get(WAIT_MS, TimeUnit.MILLISECONDS);
    assertEquals(0, a.trackedEndpoints());
    assertEquals(ea.connected.get(), ea.closed.get(), "every endpoint of a ended");
    assertEquals(bClosed, eb.closed.get(), "none of b's");
    assertEquals("b:2", roundTrip(cb.endpoint(), hb, "2"));
    assertThrows(TransportException.class, () -> connector.connect(a.serviceAddress(), new Client()));
    Client hb2 = new Client();
    HrdmaConnector.Connection cb2 = connector.connect(b.serviceAddress(), hb2);
    assertEquals("b:x", roundTrip(cb2.endpoint(), hb2, "x"));
    assertEquals(n, SharedTransports.openCount(), "b and the connector still hold them");

    // the connector's close closes its endpoints (b sees them end), b still holds the transports
    connector.close();
    await(() -> connector.trackedEndpoints() == 0, () -> "the connector tracks " + connector.trackedEndpoints());
    await(() -> b.trackedEndpoints() == 0 && eb.closed.get() == eb.connected.get(),
        () -> "b tracks " + b.trackedEndpoints() + ", closed " + eb.closed + " of " + eb.connected);
    assertEquals(n, SharedTransports.openCount());
    SharedTransports.open().forEach((t, leases) -> assertEquals(1, leases, t));

    b.close();
    assertEquals(0, SharedTransports.openCount(), "the last lease closed them");
    // endpoints other test classes of this JVM left open (fakes of unit tests) are theirs
    String left = ProcessResources.awaitNothingLeft(10_000,
        () -> true, () -> "") == null ? null : leftBeyond(endpointsBefore);
    assertEquals(null, left, "left: " + left);
  }

  /** What is left beyond the endpoints open before the test, or null once nothing else is. */
  private static String leftBeyond(List<String> endpointsBefore) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (true) {
      ProcessResources r = ProcessResources.snapshot();
      List<String> extra = new java.util.ArrayList<>(r.openEndpoints());
      endpointsBefore.forEach(extra::remove);
      if (extra.isEmpty() && r.buffersOutstanding() == 0 && r.nativeStats().isEmpty() && r.sharedMemoryMapped() == 0) {
        return null;
      }
      if (System.nanoTime() > end) {
        return "endpoints beyond those open before " + extra + ", " + r;
      }
      Thread.sleep(50);
    }
  }

  private static void await(java.util.function.BooleanSupplier done, java.util.function.Supplier<String> what)
      throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
    while (!done.getAsBoolean()) {
      assertTrue(System.nanoTime() < end, what.get());
      Thread.sleep(10);
    }
  }

  @Test
  void aLeaseGivenBackTwiceCountsOnce() throws Exception {
    SharedTransports.Lease l1 = SharedTransports.acquire("tcp", conf("tcp"));
    SharedTransports.Lease l2 = SharedTransports.acquire("tcp", conf("tcp"));
    assertSame(l1.transport(), l2.transport());
    l1.close();
    l1.close();
    assertEquals(1, SharedTransports.openCount(), "l2 still holds it");
    l2.close();
    assertEquals(0, SharedTransports.openCount());
    // a closed shared transport refuses work
    ExecutionException e = assertThrows(ExecutionException.class, () -> l2.transport()
        .connect(new java.net.InetSocketAddress("127.0.0.1", 1), new Client()).get(WAIT_MS, TimeUnit.MILLISECONDS));
    assertTrue(e.getCause() instanceof TransportException, e.toString());
  }
}
