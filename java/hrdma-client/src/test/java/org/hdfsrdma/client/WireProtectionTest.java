package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.security.token.block.DataEncryptionKey;
import org.apache.hadoop.io.IOUtils;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.protocol.HadoopTransportConf;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.RdmaPorts;
import org.hdfsrdma.protocol.wire.ClientGate;
import org.hdfsrdma.protocol.wire.ProtectedEndpoint;
import org.hdfsrdma.protocol.wire.WireProtection;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.FrameTap;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.select.HrdmaConnector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * Data transfer protection on our path with dfs.encrypt.data.transfer: what crosses our
 * transports carries no plaintext (a tap on every transport looks for a marker that fills the
 * file), while the same run on an unprotected cluster shows it; wrong keys, tampered messages
 * and clients that skip the handshake are refused and others still served; stock clients work
 * beside ours.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class WireProtectionTest {
  private static final byte[] MARKER = "hrdma-plaintext-marker-7f3a".getBytes(StandardCharsets.US_ASCII);
  private static final int SIZE = 3 * PluginCluster.BLOCK + 12345;

  private MiniDFSCluster cluster;
  private RdmaDistributedFileSystem fs;

  @BeforeAll
  void start() throws Exception {
    cluster = PluginCluster.start(encrypted(PluginCluster.baseConf()), getClass(), 3);
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), clientConf(cluster));
  }

  @AfterAll
  void stop() throws IOException {
    FrameTap.set(null);
    PluginCluster.shutdown(fs, cluster);
  }

  @AfterEach
  void untap() {
    FrameTap.set(null);
  }

  static Configuration encrypted(Configuration conf) {
    conf.setBoolean("dfs.encrypt.data.transfer", true);
    conf.set("dfs.encrypt.data.transfer.cipher.suites", "AES/CTR/NoPadding");
    return conf;
  }

  /** Our client, reading by value over the transport (not by reference in shared memory, not short-circuit). */
  static Configuration clientConf(MiniDFSCluster c) {
    Configuration conf = PluginCluster.rdmaClientConf(c);
    conf.setBoolean(RdmaBlockClient.SHM_READS_KEY, false);
    conf.setBoolean(RdmaBlockClient.LOCAL_READS_KEY, false);
    return conf;
  }

  static byte[] markedData() {
    byte[] d = new byte[SIZE];
    for (int i = 0; i < d.length; i++) {
      d[i] = MARKER[i % MARKER.length];
    }
    return d;
  }

  /** Counts frames on every transport (both ways) that hold the marker, and all frames. */
  static final class MarkerTap implements FrameTap.Listener {
    final AtomicLong frames = new AtomicLong();
    final AtomicLong marked = new AtomicLong();

    @Override
    public void frame(boolean sent, ByteBuffer b) {
      frames.incrementAndGet();
      if (contains(b, MARKER)) {
        marked.incrementAndGet();
      }
    }

    static boolean contains(ByteBuffer b, byte[] m) {
      int end = b.limit() - m.length;
      outer:
      for (int i = b.position(); i <= end; i++) {
        for (int j = 0; j < m.length; j++) {
          if (b.get(i + j) != m[j]) {
            continue outer;
          }
        }
        return true;
      }
      return false;
    }
  }

  /** Writes (replication 3: the pipeline's DataNode-to-DataNode hops too) and reads back through {@code f}. */
  static void writeAndRead(RdmaDistributedFileSystem f, Path p) throws IOException {
    byte[] data = markedData();
    try (FSDataOutputStream out = f.create(p, true, 4096, (short) 3, PluginCluster.BLOCK)) {
      out.write(data);
    }
    byte[] back = new byte[data.length];
    try (FSDataInputStream in = f.open(p)) {
      IOUtils.readFully(in, back, 0, back.length);
    }
    assertArrayEquals(data, back);
  }

  @Test
  void encryptedClusterCarriesNoPlaintextOverOurTransports() throws Exception {
    MarkerTap tap = new MarkerTap();
    FrameTap.set(tap);
    long handshakes = handshakes();
    long inPlace = ProtectedEndpoint.sealedInPlace();
    long copied = ProtectedEndpoint.sealedByCopy();
    writeAndRead(fs, new Path("/wire/encrypted"));
    FrameTap.set(null);
    inPlace = ProtectedEndpoint.sealedInPlace() - inPlace;
    copied = ProtectedEndpoint.sealedByCopy() - copied;
    System.out.println("sealed in place " + inPlace + ", by copy " + copied);
    assertTrue(fs.rdmaBytesWritten() >= SIZE, "written over hrdma: " + fs.rdmaBytesWritten());
    assertTrue(fs.rdmaBytesRead() >= SIZE, "read over hrdma: " + fs.rdmaBytesRead());
    assertEquals(0, fs.protectionFallbacks());
    assertEquals(0, fs.stockWriteFallbacks());
    assertTrue(tap.frames.get() > 3 * 4, "frames seen: " + tap.frames.get());
    assertEquals(0, tap.marked.get(), "frames holding plaintext");
    assertTrue(handshakes() > handshakes, "handshakes on the DataNodes");
  }

  @Test
  void unprotectedClusterShowsTheMarkerToTheSameTap() throws Exception {
    MiniDFSCluster plain = PluginCluster.start(PluginCluster.baseConf(), PlainCluster.class, 3);
    try (RdmaDistributedFileSystem f = (RdmaDistributedFileSystem) FileSystem.get(plain.getURI(),
        clientConf(plain))) {
      MarkerTap tap = new MarkerTap();
      FrameTap.set(tap);
      writeAndRead(f, new Path("/wire/plain"));
      FrameTap.set(null);
      assertTrue(f.rdmaBytesWritten() >= SIZE && f.rdmaBytesRead() >= SIZE);
      assertTrue(tap.marked.get() > 0, "the tap saw no marker in " + tap.frames.get() + " frames");
    } finally {
      plain.shutdown();
    }
  }

  /** A name for the second cluster's directory. */
  private static final class PlainCluster {}

  private long handshakes() {
    return RdmaDataNodePlugin.running().stream().mapToLong(RdmaDataNodePlugin::wireHandshakes).sum();
  }

  private void awaitAdmitted(long expected) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (sum(RdmaDataNodePlugin::admittedConnections) != expected && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertEquals(expected, sum(RdmaDataNodePlugin::admittedConnections), "connections holding a place in the cap");
  }

  private long sum(java.util.function.ToLongFunction<RdmaDataNodePlugin> f) {
    return RdmaDataNodePlugin.running().stream().mapToLong(f).sum();
  }

  private LocatedBlock firstBlock(Path p) throws IOException {
    return fs.getClient().getLocatedBlocks(p.toUri().getPath(), 0).get(0);
  }

  private InetSocketAddress pluginAddress(LocatedBlock b) {
    return new InetSocketAddress(b.getLocations()[0].getIpAddr(),
        RdmaPorts.pluginPort(b.getLocations()[0], fs.getConf()));
  }

  @Test
  void clientThatSkipsTheHandshakeIsRefusedWithAClearError() throws Exception {
    long refused = sum(RdmaDataNodePlugin::wireUnprotectedRefused);
    Path p = new Path("/wire/skip");
    writeAndRead(fs, p);
    long admitted = sum(RdmaDataNodePlugin::admittedConnections);
    LocatedBlock b = firstBlock(p);
    java.util.concurrent.LinkedBlockingQueue<Message> got = new java.util.concurrent.LinkedBlockingQueue<>();
    java.util.concurrent.CompletableFuture<Void> closed = new java.util.concurrent.CompletableFuture<>();
    try (HrdmaConnector connector = new HrdmaConnector(HadoopTransportConf.of(fs.getConf()))) {
      Endpoint ep = connector.connect(pluginAddress(b), new EndpointHandler() {
        @Override
        public void onMessage(Endpoint e, RegisteredBuffer m) {
          try {
            got.add(MessageCodec.decode(m));
          } catch (java.net.ProtocolException x) {
            m.release();
          }
        }

        @Override
        public void onClosed(Endpoint e, Throwable cause) {
          closed.complete(null);
        }
      }).endpoint();
      // a connection in (or refused at) the handshake holds a place in the connection cap (the
      // connector's bootstrap connection, if another transport was chosen, goes away meanwhile)
      awaitAdmitted(admitted + 1);
      ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.INFO_REQUEST, 7, null));
      Message m = got.poll(10, TimeUnit.SECONDS);
      try {
        assertEquals(MessageKind.ERROR, m.kind());
        assertEquals(7, m.requestId());
        assertTrue(m.error().getMessage().startsWith(WireProtection.UNPROTECTED_REFUSAL), m.error().getMessage());
        assertTrue(m.error().getMessage().contains("INFO_REQUEST"), m.error().getMessage());
      } finally {
        m.release();
      }
      closed.get(10, TimeUnit.SECONDS);
    }
    assertEquals(refused + 1, sum(RdmaDataNodePlugin::wireUnprotectedRefused));
    awaitAdmitted(admitted); // ... and gives it back once refused (the DataNode sees the close asynchronously)
    writeAndRead(fs, new Path("/wire/skip-after")); // others still served
  }

  @Test
  void clientWithoutProtectionFallsBackAndIsCounted() throws Exception {
    Path p = new Path("/wire/unprotected-client");
    writeAndRead(fs, p);
    LocatedBlock b = firstBlock(p);
    Configuration c = clientConf(cluster);
    c.setBoolean("dfs.encrypt.data.transfer", false); // and no key source: this client would send in clear
    try (RdmaBlockClient client = new RdmaBlockClient(c)) {
      IOException e = assertThrows(IOException.class, () -> {
        try (RdmaBlockReader r = client.open(b, b.getLocations()[0], 0, 4096)) {
          r.readFully(new byte[4096], 0, 4096);
        }
      });
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (client.protectionFallbacks() == 0 && System.nanoTime() < end) {
        Thread.sleep(10);
      }
      assertEquals(1, client.protectionFallbacks(), e.toString());
    }
    // a stock client reads the same file on the same cluster
    try (DistributedFileSystem stock = (DistributedFileSystem) FileSystem.newInstance(cluster.getURI(),
        cluster.getConfiguration(0))) {
      byte[] back = new byte[SIZE];
      try (FSDataInputStream in = stock.open(p)) {
        IOUtils.readFully(in, back, 0, back.length);
      }
      assertArrayEquals(markedData(), back);
    }
  }

  @Test
  void wrongKeyIsRefusedAndCountedOthersStillServed() throws Exception {
    Path p = new Path("/wire/wrong-key");
    writeAndRead(fs, p);
    LocatedBlock b = firstBlock(p);
    DataEncryptionKey good = fs.getClient().newDataEncryptionKey();
    byte[] bad = good.encryptionKey.clone();
    bad[0] ^= 1;
    DataEncryptionKey wrong = new DataEncryptionKey(good.keyId, good.blockPoolId, good.nonce, bad, good.expiryDate,
        good.encryptionAlgorithm);
    long failed = sum(RdmaDataNodePlugin::wireHandshakesFailed);
    try (RdmaBlockClient client = new RdmaBlockClient(clientConf(cluster))) {
      client.encryptionKeys(() -> wrong);
      ClientGate.ProtectionException e = assertThrows(ClientGate.ProtectionException.class,
          () -> client.open(b, b.getLocations()[0], 0, 4096));
      assertTrue(e.getMessage().contains("refused") || e.getMessage().contains("ERROR"), e.getMessage());
      assertEquals(1, client.protectionFallbacks());
    }
    assertEquals(failed + 1, sum(RdmaDataNodePlugin::wireHandshakesFailed));
    byte[] back = new byte[SIZE];
    try (FSDataInputStream in = fs.open(p)) {
      IOUtils.readFully(in, back, 0, back.length);
    }
    assertArrayEquals(markedData(), back);
  }

  @Test
  void tamperedMessageClosesTheConnectionOthersStillServed() throws Exception {
    Path p = new Path("/wire/tampered");
    writeAndRead(fs, p);
    LocatedBlock b = firstBlock(p);
    long badTags = sum(RdmaDataNodePlugin::wireBadTags);
    java.util.concurrent.CompletableFuture<Void> closed = new java.util.concurrent.CompletableFuture<>();
    ClientGate gate = new ClientGate(new EndpointHandler() {
      @Override
      public void onMessage(Endpoint e, RegisteredBuffer m) {
        m.release();
      }

      @Override
      public void onClosed(Endpoint e, Throwable cause) {
        closed.complete(null);
      }
    });
    try (HrdmaConnector connector = new HrdmaConnector(HadoopTransportConf.of(fs.getConf()))) {
      InetSocketAddress a = pluginAddress(b);
      Endpoint raw = connector.connect(a, gate).endpoint();
      Endpoint ep = gate.handshake(raw, WireProtection.forClient(fs.getConf(), true, a.getPort()),
          new ClientGate.Credentials(fs.getClient().newDataEncryptionKey(), b.getBlockToken()), 10_000);
      assertTrue(ep instanceof ProtectedEndpoint, ep.toString());
      // a message as an attacker on the wire would send it: no valid tag
      RegisteredBuffer m = MessageCodec.encode(raw.transport().allocator(), MessageKind.INFO_REQUEST, 1, null,
          ByteBuffer.wrap(new byte[16]));
      raw.send(m);
      closed.get(10, TimeUnit.SECONDS);
    }
    assertEquals(badTags + 1, sum(RdmaDataNodePlugin::wireBadTags));
    byte[] back = new byte[SIZE];
    try (FSDataInputStream in = fs.open(p)) {
      IOUtils.readFully(in, back, 0, back.length);
    }
    assertArrayEquals(markedData(), back);
  }
}
