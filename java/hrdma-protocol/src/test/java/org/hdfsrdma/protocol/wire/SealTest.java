package org.hdfsrdma.protocol.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import javax.crypto.AEADBadTagException;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.transport.BufferPool;
import org.hdfsrdma.transport.Capability;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.RemoteRegion;
import org.hdfsrdma.transport.SlabAllocator;
import org.hdfsrdma.transport.Transport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The seal layer alone: key agreement, in-place and copying seals, tampering, replay and reordering. */
class SealTest {
  private final BufferPool pool = new BufferPool(SlabAllocator.DIRECT, 1 << 20, 8 << 20);

  @AfterEach
  void noLeak() {
    assertEquals(0, pool.buffersOutstanding(), "registered buffers leaked");
    pool.close();
  }

  /** An endpoint that keeps what is sent to it. */
  private final class Wire implements Endpoint {
    final List<RegisteredBuffer> sent = new ArrayList<>();
    volatile boolean closed;

    @Override
    public Transport transport() {
      return new Transport() {
        @Override
        public String name() {
          return "test";
        }

        @Override
        public Set<Capability> capabilities() {
          return Set.of();
        }

        @Override
        public org.hdfsrdma.transport.BufferAllocator allocator() {
          return pool;
        }

        @Override
        public org.hdfsrdma.transport.Listener listen(InetSocketAddress local,
            org.hdfsrdma.transport.EndpointHandler handler) {
          throw new UnsupportedOperationException();
        }

        @Override
        public CompletableFuture<Endpoint> connect(InetSocketAddress remote,
            org.hdfsrdma.transport.EndpointHandler handler) {
          throw new UnsupportedOperationException();
        }

        @Override
        public void close() {}
      };
    }

    @Override
    public InetSocketAddress remoteAddress() {
      return new InetSocketAddress("127.0.0.1", 1);
    }

    @Override
    public Set<Capability> capabilities() {
      return Set.of(Capability.ONE_SIDED);
    }

    @Override
    public CompletableFuture<Void> send(RegisteredBuffer message) {
      sent.add(message);
      return CompletableFuture.completedFuture(null);
    }

    @Override
    public boolean isWritable() {
      return true;
    }

    @Override
    public RemoteRegion expose(RegisteredBuffer buffer) {
      throw new UnsupportedOperationException();
    }

    @Override
    public CompletableFuture<Void> write(RegisteredBuffer source, RemoteRegion target, long offset) {
      throw new UnsupportedOperationException();
    }

    @Override
    public CompletableFuture<Void> read(RegisteredBuffer target, RemoteRegion source, long offset) {
      throw new UnsupportedOperationException();
    }

