package org.hdfsrdma.transport.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.Listener;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.junit.jupiter.api.Test;

/**
 * What a peer's remote access covers on the ucx transport (docs/transport.md, "Remote access
 * scope"): with hrdma.ucx.remote-access=operation no active message passes a slab's
 * registration to UCX (whose key would cover every buffer of that slab, other connections'
 * too, for the transport's life), and UCX's registration caches are off, so UCX registers
 * each rendezvous buffer for that operation alone. Over UCX's tcp the keys themselves are not
 * used; what is checked here is which registration each operation passes.
 */
class UcxRemoteAccessTest {
  private static final int SIZE = 2 << 20; // rendezvous on every transport

  private static TransportConf conf(String access) {
    return TransportConf.defaults().with(TransportConf.UCX_CONFIG_KEY, "TLS=tcp")
        .with(TransportConf.UCX_REMOTE_ACCESS_KEY, access);
  }

  /** Sends {@code n} large messages each way; returns {client, server} slab-keyed counts. */
  private static long[] exchange(String access, int n) throws Exception {
    LinkedBlockingQueue<Integer> got = new LinkedBlockingQueue<>();
    try (UcxTransport server = new UcxTransport(conf(access));
        UcxTransport client = new UcxTransport(conf(access))) {
      List<Endpoint> serverSide = new ArrayList<>();
      Listener l = server.listen(new InetSocketAddress("127.0.0.1", 0), (ep, m) -> {
        got.add(check(m));
        m.release();
        if (got.size() <= n) {
          try {
            ep.send(fill(server.allocator().allocate(SIZE), 7));
          } catch (TransportException e) {
            got.add(-1);
          }
        }
      });
      LinkedBlockingQueue<Integer> back = new LinkedBlockingQueue<>();
      Endpoint ep = client.connect(l.localAddress(), (e, m) -> {
        back.add(check(m));
        m.release();
      }).get(10, TimeUnit.SECONDS);
      List<CompletableFuture<Void>> sends = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        sends.add(ep.send(fill(client.allocator().allocate(SIZE), 7)));
      }
      for (CompletableFuture<Void> f : sends) {
        f.get(30, TimeUnit.SECONDS);
      }
      for (int i = 0; i < n; i++) {
        assertEquals(SIZE, got.poll(30, TimeUnit.SECONDS), "message " + i + " to the server");
        assertEquals(SIZE, back.poll(30, TimeUnit.SECONDS), "message " + i + " to the client");
      }
      ep.close();
      ep.closeFuture().handle((v, t) -> null).get(10, TimeUnit.SECONDS);
      serverSide.forEach(Endpoint::close);
      long[] counts = {client.slabKeyedOperations(), server.slabKeyedOperations()};
      l.close();
      return counts;
    }
  }

  private static RegisteredBuffer fill(RegisteredBuffer b, int salt) {
    for (int i = 0; i < SIZE; i += 4096) {
      b.nio().put(i, (byte) (i / 4096 + salt));
    }
    b.nio().position(0).limit(SIZE);
    return b;
  }

  /** The message's size if its bytes are as sent, else -1. */
  private static int check(RegisteredBuffer m) {
    int n = m.readableBytes();
    for (int i = 0; i < n; i += 4096) {
      if (m.nio().get(m.nio().position() + i) != (byte) (i / 4096 + 7)) {
        return -1;
      }
    }
    return n;
  }

  @Test
  void operationScopedMessagesPassNoSlabRegistration() throws Exception {
    long[] counts = exchange("operation", 6);
    assertEquals(0, counts[0], "client sends or receives passed a slab's registration");
    assertEquals(0, counts[1], "server sends or receives passed a slab's registration");
  }

  /** The counter sees what the scoped mode leaves out: each send and each receive pass the slab's. */
  @Test
  void poolScopedMessagesPassTheSlabRegistration() throws Exception {
    long[] counts = exchange("pool", 6);
    assertTrue(counts[0] >= 12, "client: " + counts[0]); // 6 sends, 6 receives
    assertTrue(counts[1] >= 12, "server: " + counts[1]);
  }

  @Test
  void theCachesAreTurnedOffUnlessTheUserSaidOtherwise() throws Exception {
    assertEquals("TLS=tcp;RCACHE_ENABLE=n;IB_REG_METHODS=direct", AbstractUcxTransport.scopedConfig("TLS=tcp", true));
    assertEquals("RCACHE_ENABLE=n;IB_REG_METHODS=direct", AbstractUcxTransport.scopedConfig("", true));
    assertEquals("RCACHE_ENABLE=y;TLS=tcp;IB_REG_METHODS=direct",
        AbstractUcxTransport.scopedConfig("RCACHE_ENABLE=y;TLS=tcp", true));
    // no RDMA device: no IB memory domain to take the IB setting
    assertEquals("TLS=tcp;RCACHE_ENABLE=n", AbstractUcxTransport.scopedConfig("TLS=tcp", false));
    assertThrows(TransportException.class, () -> new UcxTransport(conf("everything")));
  }
}
