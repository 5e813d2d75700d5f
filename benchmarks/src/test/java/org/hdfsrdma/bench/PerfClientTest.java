package org.hdfsrdma.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.concurrent.TimeUnit;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.select.HrdmaServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.hdfsrdma.tools.PerfServer;

/**
 * The perf client against a real perf server over tcp, in this process: an
 * HrdmaServer as 'hrdma serve' runs it, reached the way 'perf --client' does.
 * Tiny sizes and counts; this checks the plumbing and the arithmetic, not speed.
 */
class PerfClientTest {
  private static final TransportConf TCP = TransportConf.defaults()
      .with(TransportConf.ORDER_KEY, "tcp");

  private HrdmaServer server;
  private Perf.Bench bench;

  @BeforeEach
  void start() throws Exception {
    server = HrdmaServer.start(TCP, new PerfServer(false), "127.0.0.1", 0);
    bench = Perf.Bench.remote("tcp", TransportConf.defaults(), server.serviceAddress());
  }

  @AfterEach
  void stop() throws Exception {
    try {
      bench.close();
      // Every buffer the server took for a message or an echo is back.
      for (Transport t : server.transports().values()) {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        while (t.allocator().buffersOutstanding() != 0) {
          if (System.nanoTime() > end) {
            fail(t.name() + " server leaked " + t.allocator().buffersOutstanding() + " buffers");
          }
          Thread.sleep(5);
        }
      }
    } finally {
      server.close();
    }
  }

  @Test
  @Timeout(5)
  void sendBandwidth() throws Exception {
    BwResult r = (BwResult) bench.runOnce("send_bw", 4096, 20, 400, 8, null);
    assertEquals("send_bw", r.test());
    assertEquals("tcp", r.transport());
    assertEquals(4096, r.bytes());
    assertEquals(400, r.iterations());
    assertTrue(r.avgMBps() > 0 && Double.isFinite(r.avgMBps()), r.toString());
    assertTrue(r.peakMBps() > 0 && Double.isFinite(r.peakMBps()), r.toString());
    // Message rate and bandwidth describe the same run.
    assertEquals(r.avgMBps(), r.msgRateMpps() * 4096, r.avgMBps() * 1e-9, r.toString());
    // Far above any loopback: a wrong clock or byte count, not a fast machine.
    assertTrue(r.avgMBps() < 1e6, r.toString());
  }

  @Test
  @Timeout(5)
  void sendLatency() throws Exception {
    LatResult r = (LatResult) bench.runOnce("send_lat", 8, 20, 300, 1, null);
    assertEquals("tcp", r.transport());
    LatencyStats s = r.stats();
    assertEquals(300, s.count());
    assertTrue(s.min() > 0, s.toString());
    assertTrue(s.min() <= s.typical() && s.typical() <= s.p99() && s.p99() <= s.p999()
        && s.p999() <= s.max(), s.toString());
    assertTrue(s.min() <= s.avg() && s.avg() <= s.max() && s.stdev() >= 0, s.toString());
    assertTrue(s.typical() < 1e6, "a one-way latency of a second over loopback: " + s);
  }

  @Test
  @Timeout(5)
  void aTransportTheServerDoesNotOfferIsReported() throws Exception {
    try (Perf.Bench other = Perf.Bench.remote("stream", TransportConf.defaults(),
        server.serviceAddress())) {
      java.io.IOException e = org.junit.jupiter.api.Assertions.assertThrows(
          java.io.IOException.class, () -> other.runOnce("send_bw", 4096, 0, 10, 1, null));
      assertTrue(e.getMessage().contains("stream: not offered by the server"), e.getMessage());
    }
  }
}
