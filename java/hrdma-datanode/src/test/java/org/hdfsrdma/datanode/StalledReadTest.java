package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.util.Queue;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.RdmaPorts;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.FrameTap;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.select.HrdmaConnector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * dfs.datanode.socket.write.timeout on the plugin's connections: a peer that asks for a block
 * READ and takes none of its packets (holds them: grants no credits back) keeps its read in
 * progress, so the idle timeout never applies; the DataNode closes it once none of its sends has
 * completed for the write timeout, counts it, and gets its read task, its connection slot and
 * its packets' buffers back. A slow but honest reader, taking a packet about every second (less
 * than the timeout apart), reads the whole block and keeps its connection. On every transport.
 *
 * <p>And a peer whose UCX worker stops progressing altogether (its I/O thread blocks in its
 * handler), not one that only withholds credits: it granted the DataNode a whole window (64
 * messages) and asked for 30 INFO answers and a 24-packet block, so that every send fits in its
 * credits and only UCX decides whether a send completes. Over ucx and stream the sends UCX cannot
 * hand over stay not completed, the connection is closed at the write timeout, what the DataNode
 * held for it stays within the window and is given back.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class StalledReadTest {
  private static final long WAIT_MS = 30_000;
  private static final long WRITE_TIMEOUT_MS = 3_000;
  private static final long IDLE_MS = 600_000; // never the reason here
  private static final int BLOCK_BYTES = 6 << 20; // about 6 packets of 1 MiB
  /** What the reading peer advertises: READ_RESPONSE and one packet, then the rest wait for it. */
  private static final int PEER_CREDITS = 2;
  /** The block a peer whose worker stops asks for: more packets than socket buffers hold. */
  private static final int STOPPED_BLOCK_BYTES = 24 << 20;
  private static final int INFOS = 30;

  private MiniDFSCluster cluster;
  private Configuration conf;
  private LocatedBlock block;
  private LocatedBlock bigBlock;

  @BeforeAll
  void startCluster() throws IOException {
    conf = new Configuration();
    conf.set(DFSConfigKeys.DFS_DATANODE_PLUGINS_KEY, RdmaDataNodePlugin.class.getName());
    conf.set(TransportConf.CONNECT_TIMEOUT_KEY, "3000");
    conf.setLong(HrdmaDataNodeKeys.IDLE_TIMEOUT_MS_KEY, IDLE_MS);
    conf.setLong(DataNodeLimits.WRITE_TIMEOUT_KEY, WRITE_TIMEOUT_MS);
    File base = new File("target/test-dir/" + getClass().getSimpleName());
    cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(1).build();
    cluster.waitActive();
    DistributedFileSystem fs = cluster.getFileSystem();
    block = writeBlock(fs, "/stalled-read", BLOCK_BYTES, 7);
    bigBlock = writeBlock(fs, "/stopped-worker", STOPPED_BLOCK_BYTES, 11);
  }

  /** Writes one block of random bytes at replication 1 and returns it. */
  private static LocatedBlock writeBlock(DistributedFileSystem fs, String path, int bytes, long seed)
      throws IOException {
    byte[] data = new byte[bytes];
    new Random(seed).nextBytes(data);
    try (FSDataOutputStream out = fs.create(new Path(path), (short) 1)) {
      out.write(data);
    }
    LocatedBlock b = fs.getClient().getLocatedBlocks(path, 0).get(0);
    assertEquals(bytes, b.getBlockSize());
    return b;
  }

  @AfterAll
  void stopCluster() {
    if (cluster != null) {
      cluster.shutdown();
    }
  }

  @ParameterizedTest(name = "a reader that takes no packet is closed, over {0}")
  @ValueSource(strings = {"tcp", "ucx", "stream"})
  @Timeout(120)
  void readerThatTakesNoPacketIsClosedAtTheWriteTimeout(String transport) throws Exception {
    RdmaDataNodePlugin plugin = plugin();
    long stalled = plugin.stalledConnectionsClosed();
    long idle = plugin.idleConnectionsClosed();
    int open = plugin.openConnections();
    long buffers = plugin.buffersOutstanding();
    HoardingPeer reader = new HoardingPeer();
    try (HrdmaConnector connector = new HrdmaConnector(peerConf(transport))) {
      HrdmaConnector.Connection c = connector.connect(service(), reader);
      assertEquals(transport, c.transport());
      Endpoint ep = c.endpoint();
      try {
        long start = System.nanoTime();
        sendRead(ep, 1);
        // it got what its credits let the DataNode send, and the rest waits for it
        await(() -> reader.received.get() == PEER_CREDITS && plugin.queuedAnswers() > 0,
            () -> "received " + reader.received + ", queued " + plugin.queuedAnswers());
        await(() -> plugin.stalledConnectionsClosed() > stalled, WRITE_TIMEOUT_MS + WAIT_MS,
            () -> "not closed by the write timeout");
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(tookMs >= WRITE_TIMEOUT_MS - 200, "closed after " + tookMs + " ms, before the write timeout");
        assertEquals(stalled + 1, plugin.stalledConnectionsClosed());
        assertEquals(idle, plugin.idleConnectionsClosed());
        // its slot, its read and its packets' buffers are given back
        await(() -> plugin.openConnections() == open && plugin.queuedAnswers() == 0,
            () -> plugin.openConnections() + " connections open (" + open + " before), " + plugin.queuedAnswers()
                + " answers queued");
        // and the peer is told
        awaitPeerClosed(ep, connector, plugin, "the DataNode's close");
        reader.releaseAll();
        await(() -> plugin.buffersOutstanding() <= buffers,
            () -> plugin.buffersOutstanding() + " buffers outstanding, " + buffers + " before");
      } finally {
        ep.close();
        ep.closeFuture().handle((v, t) -> null).get(WAIT_MS, TimeUnit.MILLISECONDS);
        reader.releaseAll();
      }
    }
  }

  @ParameterizedTest(name = "a slow reader is not closed, over {0}")
  @ValueSource(strings = {"tcp", "ucx", "stream"})
  @Timeout(120)
  void slowReaderTakingAPacketASecondKeepsItsConnection(String transport) throws Exception {
    RdmaDataNodePlugin plugin = plugin();
    long stalled = plugin.stalledConnectionsClosed();
    HoardingPeer reader = new HoardingPeer();
    try (HrdmaConnector connector = new HrdmaConnector(peerConf(transport))) {
      HrdmaConnector.Connection c = connector.connect(service(), reader);
      assertEquals(transport, c.transport());
      Endpoint ep = c.endpoint();
      try {
        long start = System.nanoTime();
        sendRead(ep, 1);
        long end = start + TimeUnit.MILLISECONDS.toNanos(WAIT_MS + 4 * WRITE_TIMEOUT_MS);
        int packets = 0;
        boolean last = false;
        while (!last) {
          assertTrue(System.nanoTime() < end, "read not done: " + packets + " packets");
          assertFalse(ep.closeFuture().isDone(), "a slow reader's connection closed after " + packets + " packets");
          RegisteredBuffer b = reader.held.poll();
          if (b == null) {
            Thread.sleep(10);
            continue;
          }
          Message m = MessageCodec.decode(b);
          try {
            if (m.kind() == MessageKind.DATA_PACKET) {
              packets++;
              last = m.packetHeader().getLastPacketInBlock();
            } else {
              assertEquals(MessageKind.READ_RESPONSE, m.kind(), m.toString());
            }
          } finally {
            Thread.sleep(900); // a packet about every second: less than the write timeout apart
            m.release();
          }
        }
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(tookMs > WRITE_TIMEOUT_MS + 1000, "the read took only " + tookMs + " ms");
        Thread.sleep(WRITE_TIMEOUT_MS); // nothing waits now: still open
        assertFalse(ep.closeFuture().isDone(), "an idle connection closed");
        assertEquals(stalled, plugin.stalledConnectionsClosed());
      } finally {
        ep.close();
        ep.closeFuture().handle((v, t) -> null).get(WAIT_MS, TimeUnit.MILLISECONDS);
        reader.releaseAll();
      }
    }
  }

  /**
   * Keeps every message (grants no credits back) and, at the READ_RESPONSE, blocks the
   * transport's I/O thread until released: its worker stops progressing altogether.
   */
  private static final class StoppedPeer implements EndpointHandler {
    final CountDownLatch stopped = new CountDownLatch(1);
    final CountDownLatch resume = new CountDownLatch(1);
    final AtomicInteger received = new AtomicInteger();
    final Queue<Message> held = new ConcurrentLinkedQueue<>();

    @Override
    public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
      received.incrementAndGet();
      Message m;
      try {
        m = MessageCodec.decode(message);
      } catch (ProtocolException e) {
        message.release();
        throw new AssertionError("the DataNode sent what cannot be decoded", e);
      }
      held.add(m);
      if (m.kind() == MessageKind.READ_RESPONSE) {
        stopped.countDown();
        try {
          resume.await(WAIT_MS * 2, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }

    void releaseAll() {
      Message m;
      while ((m = held.poll()) != null) {
        m.release();
      }
    }
  }

  @ParameterizedTest(name = "a peer whose worker stops is closed at the write timeout, over {0}")
  @ValueSource(strings = {"ucx", "stream"})
  @Timeout(120)
  void aPeerWhoseWorkerStopsIsClosedAtTheWriteTimeout(String transport) throws Exception {
    RdmaDataNodePlugin plugin = plugin();
    long stalled = plugin.stalledConnectionsClosed();
    long idle = plugin.idleConnectionsClosed();
    int open = plugin.openConnections();
    long buffers = plugin.buffersOutstanding();
    StoppedPeer peer = new StoppedPeer();
    AtomicInteger packetsSent = new AtomicInteger();
    FrameTap.set((sent, bytes) -> {
      if (sent && bytes.remaining() > 1
          && MessageKind.of(bytes.get(bytes.position() + 1) & 0xff) == MessageKind.DATA_PACKET) {
        packetsSent.incrementAndGet();
      }
    });
    try (HrdmaConnector connector = new HrdmaConnector(TransportConf.defaults().with(TransportConf.ORDER_KEY,
        transport))) {
      HrdmaConnector.Connection c = connector.connect(service(), peer);
      assertEquals(transport, c.transport());
      Endpoint ep = c.endpoint();
      try {
        long start = System.nanoTime();
        for (int i = 0; i < INFOS; i++) {
          ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.INFO_REQUEST, 100 + i, null, null));
        }
        ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.READ_REQUEST, 1,
            BlockOps.readBlock(bigBlock.getBlock(), bigBlock.getBlockToken(), "stopped-worker-test", 0,
                STOPPED_BLOCK_BYTES),
            null));
        assertTrue(peer.stopped.await(WAIT_MS, TimeUnit.MILLISECONDS), "no answer came");
        long maxQueued = 0;
        long maxBuffers = 0;
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WRITE_TIMEOUT_MS + WAIT_MS);
        while (plugin.stalledConnectionsClosed() == stalled) {
          if (System.nanoTime() > end) {
            fail("not closed by the write timeout; " + plugin.queuedAnswers() + " answers queued, "
                + (plugin.buffersOutstanding() - buffers) + " buffers held");
          }
          maxQueued = Math.max(maxQueued, plugin.queuedAnswers());
          maxBuffers = Math.max(maxBuffers, plugin.buffersOutstanding() - buffers);
          Thread.sleep(5);
        }
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        System.err.println("hrdma test: " + transport + ": a peer whose worker stopped, closed after " + tookMs
            + " ms; at most " + maxQueued + " answers queued for credits and " + maxBuffers
            + " buffers held by the DataNode meanwhile; " + packetsSent + " packets handed to the transport");
        assertTrue(tookMs >= WRITE_TIMEOUT_MS - 200, "closed after " + tookMs + " ms, before the write timeout");
        assertEquals(stalled + 1, plugin.stalledConnectionsClosed());
        assertEquals(idle, plugin.idleConnectionsClosed());
        assertTrue(maxQueued <= TransportConf.CREDITS_DEFAULT, maxQueued + " answers queued");
        assertTrue(maxBuffers <= TransportConf.CREDITS_DEFAULT, maxBuffers + " buffers held");
        // its slot, its read and its buffers come back although the peer never answers the close
        await(() -> plugin.openConnections() == open && plugin.queuedAnswers() == 0
            && plugin.buffersOutstanding() <= buffers,
            () -> plugin.openConnections() + " connections open (" + open + " before), " + plugin.queuedAnswers()
                + " answers queued, " + plugin.buffersOutstanding() + " buffers (" + buffers + " before)");
        // the peer, progressing again, learns that the DataNode closed the connection
        peer.resume.countDown();
        long resumed = System.nanoTime();
        awaitPeerClosed(ep, connector, plugin, "the DataNode's close once its worker progressed again");
        System.err.println("hrdma test: " + transport + ": the resumed peer saw the close after "
            + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - resumed) + " ms");
      } finally {
        peer.resume.countDown();
        ep.close();
        ep.closeFuture().handle((v, t) -> null).get(WAIT_MS, TimeUnit.MILLISECONDS);
        FrameTap.set(null);
        System.err.println("hrdma test: " + transport + ": the peer got " + peer.received + " messages in all");
        peer.releaseAll();
      }
    }
  }

  /**
   * Waits for the peer's endpoint to close; if it does not, fails saying which side still holds
   * a native endpoint (UCX transports count theirs), so that a repeat shows which side hung.
   */
  private static void awaitPeerClosed(Endpoint ep, HrdmaConnector connector, RdmaDataNodePlugin plugin,
      String what) throws Exception {
    try {
      ep.closeFuture().handle((v, t) -> null).get(WAIT_MS, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      fail("the peer's " + ep + " did not see " + what + " within " + WAIT_MS + " ms; native endpoints open: peer "
          + nativeEndpoints(connector.transports()) + ", DataNode " + nativeEndpoints(plugin.transports())
          + "; DataNode connections open " + plugin.openConnections());
    }
  }

  private static String nativeEndpoints(java.util.Map<String, org.hdfsrdma.transport.Transport> transports) {
    StringBuilder b = new StringBuilder("{");
    transports.forEach((name, t) -> {
      if (t instanceof org.hdfsrdma.transport.ucx.UcxTransport u) {
        b.append(' ').append(name).append('=').append(u.openEndpoints());
      } else if (t instanceof org.hdfsrdma.transport.ucx.StreamTransport u) {
        b.append(' ').append(name).append('=').append(u.openEndpoints());
      }
    });
    return b.append(" }").toString();
  }

  private TransportConf peerConf(String transport) {
    return TransportConf.defaults().with(TransportConf.ORDER_KEY, transport)
        .with(TransportConf.CREDITS_KEY, Integer.toString(PEER_CREDITS));
  }

  private void sendRead(Endpoint ep, long id) throws IOException {
    ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.READ_REQUEST, id,
        BlockOps.readBlock(block.getBlock(), block.getBlockToken(), "stalled-read-test", 0, BLOCK_BYTES), null));
  }

  private DatanodeInfo datanode() throws IOException {
    return cluster.getFileSystem().getDataNodeStats(DatanodeReportType.LIVE)[0];
  }

  private InetSocketAddress service() throws IOException {
    DatanodeInfo dn = datanode();
    return new InetSocketAddress(dn.getIpAddr(), RdmaPorts.pluginPort(dn, conf));
  }

  private RdmaDataNodePlugin plugin() throws IOException {
    String uuid = datanode().getDatanodeUuid();
    return RdmaDataNodePlugin.running().stream().filter(p -> uuid.equals(p.datanodeUuid())).findFirst()
        .orElseThrow();
  }

  private static void await(BooleanSupplier cond, Supplier<String> what) throws InterruptedException {
    await(cond, WAIT_MS, what);
  }

  private static void await(BooleanSupplier cond, long ms, Supplier<String> what) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
    while (!cond.getAsBoolean()) {
      if (System.nanoTime() > end) {
        fail(what.get());
      }
      Thread.sleep(10);
    }
  }
}