    @Override
    public CompletableFuture<Void> flush() {
      return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletableFuture<Void> closeFuture() {
      return new CompletableFuture<>();
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  /** {client, server} endpoints over two fake wires, keyed by a real agreement. */
  private ProtectedEndpoint[] pair(String cipher, int bits, Wire toServer, Wire toClient) throws Exception {
    Handshake.Half server = new Handshake.Half(cipher, bits);
    Handshake.Half client = new Handshake.Half(cipher, bits);
    Sealer[] s = server.sealers(HrdmaProtos.WireKeys.parseFrom(client.offer()), true);
    Sealer[] c = client.sealers(HrdmaProtos.WireKeys.parseFrom(server.offer()), false);
    return new ProtectedEndpoint[] {new ProtectedEndpoint(toServer, c[0], c[1], cipher),
        new ProtectedEndpoint(toClient, s[0], s[1], cipher)};
  }

  private RegisteredBuffer message(byte[] content) throws Exception {
    RegisteredBuffer m = pool.allocate(content.length);
    m.nio().clear();
    m.nio().put(content).flip();
    return m;
  }

  private static byte[] bytes(RegisteredBuffer m) {
    byte[] b = new byte[m.nio().remaining()];
    m.nio().duplicate().get(b);
    return b;
  }

  @ParameterizedTest
  @CsvSource({"AES/GCM/NoPadding,128", "AES/GCM/NoPadding,256", "ChaCha20-Poly1305,256"})
  void sealedInPlaceAndOpenedInPlaceBothWays(String cipher, int bits) throws Exception {
    Wire toServer = new Wire();
    Wire toClient = new Wire();
    ProtectedEndpoint[] p = pair(cipher, bits, toServer, toClient);
    byte[] data = new byte[100_000];
    new Random(1).nextBytes(data);
    for (int i = 0; i < 3; i++) {
      RegisteredBuffer m = message(data);
      p[0].send(m);
      RegisteredBuffer onWire = toServer.sent.get(i);
      assertSame(m, onWire, "a message of its own with room for the tag is sealed in place");
      assertEquals(data.length + Sealer.TAG_BYTES, onWire.nio().remaining());
      assertFalse(Arrays.equals(data, Arrays.copyOf(bytes(onWire), data.length)), "ciphertext differs");
      p[1].open(onWire);
      assertArrayEquals(data, bytes(onWire));
      onWire.release();
      RegisteredBuffer back = message(data);
      p[1].send(back);
      p[0].open(toClient.sent.get(i));
      assertArrayEquals(data, bytes(toClient.sent.get(i)));
      toClient.sent.get(i).release();
    }
  }

  @Test
  void aMessageSomeoneElseHoldsIsSealedIntoANewBufferAndLeftIntact() throws Exception {
    Wire toServer = new Wire();
    ProtectedEndpoint[] p = pair("AES/GCM/NoPadding", 256, toServer, new Wire());
    byte[] data = "a packet also being written to disk".getBytes();
    RegisteredBuffer m = message(data);
    m.retain(); // the disk write's reference
    p[0].send(m);
    RegisteredBuffer onWire = toServer.sent.get(0);
    assertNotSame(m, onWire);
    assertArrayEquals(data, bytes(m), "the held message is untouched");
    assertEquals(1, m.refCnt(), "the sender's reference was released");
    m.release();
    p[1].open(onWire);
    assertArrayEquals(data, bytes(onWire));
    onWire.release();
  }

  @Test
  void aForwardedPacketIsSealedAcrossInOnePassEvenWhenNobodyElseHoldsIt() throws Exception {
    Wire toServer = new Wire();
    ProtectedEndpoint[] p = pair("AES/GCM/NoPadding", 256, toServer, new Wire());
    byte[] data = new byte[70_001];
    new Random(5).nextBytes(data);
    RegisteredBuffer m = message(data); // another transport's buffer: must not go on this one's wire
    long copied = ProtectedEndpoint.sealedByCopy();
    m.retain(); // kept to look at: sendCopy takes over the other reference
    p[0].sendCopy(m);
    RegisteredBuffer onWire = toServer.sent.get(0);
    assertNotSame(m, onWire);
    assertTrue(ProtectedEndpoint.sealedByCopy() > copied, "counted as sealed across");
    assertArrayEquals(data, bytes(m), "the forwarded packet is untouched");
    assertEquals(1, m.refCnt(), "the sender's reference was released");
    m.release();
    p[1].open(onWire);
    assertArrayEquals(data, bytes(onWire));
    onWire.release();
  }

  @Test
  void alteredReplayedOrReorderedMessagesFailTheirTag() throws Exception {
    Wire toServer = new Wire();
    ProtectedEndpoint[] p = pair("AES/GCM/NoPadding", 256, toServer, new Wire());
    p[0].send(message("first".getBytes()));
    p[0].send(message("second".getBytes()));
    RegisteredBuffer first = toServer.sent.get(0);
    RegisteredBuffer second = toServer.sent.get(1);
    byte[] firstSealed = bytes(first);
    // reordered: the second arrives where the first is expected
    assertThrows(AEADBadTagException.class, () -> p[1].open(second));
    second.release();

    ProtectedEndpoint[] q = pair("AES/GCM/NoPadding", 256, new Wire(), new Wire());
    assertThrows(AEADBadTagException.class, () -> q[1].open(first), "another connection's key");
    first.release();

    Wire w = new Wire();
    ProtectedEndpoint[] r = pair("AES/GCM/NoPadding", 256, w, new Wire());
    r[0].send(message("payload bytes".getBytes()));
    RegisteredBuffer sealed = w.sent.get(0);
    byte[] copy = bytes(sealed);
    sealed.nio().put(sealed.nio().position() + 3, (byte) (sealed.nio().get(sealed.nio().position() + 3) ^ 1));
    assertThrows(AEADBadTagException.class, () -> r[1].open(sealed), "altered");
    sealed.release();
    assertEquals(firstSealed.length, "first".length() + Sealer.TAG_BYTES);

    Wire v = new Wire();
    ProtectedEndpoint[] s = pair("AES/GCM/NoPadding", 256, v, new Wire());
    s[0].send(message("once".getBytes()));
    RegisteredBuffer once = v.sent.get(0);
    byte[] onceBytes = bytes(once);
    s[1].open(once);
    once.release();
    RegisteredBuffer replay = message(onceBytes);
    assertThrows(AEADBadTagException.class, () -> s[1].open(replay), "replayed");
    replay.release();
    assertEquals(copy.length, "payload bytes".length() + Sealer.TAG_BYTES);
  }

  @Test
  void keysForAnotherCipherAreRefused() throws Exception {
    Handshake.Half server = new Handshake.Half("AES/GCM/NoPadding", 256);
    Handshake.Half client = new Handshake.Half("AES/GCM/NoPadding", 128);
    assertThrows(java.security.GeneralSecurityException.class,
        () -> server.sealers(HrdmaProtos.WireKeys.parseFrom(client.offer()), true));
  }

  /** What a DataNode offers the client: its cipher, key size, a real key and nonce. */
  private static HrdmaProtos.WireKeys offer(String cipher, int bits) throws Exception {
    return HrdmaProtos.WireKeys.parseFrom(new Handshake.Half("AES/GCM/NoPadding", 256).offer()).toBuilder()
        .setCipher(cipher).setKeyBits(bits).build();
  }

  @Test
  void theClientSealsOnlyWithACipherAndKeySizeItWouldConfigure() throws Exception {
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
    Object[][] refused = {{"AES/GCM/NoPadding", 192}, {"AES/GCM/NoPadding", 64}, {"AES/GCM/NoPadding", 0},
        {"AES/GCM/NoPadding", Integer.MAX_VALUE - 7}, {"AES/GCM/NoPadding", -8}, {"ChaCha20-Poly1305", 128},
        {"AES/GCM/PKCS5Padding", 256}, {"ChaCha20", 256}, {"AES/CTR/NoPadding", 256}};
    for (Object[] r : refused) {
      HrdmaProtos.WireKeys o = offer((String) r[0], (Integer) r[1]);
      long before = threads.getCurrentThreadAllocatedBytes();
      Throwable t = assertThrows(Throwable.class, () -> Handshake.Half.forPeer(o).sealers(o, false),
          r[0] + "/" + r[1]);
      long allocated = threads.getCurrentThreadAllocatedBytes() - before;
      assertTrue(t instanceof java.security.GeneralSecurityException, r[0] + "/" + r[1] + ": " + t);
      assertTrue(t.getMessage().contains("this side seals only with"), t.getMessage());
      assertTrue(allocated < (8 << 20), r[0] + "/" + r[1] + ": allocated " + allocated + " bytes");
    }
    for (Object[] ok : new Object[][] {{"AES/GCM/NoPadding", 128}, {"AES/GCM/NoPadding", 256},
        {"ChaCha20-Poly1305", 256}}) {
      Handshake.Half server = new Handshake.Half((String) ok[0], (Integer) ok[1]);
      HrdmaProtos.WireKeys o = HrdmaProtos.WireKeys.parseFrom(server.offer());
      Handshake.Half client = Handshake.Half.forPeer(o);
      Sealer[] c = client.sealers(o, false);
      Sealer[] s = server.sealers(HrdmaProtos.WireKeys.parseFrom(client.offer()), true);
      java.nio.ByteBuffer m = java.nio.ByteBuffer.allocate(64 + Sealer.TAG_BYTES);
      m.put("hello".getBytes(java.nio.charset.StandardCharsets.UTF_8)).flip();
      java.nio.ByteBuffer sealed = java.nio.ByteBuffer.allocate(64 + Sealer.TAG_BYTES);
      c[0].seal(m, sealed);
      sealed.flip();
      assertEquals(5, s[1].open(sealed), ok[0] + "/" + ok[1]);
    }
  }

  @Test
  void aDataNodeFloodingTheHandshakeIsCutOffNotQueued() throws Exception {
    // before the client's handshake takes them, a DataNode's SASL_HANDSHAKE messages wait in the gate;
    // it sends two (challenge, rspauth): more are a hostile peer's, and were kept without bound
    ClientGate gate = new ClientGate(new org.hdfsrdma.transport.EndpointHandler() {
      @Override
      public void onMessage(Endpoint ep, RegisteredBuffer message) {
        message.release();
      }
    });
    Wire wire = new Wire();
    byte[] junk = new byte[1024];
    for (int i = 0; i < 10_000; i++) {
      gate.onMessage(wire, Handshake.message(pool, org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos
          .DataTransferEncryptorMessageProto.DataTransferEncryptorStatus.SUCCESS, junk, null, junk));
    }
    assertTrue(gate.handshakeQueued() <= ClientGate.MAX_HANDSHAKE_QUEUED, gate.handshakeQueued() + " queued");
    assertTrue(wire.closed, "the connection is closed");
  }

  @Test
  void aPeerRefusedBeforeTheHandshakeGetsOneAnswerNotOnePerMessage() throws Exception {
    // an unauthenticated peer that sends ops and grants no credits back: each refusal waited in the
    // connection's send queue (registered memory) until the handshake timeout closed it
    org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration(false);
    conf.setBoolean("dfs.encrypt.data.transfer", true);
    conf.setInt(WireProtection.WARM_UP_MB_KEY, 0);
    java.util.concurrent.atomic.AtomicInteger delivered = new java.util.concurrent.atomic.AtomicInteger();
    org.hdfsrdma.transport.EndpointHandler gate = ServerGate.wrap(new org.hdfsrdma.transport.EndpointHandler() {
      @Override
      public void onMessage(Endpoint ep, RegisteredBuffer message) {
        delivered.incrementAndGet();
        message.release();
      }
    }, WireProtection.forDataNode(conf, 20000), null, "test");
    Wire wire = new Wire();
    gate.onConnected(wire);
    for (int i = 0; i < 1000; i++) {
      gate.onMessage(wire, org.hdfsrdma.protocol.MessageCodec.encode(pool, org.hdfsrdma.protocol.MessageKind.INFO_REQUEST,
          i, null, null));
    }
    assertEquals(1, wire.sent.size(), "answers queued for a peer refused before its handshake");
    assertEquals(0, delivered.get(), "nothing reached the DataNode's handler");
    assertEquals(1, ((ServerGate) gate).unprotectedRefused());
    for (RegisteredBuffer b : wire.sent) {
      b.release();
    }
    gate.onClosed(wire, null);
  }

  @Test
  void oneSidedAccessIsRefused() throws Exception {
    ProtectedEndpoint[] p = pair("AES/GCM/NoPadding", 256, new Wire(), new Wire());
    assertFalse(p[0].capabilities().contains(Capability.ONE_SIDED));
    RegisteredBuffer b = message(new byte[8]);
    assertThrows(UnsupportedOperationException.class, () -> p[0].expose(b));
    b.release();
  }
}
