package org.hdfsrdma.transport.ucx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.hdfsrdma.transport.BufferPool;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.Listener;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.SlabAllocator;
import org.hdfsrdma.transport.TransportConf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Placement hints on the ucx transport: a DATA message sent with
 * {@link RegisteredBuffer#placeAligned} arrives with the hinted byte at a page-aligned address
 * and its bytes intact, eager or rendezvous; unhinted messages arrive as before (at index 0);
 * a peer's hint never takes a larger buffer than the message alone.
 */
@Timeout(90)
class UcxPlacementTest {
  private static final int PAGE = 4096;

  /** What the receiver saw of one message. */
  private record Arrived(int position, long address, int capacity, byte[] bytes) {}

  private static TransportConf conf(String ucx) {
    return TransportConf.defaults().with(TransportConf.UCX_CONFIG_KEY, ucx)
        .with(TransportConf.CONNECT_TIMEOUT_KEY, "3000");
  }

  private static AbstractUcxTransport transport(String name, TransportConf c) throws Exception {
    return name.equals("ucx") ? new UcxTransport(c) : new StreamTransport(c);
  }

  @ParameterizedTest
  @ValueSource(strings = {"ucx|TLS=tcp", "ucx|TLS=sm,tcp;MM_ERROR_HANDLING=y", "stream|TLS=tcp"})
  void hintedBytesLandPageAlignedAndIntact(String param) throws Exception {
    String name = param.substring(0, param.indexOf('|'));
    String ucx = param.substring(param.indexOf('|') + 1);
    TransportConf conf = conf(ucx);
    BlockingQueue<Arrived> got = new LinkedBlockingQueue<>();
    try (AbstractUcxTransport server = transport(name, conf);
        AbstractUcxTransport client = transport(name, conf)) {
      Listener l = server.listen(new InetSocketAddress("127.0.0.1", 0), (ep, m) -> {
        byte[] b = new byte[m.readableBytes()];
        m.nio().duplicate().get(b);
        got.add(new Arrived(m.nio().position(), m.address(), m.capacity(), b));
        m.release();
      });
      Endpoint ep = client.connect(l.localAddress(), (e, m) -> m.release()).get(10, TimeUnit.SECONDS);
      Random r = new Random(7);
      // {length, hint, placed}: eager and rendezvous sizes, in a size class and in a buffer of its
      // own; a hint at the end; on a page boundary (no pad); -1 none; past the end (the sender
      // sends none); one whose pad would spill into the next size class (not placed)
      int[][] cases = {{9000, 100, 1}, {200_000, 1077, 1}, {(5 << 20) + 50, 3 * PAGE + 7, 1}, {10_000, 10_000, 1},
          {5000, PAGE, 1}, {5000, -1, 0}, {300_000, -1, 0}, {5000, 6000, 0}, {3000, 100, 0}};
      for (int[] c : cases) {
        int len = c[0];
        int hint = c[1];
        RegisteredBuffer m = client.allocator().allocate(len);
        byte[] want = new byte[len];
        r.nextBytes(want);
        m.nio().put(want).flip();
        m.placeAligned(hint);
        ep.send(m).get(10, TimeUnit.SECONDS);
        Arrived a = got.poll(10, TimeUnit.SECONDS);
        String what = len + " bytes, hint " + hint + " over " + param + ": " + a;
        assertArrayEquals(want, a.bytes(), what);
        assertTrue(a.position() + len <= a.capacity(), what);
        if (c[2] == 1) {
          assertEquals(0, (a.address() + a.position() + hint) % PAGE, "hinted byte not aligned: " + what);
          assertEquals(-hint & (PAGE - 1), a.position(), what);
        } else {
          assertEquals(0, a.position(), "an unplaced message starts its buffer: " + what);
        }
      }
      ep.close();
      ep.closeFuture().handle((v, t) -> null).get(10, TimeUnit.SECONDS);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (server.allocator().buffersOutstanding() > 0 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertEquals(0, server.allocator().buffersOutstanding(), "server buffers leaked");
      assertEquals(0, client.allocator().buffersOutstanding(), "client buffers leaked");
    }
  }

  /**
   * Stream frames with a hint from a hostile peer: an offset of a page or more, or a hint on
   * another kind, is garbage that closes the connection; an offset past the message is ignored.
   */
  @Test
  void hostileStreamHintsAreRefusedOrIgnored() throws Exception {
    TransportConf conf = conf("TLS=tcp");
    BlockingQueue<Arrived> got = new LinkedBlockingQueue<>();
    BlockingQueue<Throwable> closed = new LinkedBlockingQueue<>();
    try (AbstractUcxTransport server = transport("stream", conf)) {
      Listener l = server.listen(new InetSocketAddress("127.0.0.1", 0), new org.hdfsrdma.transport.EndpointHandler() {
        @Override
        public void onMessage(Endpoint ep, RegisteredBuffer m) {
          byte[] b = new byte[m.readableBytes()];
          m.nio().duplicate().get(b);
          got.add(new Arrived(m.nio().position(), m.address(), m.capacity(), b));
          m.release();
        }

        @Override
        public void onClosed(Endpoint ep, Throwable cause) {
          closed.add(cause == null ? new Exception("clean close") : cause);
        }
      });
      // {kind, flag, offset, length, accepted}
      int[][] frames = {{UcxConnection.DATA, 1, 3000, 50, 1}, {UcxConnection.DATA, 1, PAGE, 50, 0},
          {UcxConnection.DATA, 1, 0xffff, 50, 0}, {UcxConnection.DATA, 2, 10, 50, 0},
          {UcxConnection.CREDIT, 1, 10, 4, 0}};
      for (int[] f : frames) {
        try (AbstractUcxTransport bad = transport("stream", conf)) {
          StreamEndpoint ep = (StreamEndpoint) bad.connect(l.localAddress(), (e, m) -> m.release())
              .get(10, TimeUnit.SECONDS);
          java.nio.ByteBuffer frame = java.nio.ByteBuffer.allocate(StreamEndpoint.HEADER + f[3]);
          frame.putInt(f[3]).put((byte) f[0]).put((byte) f[1]).putShort((short) f[2]);
          bad.loop.execute(() -> {
            try {
              ep.sendRawBytes(frame.array());
            } catch (org.hdfsrdma.transport.TransportException e) {
              throw new IllegalStateException(e);
            }
          });
          String what = java.util.Arrays.toString(f);
          if (f[4] == 1) {
            Arrived a = got.poll(10, TimeUnit.SECONDS);
            assertEquals(f[3], a.bytes().length, what);
            assertEquals(0, a.position(), "a hint past the message places nothing: " + what);
            assertTrue(a.capacity() <= PAGE, what);
            ep.close();
          } else {
            Throwable t = closed.poll(10, TimeUnit.SECONDS);
            assertTrue(t instanceof org.hdfsrdma.transport.TransportException.Protocol
                && t.getMessage().contains("garbage"), what + ": " + t);
          }
          ep.closeFuture().handle((v, t) -> null).get(10, TimeUnit.SECONDS);
        }
        closed.poll(2, TimeUnit.SECONDS); // the accepted side of a closed good connection
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (server.allocator().buffersOutstanding() > 0 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertEquals(0, server.allocator().buffersOutstanding(), "server buffers leaked");
    }
  }

  /** What a hostile peer could put in the hint: never a pad that takes a larger buffer. */
  @Test
  void hostileHintsGetNoPad() throws Exception {
    try (BufferPool pool = new BufferPool(SlabAllocator.DIRECT, 1 << 20, 64L << 20)) {
      assertEquals(0, UcxEndpoint.padFor(pool, -1, 5000), "none");
      assertEquals(0, UcxEndpoint.padFor(pool, -7, 5000), "negative");
      assertEquals(0, UcxEndpoint.padFor(pool, PAGE, 5000), "a page");
      assertEquals(0, UcxEndpoint.padFor(pool, Integer.MAX_VALUE, 5000), "huge");
      assertEquals(0, UcxEndpoint.padFor(pool, 3000, 2000), "past the message");
      assertEquals(0, UcxEndpoint.padFor(pool, 100, Integer.MAX_VALUE - 10), "a length that would overflow");
      // a pad that would spill into the next size class: none
      assertEquals(0, UcxEndpoint.padFor(pool, 100, 65_000));
      assertEquals(0, UcxEndpoint.padFor(pool, 100, 3000));
      // the same hint where the class has room: placed
      assertEquals(PAGE - 100, UcxEndpoint.padFor(pool, 100, 40_000));
      for (int off = 0; off < PAGE; off += 97) {
        for (int len : new int[] {off, 5000, 65_536, 1 << 20, 3 << 20}) {
          int pad = UcxEndpoint.padFor(pool, off, len);
          assertTrue(pad >= 0 && pad < PAGE, off + "/" + len + ": " + pad);
          long plain = pool.footprint(Math.max(1, len));
          assertTrue(pool.footprint(len + pad) * 16 <= plain * 17, off + "/" + len + ": " + pad);
        }
      }
    }
  }
}
