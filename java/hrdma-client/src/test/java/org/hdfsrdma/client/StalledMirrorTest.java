package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ProtocolException;
import java.util.EnumSet;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.ClientProtocol;
import org.apache.hadoop.hdfs.protocol.DatanodeID;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo.DatanodeInfoBuilder;
import org.apache.hadoop.hdfs.protocol.HdfsFileStatus;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.io.EnumSetWritable;
import org.hdfsrdma.datanode.HrdmaDataNodeKeys;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.RdmaPorts;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.hdfsrdma.transport.select.HrdmaServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * A pipeline whose second DataNode (a peer posing as one: a client names the pipeline's targets)
 * answers the first's WRITE_REQUEST, then keeps every packet forwarded to it (grants no credits
 * back) and acks none, while the client sends packets without waiting for acks (a large write
 * window, which a client sets as it likes). The client reaches the first DataNode over tcp and the
 * first forwards over ucx, so each forward is a copy into the ucx transport's registered memory
 * (as every forward over a sealed connection is). What the first DataNode holds for that write
 * must stay within the client's credit window, as stock's BlockReceiver stops reading its upstream
 * while its mirror's socket does not take its writes: before, the copies queued on the downstream
 * connection for every packet the client sent, in the pool that, with shared transports, serves
 * every other connection of the DataNode. And the write is closed at the packet timeout and gives
 * everything back.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class StalledMirrorTest {
  private static final int PACKET_BYTES = 64 << 10;
  private static final int PACKETS = 320;
  private static final int CREDITS = TransportConf.CREDITS_DEFAULT;
  private static final long PACKET_TIMEOUT_MS = 6000;
  /** dfs.datanode.socket.write.timeout: a downstream that takes nothing fails after it and 5 s. */
  private static final long WRITE_TIMEOUT_MS = 4000;

  private MiniDFSCluster cluster;

  @BeforeAll
  void start() throws Exception {
    Configuration conf = PluginCluster.baseConf();
    // the pipeline is made up here (as SilentMirrorPipelineTest's): no block token
    conf.setBoolean(org.apache.hadoop.hdfs.DFSConfigKeys.DFS_BLOCK_ACCESS_TOKEN_ENABLE_KEY, false);
    conf.setLong(HrdmaDataNodeKeys.WRITE_PACKET_TIMEOUT_MS_KEY, PACKET_TIMEOUT_MS);
    conf.setLong(org.apache.hadoop.hdfs.client.HdfsClientConfigKeys.DFS_DATANODE_SOCKET_WRITE_TIMEOUT_KEY,
        WRITE_TIMEOUT_MS);
    conf.setBoolean(HrdmaDataNodeKeys.WRITE_SHM_KEY, false); // forwards by value, as to another host
    cluster = PluginCluster.start(conf, getClass(), 1);
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(null, cluster);
  }

  /**
   * A "DataNode" that accepts a write and acks none of its packets; {@code keep}: it also keeps
   * every packet (grants no credits back), else it releases each at once.
   */
  private static final class HoardingDataNode implements EndpointHandler {
    final Queue<Message> held = new ConcurrentLinkedQueue<>();
    final AtomicInteger packets = new AtomicInteger();
    private final boolean keep;
    /** Seqnos of the packets kept and not acked yet, for {@link #ackOne}. */
    private final Queue<Long> unacked = new ConcurrentLinkedQueue<>();
    private volatile Endpoint endpoint;
    private volatile long requestId;

    HoardingDataNode(boolean keep) {
      this.keep = keep;
    }

    /** Acks the oldest packet kept and not acked yet (SUCCESS): progress, while it still takes nothing. */
    boolean ackOne() throws TransportException, ProtocolException {
      Long seqno = unacked.poll();
      Endpoint ep = endpoint;
      if (seqno == null || ep == null) {
        return false;
      }
      ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.PIPELINE_ACK, requestId,
          BlockOps.pipelineAck(seqno, java.util.List.of(
              org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status.SUCCESS)), null));
      return true;
    }

    @Override
    public void onMessage(Endpoint ep, RegisteredBuffer buffer) {
      Message m;
      try {
        m = MessageCodec.decode(buffer);
      } catch (ProtocolException e) {
        buffer.release();
        return;
      }
      if (m.kind() == MessageKind.DATA_PACKET) {
        packets.incrementAndGet();
        if (keep) {
          try {
            unacked.add(m.packetHeader().getSeqno());
          } catch (ProtocolException e) {
            // not acked then
          }
          held.add(m); // kept: no credit goes back
        } else {
          m.release();
        }
        return;
      }
      try {
        if (m.kind() == MessageKind.WRITE_REQUEST) {
          endpoint = ep;
          requestId = m.requestId();
          ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.WRITE_RESPONSE, m.requestId(),
              BlockOps.writeResponseOk(true), null)); // takes heartbeats (and acks none)
        }
      } catch (TransportException e) {
        ep.close();
      } finally {
        m.release();
      }
    }

    void releaseAll() {
      Message m;
      while ((m = held.poll()) != null) {
        m.release();
      }
    }
  }

  @Test
  void aDownstreamThatTakesNothingHoldsTheFirstDataNodeToTheClientsWindow() throws Exception {
    RdmaDataNodePlugin plugin = RdmaDataNodePlugin.running().get(0);
    long base = plugin.buffersOutstanding();
    HoardingDataNode hoarder = new HoardingDataNode(true);
    Configuration conf = PluginCluster.rdmaClientConf(cluster);
    conf.set(TransportConf.ORDER_KEY, "tcp"); // the client's hop over tcp, the forward over ucx: a copy
    conf.setBoolean(RdmaBlockClient.SHM_WRITES_KEY, false);
    conf.setInt(RdmaBlockWriter.PACKET_BYTES_KEY, PACKET_BYTES);
    conf.setLong(RdmaBlockWriter.WINDOW_BYTES_KEY, 1L << 30); // acks not waited for
    HrdmaServer fake = HrdmaServer.start(TransportConf.of(Map.of(TransportConf.ORDER_KEY, "ucx")), hoarder,
        "127.0.0.1", 0);
    RdmaBlockWriter w = null;
    try (RdmaBlockClient client = new RdmaBlockClient(conf)) {
      LocatedBlock two = pipelineTo(fake, "/stalled-mirror");
      w = RdmaBlockWriter.create(client, two, conf);
      byte[] packet = new byte[PACKET_BYTES];
      for (int i = 0; i < PACKETS; i++) {
        packet[0] = (byte) i;
        w.write(packet); // queued by the client's transport once the first DataNode grants no credits
      }
      // the downstream took its window, then nothing: what the first DataNode holds stays bounded
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (hoarder.packets.get() < CREDITS - 1 && System.nanoTime() < end) {
        Thread.sleep(20);
      }
      // its window, less the WRITE_REQUEST's credit it kept (granted back in batches of half a window)
      assertTrue(hoarder.packets.get() >= CREDITS - 1 && hoarder.packets.get() <= CREDITS,
          hoarder.packets + " packets the hoarding DataNode got");
      // copies of the downstream's window (in flight until delivered) and of the client's (queued for credits)
      long bound = 2L * CREDITS + 16;
      long most = 0;
      end = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
      while (System.nanoTime() < end) {
        most = Math.max(most, plugin.buffersOutstanding() - base);
        Thread.sleep(20);
      }
      System.err.println("hrdma test: stalled mirror -> at most " + most + " buffers held, bound " + bound);
      assertTrue(most <= bound, "the first DataNode held up to " + most + " buffers for one write whose"
          + " downstream takes nothing (bound " + bound + "; the client sent up to " + PACKETS + " packets)");
      // the client can send nothing more: the write is closed at the packet timeout and gives all back
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(PACKET_TIMEOUT_MS + 30_000);
      while (plugin.openWrites() > 0 && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      assertEquals(0, plugin.openWrites(), "the stalled write is still open");
      // and the client was told the downstream failed (its ack timeout, 5 s per DataNode longer, would
      // have named none, and the client drops the first DataNode then)
      deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (w.badNodeIndex() < 0 && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertEquals(1, w.badNodeIndex(), "the DataNode the client was told failed");
      hoarder.releaseAll();
      deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (plugin.buffersOutstanding() > base && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      assertTrue(plugin.buffersOutstanding() <= base, plugin.buffersOutstanding() + " buffers outstanding, "
          + base + " before");
    } finally {
      if (w != null) {
        w.abort();
      }
      hoarder.releaseAll();
      fake.close();
    }
  }

  /** A new file's first block, its pipeline this cluster's DataNode and then {@code fake}. */
  private LocatedBlock pipelineTo(HrdmaServer fake, String path) throws IOException {
    assertTrue(fake.offers().stream().anyMatch(a -> a.getTransport().equals("ucx")), "offers " + fake.offers());
    Configuration dnConf = cluster.getConfiguration(0);
    int port = fake.serviceAddress().getPort();
    int xfer = port - dnConf.getInt(RdmaPorts.PORT_OFFSET_KEY, RdmaPorts.PORT_OFFSET_DEFAULT);
    DatanodeInfo hoarding = new DatanodeInfoBuilder().setNodeID(new DatanodeID("127.0.0.1", "localhost",
        "hoarding-dn", xfer, xfer + 1, xfer + 2, xfer + 3)).build();
    assertEquals(port, RdmaPorts.pluginPort(hoarding, dnConf));
    ClientProtocol nn = cluster.getFileSystem().getClient().getNamenode();
    String name = cluster.getFileSystem().getClient().getClientName();
    HdfsFileStatus st = nn.create(path, FsPermission.getFileDefault(), name,
        new EnumSetWritable<>(EnumSet.of(CreateFlag.CREATE, CreateFlag.OVERWRITE)), true, (short) 1,
        64L << 20, org.apache.hadoop.crypto.CryptoProtocolVersion.supported(), null, null);
    LocatedBlock one = nn.addBlock(path, name, null, null, st.getFileId(), null, null);
    return new LocatedBlock(one.getBlock(), new DatanodeInfo[] {one.getLocations()[0], hoarding},
        new String[] {one.getStorageIDs()[0], "hoarding-storage"},
        new StorageType[] {one.getStorageTypes()[0], StorageType.DEFAULT});
  }

  /**
   * A downstream that takes every packet and acks none: the first DataNode reports it failed once it
   * owed acks for the packet timeout and 5 s (stock's PacketResponder: its mirror's ack read timeout),
   * so the client drops the downstream. Before, nothing on the DataNode timed out (the client's
   * heartbeats, which the first DataNode relays, kept the write alive) until the client's own ack
   * timeout, 5 s per DataNode of the pipeline, named no DataNode, and the client's recovery drops
   * the first one then.
   */
  @Test
  void aDownstreamThatAcksNothingIsReportedToTheClientBeforeItsOwnAckTimeout() throws Exception {
    RdmaDataNodePlugin plugin = RdmaDataNodePlugin.running().get(0);
    HoardingDataNode silent = new HoardingDataNode(false);
    Configuration conf = PluginCluster.rdmaClientConf(cluster);
    conf.setBoolean(RdmaBlockClient.SHM_WRITES_KEY, false);
    conf.setInt(RdmaBlockWriter.PACKET_BYTES_KEY, PACKET_BYTES);
    // the client's ack timeout: this and 5 s per DataNode, 16 s; the first DataNode's, 11 s
    conf.setLong(org.apache.hadoop.hdfs.client.HdfsClientConfigKeys.DFS_CLIENT_SOCKET_TIMEOUT_KEY, PACKET_TIMEOUT_MS);
    long clientAckTimeoutMs = PACKET_TIMEOUT_MS + 2 * 5000;
    HrdmaServer fake = HrdmaServer.start(TransportConf.of(Map.of(TransportConf.ORDER_KEY, "ucx")), silent,
        "127.0.0.1", 0);
    RdmaBlockWriter w = null;
    try (RdmaBlockClient client = new RdmaBlockClient(conf)) {
      w = RdmaBlockWriter.create(client, pipelineTo(fake, "/silent-acks"), conf);
      w.write(new byte[4 * PACKET_BYTES]);
      long t0 = System.nanoTime();
      RdmaBlockWriter writer = w;
      IOException e = org.junit.jupiter.api.Assertions.assertThrows(IOException.class, writer::close);
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      System.err.println("hrdma test: silent acks -> after " + ms + " ms, bad node " + w.badNodeIndex() + ": "
          + e.getMessage());
      assertTrue(silent.packets.get() >= 4, silent.packets + " packets reached the downstream");
      assertEquals(1, w.badNodeIndex(), "the DataNode the client was told failed: " + e.getMessage());
      assertTrue(ms < clientAckTimeoutMs, "failed after " + ms + " ms, the client's ack timeout is "
          + clientAckTimeoutMs + " ms");
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (plugin.openWrites() > 0 && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      assertEquals(0, plugin.openWrites(), "the write is still open");
    } finally {
      if (w != null) {
        w.abort();
      }
      fake.close();
    }
  }

  /**
   * A downstream that takes nothing (keeps every packet) but acks one of those it got every 1.5 s:
   * each ack is progress for the ack timeout, so only the write timeout on what it was sent
   * (dfs.datanode.socket.write.timeout and 5 s per DataNode downstream, as stock's on its mirror's
   * socket) ends it, naming the downstream. Before, nothing did while it had packets left to ack
   * (its window: about 95 s here), and the client's window stayed held.
   */
  @Test
  void aDownstreamThatTakesNothingButAcksNowAndThenFailsAtTheWriteTimeout() throws Exception {
    RdmaDataNodePlugin plugin = RdmaDataNodePlugin.running().get(0);
    HoardingDataNode trickling = new HoardingDataNode(true);
    Configuration conf = PluginCluster.rdmaClientConf(cluster);
    conf.setBoolean(RdmaBlockClient.SHM_WRITES_KEY, false);
    conf.setInt(RdmaBlockWriter.PACKET_BYTES_KEY, PACKET_BYTES);
    conf.setLong(RdmaBlockWriter.WINDOW_BYTES_KEY, 1L << 30); // acks not waited for
    HrdmaServer fake = HrdmaServer.start(TransportConf.of(Map.of(TransportConf.ORDER_KEY, "ucx")), trickling,
        "127.0.0.1", 0);
    java.util.concurrent.ScheduledExecutorService acker = java.util.concurrent.Executors
        .newSingleThreadScheduledExecutor();
    RdmaBlockWriter w = null;
    try (RdmaBlockClient client = new RdmaBlockClient(conf)) {
      w = RdmaBlockWriter.create(client, pipelineTo(fake, "/trickling-acks"), conf);
      w.write(new byte[2 * CREDITS * PACKET_BYTES]);
      long t0 = System.nanoTime();
      acker.scheduleWithFixedDelay(() -> {
        try {
          trickling.ackOne();
        } catch (TransportException | ProtocolException e) {
          // the connection closed: nothing more to ack
        }
      }, 1500, 1500, TimeUnit.MILLISECONDS);
      long bound = WRITE_TIMEOUT_MS + 5000 + 10_000; // the write timeout, 5 s, and the sweep's and the load's share
      long deadline = t0 + TimeUnit.MILLISECONDS.toNanos(bound);
      while (plugin.openWrites() > 0 && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      System.err.println("hrdma test: trickling acks -> write open " + plugin.openWrites() + " after " + ms
          + " ms, " + trickling.packets + " packets taken");
      assertEquals(0, plugin.openWrites(), "the write to a downstream that takes nothing is still open after "
          + ms + " ms");
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (w.badNodeIndex() < 0 && System.nanoTime() < end) {
        Thread.sleep(20);
      }
      assertEquals(1, w.badNodeIndex(), "the DataNode the client was told failed");
    } finally {
      acker.shutdownNow();
      if (w != null) {
        w.abort();
      }
      trickling.releaseAll();
      fake.close();
    }
  }
}
