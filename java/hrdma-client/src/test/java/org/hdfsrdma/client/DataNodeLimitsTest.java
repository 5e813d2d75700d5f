package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.DataNodeFaultInjector;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.datanode.compat.RbwReplica;
import org.hdfsrdma.datanode.disk.VolumeScheduler;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.RdmaPorts;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.transport.Protocol;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.hdfsrdma.transport.tcp.TcpEndpoint;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * What no peer may take from a DataNode's plugin, seen from outside: connections beyond the
 * cap are refused at the hello, idle connections and stalled messages are closed, an
 * oversized request closes only its own connection, a write with no packets fails, a hung
 * volume holds up only its own reads, and a write is finalized as stock finalizes it (fsynced
 * for SYNC_BLOCK files; downstream first). Two DataNodes of two volumes each, small limits.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class DataNodeLimitsTest {
  private static final int MAX_CONNECTIONS = 8;
  private static final long IDLE_MS = 4000;
  private static final long PACKET_TIMEOUT_MS = 2000;
  private static final long READ_TIMEOUT_MS = 1000;
  private static final long HELLO_MS = 3000;

  private MiniDFSCluster cluster;
  private Configuration conf;
  private DistributedFileSystem fs;
  private String bpid;

  @BeforeAll
  void start() throws Exception {
    conf = PluginCluster.baseConf();
    conf.setInt("hrdma.datanode.max-connections", MAX_CONNECTIONS);
    conf.setLong("hrdma.datanode.idle-timeout-ms", IDLE_MS);
    conf.setLong("hrdma.datanode.write.packet-timeout-ms", PACKET_TIMEOUT_MS);
    conf.setInt("hrdma.datanode.max-request-bytes", 4096);
    conf.setLong(TransportConf.READ_TIMEOUT_KEY, READ_TIMEOUT_MS);
    conf.setLong(TransportConf.HELLO_TIMEOUT_KEY, HELLO_MS);
    conf.set("hrdma.datanode.disk.policy.disk", "fifo"); // volume workers a test can hold
    conf.setInt("hrdma.datanode.write.threads", 1); // fewer than the writes a hung volume holds
    // stock's round-robin, with volumes a test can hang inside createRbw
    conf.set(DFSConfigKeys.DFS_DATANODE_FSDATASET_VOLUME_CHOOSING_POLICY_KEY,
        HoldingVolumeChoosingPolicy.class.getName());
    // a loaded machine may take seconds over a hello: a write must not drift to the stock path
    conf.setLong("hrdma.transport.connect-timeout-ms", 20_000);
    java.io.File base = new java.io.File("target/test-dir/" + getClass().getSimpleName());
    cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(2).storagesPerDatanode(2).build();
    cluster.waitActive();
    PluginCluster.awaitPluginsServing(cluster);
    fs = cluster.getFileSystem();
    bpid = cluster.getNamesystem().getBlockPoolId();
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  private DataNode dn(int i) {
    return cluster.getDataNodes().get(i);
  }

  private static RdmaDataNodePlugin plugin(DataNode dn) {
    return RdmaDataNodePlugin.running().stream().filter(p -> dn.getDatanodeUuid().equals(p.datanodeUuid()))
        .findFirst().orElseThrow();
  }

  private InetSocketAddress pluginAddress(DataNode dn) {
    return new InetSocketAddress("127.0.0.1", RdmaPorts.pluginPort(dn.getXferPort(), conf));
  }

  private static void await(BooleanSupplier done, long ms, String what) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
    while (!done.getAsBoolean()) {
      assertTrue(System.nanoTime() < end, what);
      Thread.sleep(20);
    }
  }

  /** An INFO_REQUEST on {@code raw}, answered with INFO_REPLY. */
  private static void info(RawPlugin raw, long id) throws Exception {
    raw.ep.send(org.hdfsrdma.protocol.MessageCodec.encode(raw.ep.transport().allocator(), MessageKind.INFO_REQUEST,
        id, null, null));
    org.hdfsrdma.protocol.Message m = raw.next();
    assertEquals(MessageKind.INFO_REPLY, m.kind());
    assertEquals(id, m.requestId());
  }

  @Test
  @Order(1)
  @Timeout(60)
  void connectionsBeyondTheCapAreRefusedAtTheHelloAndTheOthersServed() throws Exception {
    DataNode dn = dn(0);
    RdmaDataNodePlugin p = plugin(dn);
    await(() -> p.openConnections() == 0, 10_000, "connections left open: " + p.openConnections());
    long refusedBefore = p.refusedConnections();
    List<RawPlugin> open = new ArrayList<>();
    try {
      for (int i = 0; i < MAX_CONNECTIONS; i++) {
        RawPlugin r = new RawPlugin(pluginAddress(dn));
        open.add(r);
        info(r, i + 1);
      }
      TransportException e = assertThrows(TransportException.class, () -> new RawPlugin(pluginAddress(dn)));
      System.err.println("hrdma test: connection beyond the cap: " + e.getMessage());
      assertTrue(e.getMessage().contains("REFUSED") && e.getMessage().contains("hrdma.datanode.max-connections"),
          e.getMessage());
      assertEquals(refusedBefore + 1, p.refusedConnections());
      for (int i = 0; i < open.size(); i++) {
        info(open.get(i), 100 + i); // the admitted ones are still served
      }
      open.remove(0).close();
      await(() -> p.openConnections() == MAX_CONNECTIONS - 1, 10_000, "closed connection still counted");
      RawPlugin again = new RawPlugin(pluginAddress(dn)); // room again
      open.add(again);
      info(again, 200);
    } finally {
      for (RawPlugin r : open) {
        r.close();
      }
    }
    await(() -> p.openConnections() == 0, 10_000, "connections leaked: " + p.openConnections());
  }

  @Test
  @Order(2)
  @Timeout(60)
  void anIdleConnectionIsClosed() throws Exception {
    RdmaDataNodePlugin p = plugin(dn(0));
    long before = p.idleConnectionsClosed();
    try (RawPlugin r = new RawPlugin(pluginAddress(dn(0)))) {
      info(r, 1);
      long t0 = System.nanoTime();
      r.ep.closeFuture().handle((v, t) -> null).get(IDLE_MS * 4, TimeUnit.MILLISECONDS);
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      System.err.println("hrdma test: idle connection closed after " + ms + " ms");
      assertTrue(ms >= IDLE_MS - 100, "closed after " + ms + " ms, before the idle timeout");
    }
    assertEquals(before + 1, p.idleConnectionsClosed());
    await(() -> p.openConnections() == 0, 10_000, "connections leaked");
  }

  /**
   * A plain socket that never says hello is closed once the hello timeout has passed, not before
   * (a slow but honest peer gets that long), and never counts as a connection.
   */
  @Test
  @Order(3)
  @Timeout(60)
  void aConnectionThatNeverSaysHelloIsClosedAfterTheHelloTimeout() throws Exception {
    RdmaDataNodePlugin p = plugin(dn(0));
    try (Socket s = new Socket()) {
      s.connect(pluginAddress(dn(0)), 5000);
      s.setSoTimeout(30_000);
      long t0 = System.nanoTime();
      int r;
      try {
        r = s.getInputStream().read();
        while (r >= 0) { // a HELLO_REPLY refusing it may come first
          r = s.getInputStream().read();
        }
      } catch (SocketTimeoutException e) {
        throw new AssertionError("a connection that never said hello still open after 30 s", e);
      } catch (IOException e) {
        r = -1; // reset: closed too
      }
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      System.err.println("hrdma test: silent connection closed after " + ms + " ms");
      assertEquals(-1, r);
      assertTrue(ms >= HELLO_MS - 100, "closed after " + ms + " ms, before the hello timeout");
      assertEquals(0, p.openConnections(), "never admitted");
    }
  }

  /** A plain socket that says hello as the tcp transport does, then sends only a frame's first 16 bytes. */
  @Test
  @Order(3)
  @Timeout(60)
  void aConnectionStalledInsideAMessageIsClosed() throws Exception {
    RdmaDataNodePlugin p = plugin(dn(0));
    long before = TcpEndpoint.readTimeouts();
    try (Socket s = new Socket()) {
      s.connect(pluginAddress(dn(0)), 5000);
      s.setSoTimeout(30_000);
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      DataInputStream in = new DataInputStream(s.getInputStream());
      byte[] hello = HrdmaProtos.Hello.newBuilder().setVersion(Protocol.VERSION).setCredits(8)
          .setMaxMessageSize(1 << 20).build().toByteArray();
      out.writeInt(hello.length + 1);
      out.writeByte(1); // HELLO
      out.write(hello);
      out.flush();
      int n = in.readInt();
      assertEquals(2, in.readByte()); // HELLO_REPLY
      byte[] reply = new byte[n - 1];
      in.readFully(reply);
      assertEquals(HrdmaProtos.HelloReply.Status.OK, HrdmaProtos.HelloReply.parseFrom(reply).getStatus());
      await(() -> p.openConnections() == 1, 10_000, "the raw connection was not admitted");
      out.writeInt((1 << 20) + 1); // a 1 MiB DATA frame...
      out.writeByte(3);
      out.write(new byte[11]);     // ...of which 16 bytes in all ever come
      out.flush();
      long t0 = System.nanoTime();
      int r;
      try {
        r = in.read();
        while (r >= 0) { // a CLOSE frame may come first
          r = in.read();
        }
      } catch (SocketTimeoutException e) {
        throw new AssertionError("still open 30 s after a stalled frame header", e);
      } catch (IOException e) {
        r = -1; // reset: closed too
      }
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      System.err.println("hrdma test: stalled connection closed after " + ms + " ms");
      assertEquals(-1, r);
    }
    assertEquals(before + 1, TcpEndpoint.readTimeouts(), "closed for another reason than the read timeout");
    await(() -> p.openConnections() == 0, 10_000, "connections leaked");
  }

  @Test
  @Order(4)
  @Timeout(60)
  void anOversizedRequestClosesOnlyItsConnection() throws Exception {
    RdmaDataNodePlugin p = plugin(dn(0));
    long before = p.oversizedMessages();
    try (RawPlugin bad = new RawPlugin(pluginAddress(dn(0)));
        RawPlugin good = new RawPlugin(pluginAddress(dn(0)))) {
      int n = 16 + 8192; // an INFO_REQUEST with 8 KiB of payload; the bound is 4 KiB
      RegisteredBuffer b = bad.ep.transport().allocator().allocate(n);
      java.nio.ByteBuffer nio = b.nio();
      nio.clear();
      nio.put((byte) 1).put((byte) MessageKind.INFO_REQUEST.code()).putShort((short) 0).putInt(0).putLong(5);
      nio.put(new byte[8192]).flip();
      bad.ep.send(b);
      bad.ep.closeFuture().handle((v, t) -> null).get(20, TimeUnit.SECONDS);
      assertEquals(before + 1, p.oversizedMessages());
      info(good, 6);
    }
  }

  private LocatedBlock onlyBlock(Path f) throws IOException {
    List<LocatedBlock> l = fs.getClient().getLocatedBlocks(f.toString(), 0).getLocatedBlocks();
    assertEquals(1, l.size());
    return l.get(0);
  }

  @Test
  @Order(5)
  @Timeout(120)
  void aWriteThatReceivesNoPacketFailsAndLeavesTheReplicaForRecovery() throws Exception {
    DataNode dn = dn(0);
    RdmaDataNodePlugin p = plugin(dn);
    Path f = new Path("/limits/stalled-write");
    try (FileSystem ours = FileSystem.newInstance(PluginCluster.rdmaClientConf(cluster))) {
      FSDataOutputStream out = ours.create(f, FsPermission.getFileDefault(), EnumSet.of(CreateFlag.CREATE), 4096,
          (short) 1, PluginCluster.BLOCK, null, null);
      try {
        out.write(PluginCluster.random(10_000, 3));
        out.hflush();
        LocatedBlock lb = onlyBlock(f);
        DataNode holder = cluster.getDataNode(lb.getLocations()[0].getIpcPort());
        RdmaDataNodePlugin hp = plugin(holder);
        assertEquals(1, hp.openWrites());
        long t0 = System.nanoTime();
        await(() -> hp.openWrites() == 0, PACKET_TIMEOUT_MS * 5, "the stalled write is still open");
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        System.err.println("hrdma test: stalled write failed after " + ms + " ms");
        String replica = holder.getFSDataset().getReplicaString(bpid, lb.getBlock().getBlockId());
        assertTrue(replica.contains("RBW"), "the replica is not left RBW for recovery: " + replica);
      } finally {
        try {
          out.close(); // the client recovers its pipeline or fails; neither hangs
        } catch (IOException e) {
          System.err.println("hrdma test: the client's close after the stalled write: " + e);
        }
      }
    }
    await(() -> p.openWrites() == 0, 10_000, "writes leaked");
  }

  @Test
  @Order(6)
  @Timeout(120)
  void aSyncBlockFileIsFsyncedAtEveryBlockEnd() throws Exception {
    byte[] data = PluginCluster.random(PluginCluster.BLOCK * 3 / 2, 5); // two blocks
    try (FileSystem ours = FileSystem.newInstance(PluginCluster.rdmaClientConf(cluster))) {
      long before = RbwReplica.fsyncs();
      try (FSDataOutputStream out = ours.create(new Path("/limits/plain"), FsPermission.getFileDefault(),
          EnumSet.of(CreateFlag.CREATE), 4096, (short) 1, PluginCluster.BLOCK, null, null)) {
        out.write(data);
      }
      assertEquals(before, RbwReplica.fsyncs(), "a plain file was fsynced (dfs.datanode.synconclose is off)");
      try (FSDataOutputStream out = ours.create(new Path("/limits/synced"), FsPermission.getFileDefault(),
          EnumSet.of(CreateFlag.CREATE, CreateFlag.SYNC_BLOCK), 4096, (short) 1, PluginCluster.BLOCK, null, null)) {
        out.write(data);
      }
      assertEquals(before + 2, RbwReplica.fsyncs(), "each of the two blocks fsynced once as it closed");
      assertArrayEquals(data, PluginCluster.readWhole(ours, new Path("/limits/synced")));
    }
  }

  /**
   * Stock PacketResponder: a DataNode finalizes its replica and tells the NameNode only once
   * the DataNode downstream has acked the last packet, which it does after finalizing its own.
   * The fault injector (called after each finalize) looks, from the first DataNode to call
   * it, at how many replicas are finalized: that one only.
   */
  @Test
  @Order(7)
  @Timeout(120)
  void theFirstDataNodeFinalizesOnlyAfterTheDownstreamAck() throws Exception {
    List<String> seen = Collections.synchronizedList(new ArrayList<>());
    long[] base = {finalized(dn(0)), finalized(dn(1))};
    DataNodeFaultInjector old = DataNodeFaultInjector.get();
    DataNodeFaultInjector.set(new DataNodeFaultInjector() {
      @Override
      public void delayAckLastPacket() {
        if (!Thread.currentThread().getName().startsWith("hrdma-dn-write-")) {
          return;
        }
        try {
          Thread.sleep(300); // time enough for the other to finalize, if it does not wait
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        seen.add((finalized(dn(0)) - base[0]) + "+" + (finalized(dn(1)) - base[1]));
      }
    });
    try (FileSystem ours = FileSystem.newInstance(PluginCluster.rdmaClientConf(cluster))) {
      byte[] data = PluginCluster.random(300_000, 9);
      try (FSDataOutputStream out = ours.create(new Path("/limits/pipelined"), FsPermission.getFileDefault(),
          EnumSet.of(CreateFlag.CREATE), 4096, (short) 2, PluginCluster.BLOCK, null, null)) {
        out.write(data);
      }
      assertArrayEquals(data, PluginCluster.readWhole(ours, new Path("/limits/pipelined")));
    } finally {
      DataNodeFaultInjector.set(old);
    }
    System.err.println("hrdma test: replicas finalized (dn0+dn1) at each finalize: " + seen);
    assertEquals(2, seen.size(), seen.toString());
    assertTrue(seen.get(0).equals("1+0") || seen.get(0).equals("0+1"), "the first to finalize saw " + seen.get(0));
    assertEquals("1+1", seen.get(1));
  }

  private long finalized(DataNode d) {
    try {
      return d.getFSDataset().getFinalizedBlocks(bpid).size();
    } catch (RuntimeException e) {
      return -1;
    }
  }

  /**
   * A hung volume (its disk workers held) delays only its own reads: with more reads of a
   * block on it waiting than the old shared read executor had threads, a block of the other
   * volume is still read at once.
   */
  @Test
  @Order(8)
  @Timeout(180)
  void aHungVolumeDelaysOnlyItsOwnReads() throws Exception {
    DataNode dn = dn(0);
    RdmaDataNodePlugin p = plugin(dn);
    // one file on each volume of dn0
    Path onA = null;
    Path onB = null;
    String volA = null;
    byte[] data = PluginCluster.random(200_000, 11);
    for (int i = 0; i < 20 && (onA == null || onB == null); i++) {
      Path f = new Path("/limits/vol-" + i);
      try (FSDataOutputStream out = fs.create(f, FsPermission.getFileDefault(), true, 4096,
          (short) 1, PluginCluster.BLOCK, null, new InetSocketAddress[] {dn.getXferAddress()})) {
        out.write(data);
      }
      LocatedBlock lb = onlyBlock(f);
      if (!lb.getLocations()[0].getDatanodeUuid().equals(dn.getDatanodeUuid())) {
        continue;
      }
      String vol = lb.getStorageIDs()[0];
      if (onA == null) {
        onA = f;
        volA = vol;
      } else if (!vol.equals(volA) && onB == null) {
        onB = f;
      }
    }
    assertTrue(onA != null && onB != null, "no files on both volumes of " + dn);
    String hungVolume = volA;
    VolumeScheduler hung = p.disk().schedulers().get(hungVolume);
    assertTrue(hung != null && !hung.policy().inline(), "volume " + hungVolume + " has no workers to hold");
    CountDownLatch unhang = new CountDownLatch(1);
    hold(hung, unhang);
    ExecutorService readers = Executors.newCachedThreadPool();
    List<FileSystem> clients = new ArrayList<>();
    try {
      List<Future<byte[]>> stuck = new ArrayList<>();
      final Path a = onA;
      for (int i = 0; i < 5; i++) { // more than the 4 threads reads used to share, each on its own connection
        FileSystem c = FileSystem.newInstance(PluginCluster.rdmaClientConf(cluster));
        clients.add(c);
        stuck.add(readers.submit(() -> PluginCluster.readWhole(c, a)));
      }
      Thread.sleep(1000); // they reach the plugin and wait on the hung volume
      for (Future<byte[]> s : stuck) {
        assertTrue(!s.isDone(), "a read of the hung volume completed");
      }
      FileSystem other = FileSystem.newInstance(PluginCluster.rdmaClientConf(cluster));
      clients.add(other);
      final Path b = onB;
      long t0 = System.nanoTime();
      byte[] got = readers.submit(() -> PluginCluster.readWhole(other, b)).get(10, TimeUnit.SECONDS);
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      System.err.println("hrdma test: read of the other volume with volume " + hungVolume + " hung: " + ms + " ms");
      assertArrayEquals(data, got);
      unhang.countDown();
      for (Future<byte[]> s : stuck) {
        assertArrayEquals(data, s.get(60, TimeUnit.SECONDS)); // and the hung volume's reads complete once it is back
      }
    } finally {
      unhang.countDown();
      readers.shutdownNow();
      for (FileSystem c : clients) {
        c.close();
      }
    }
  }

  /** Every disk worker of {@code volume} waits for {@code unhang}: the volume hangs. */
  private static void hold(VolumeScheduler volume, CountDownLatch unhang) throws IOException {
    for (int i = 0; i < volume.policy().maxDepth(); i++) {
      volume.submit(new Object(), false, i << 20, 4096, () -> {
        try {
          unhang.await(120, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return null;
      });
    }
  }

  /**
   * A hung volume delays only its own writes: with one disk volume of each DataNode held, the
   * writes whose replicas land on a held volume wait (more of them than a DataNode's write
   * threads), and the writes landing on the other volumes complete meanwhile; once the volumes
   * are back, every file is whole.
   */
  @Test
  @Order(9)
  @Timeout(180)
  void aHungVolumeDelaysOnlyItsOwnWrites() throws Exception {
    List<String> hungVolumes = new ArrayList<>();
    CountDownLatch unhang = new CountDownLatch(1);
    for (int d = 0; d < 2; d++) {
      RdmaDataNodePlugin p = plugin(dn(d));
      String v = new java.util.TreeSet<>(p.disk().schedulers().keySet()).first();
      VolumeScheduler hung = p.disk().schedulers().get(v);
      assertTrue(!hung.policy().inline(), "volume " + v + " has no workers to hold");
      hold(hung, unhang);
      hungVolumes.add(v);
    }
    int writes = 12;
    byte[] data = PluginCluster.random(300_000, 12);
    ExecutorService writers = Executors.newCachedThreadPool();
    List<Path> files = new ArrayList<>();
    // one client for all writes (a loaded machine may not finish a dozen fresh clients' hellos
    // within the plugin's hello timeout; they would take the stock path)
    FileSystem c = FileSystem.newInstance(PluginCluster.rdmaClientConf(cluster));
    try {
      List<Future<Long>> done = submitWrites(c, writers, "/limits/hung-write-", writes, data, files);
      // where each write went: the volume its DataNode created the replica on (the NameNode's
      // storage ID is only a hint the volume choosing policy may not follow)
      boolean[] onHung = new boolean[writes];
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      for (int i = 0; i < writes; i++) {
        String volume = null;
        while (volume == null) {
          assertTrue(System.nanoTime() < deadline, files.get(i) + " got no replica");
          List<LocatedBlock> blocks = fs.getClient().getLocatedBlocks(files.get(i).toString(), 0).getLocatedBlocks();
          LocatedBlock lb = blocks.isEmpty() ? null : blocks.get(0);
          if (lb != null && lb.getLocations().length > 0) {
            for (DataNode d : cluster.getDataNodes()) {
              if (d.getDatanodeUuid().equals(lb.getLocations()[0].getDatanodeUuid())) {
                try {
                  volume = d.getFSDataset().getVolume(lb.getBlock()).getStorageID();
                } catch (RuntimeException notYet) {
                  // no replica yet
                }
              }
            }
          }
          if (volume == null) {
            Thread.sleep(50);
          }
        }
        onHung[i] = hungVolumes.contains(volume);
      }
      int stuck = 0;
      for (int i = 0; i < writes; i++) {
        if (onHung[i]) {
          stuck++;
        } else { // the other volumes' writes finish while the held ones hang
          done.get(i).get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        }
      }
      Thread.sleep(1000); // time for a write of a held volume to finish, were it not held
      long unhungAt = System.nanoTime();
      unhang.countDown();
      for (int i = 0; i < writes; i++) {
        long finished = done.get(i).get(60, TimeUnit.SECONDS);
        System.err.println("hrdma test: " + files.get(i) + (onHung[i] ? " on a held volume" : " on a free volume")
            + " finished " + TimeUnit.NANOSECONDS.toMillis(finished - unhungAt) + " ms after the volumes came back");
        if (onHung[i]) {
          assertTrue(finished > unhungAt, files.get(i) + " on a held volume finished while it was held (not our"
              + " write path?)");
        }
        assertArrayEquals(data, PluginCluster.readWhole(fs, files.get(i)), files.get(i) + " content");
      }
      assertTrue(stuck > 2 && stuck < writes, stuck + " of " + writes + " writes on the held volumes");
    } finally {
      unhang.countDown();
      writers.shutdownNow();
      c.close();
    }
  }

  /**
   * A replica creation hung on its volume delays only its own write: with one volume of each
   * DataNode hung inside createRbw (after the volume choice, before the volume is touched),
   * the writes whose replicas go to the other volumes complete over our path, and reads are
   * served, while the held ones wait; once the volumes are back the held writes complete too,
   * every file is whole, and no write, connection buffer or set-up is left behind.
   */
  @Test
  @Order(10)
  @Timeout(180)
  void aHungReplicaCreationDelaysOnlyItsOwnWrites() throws Exception {
    byte[] data = PluginCluster.random(200_000, 13);
    RdmaDistributedFileSystem c = (RdmaDistributedFileSystem) FileSystem.newInstance(
        PluginCluster.rdmaClientConf(cluster));
    ExecutorService writers = Executors.newCachedThreadPool();
    CountDownLatch release = new CountDownLatch(1);
    try {
      Path before = new Path("/limits/before-hung-create");
      try (FSDataOutputStream out = c.create(before, true, 4096, (short) 2, PluginCluster.BLOCK)) {
        out.write(data);
      }
      int heldBefore = HoldingVolumeChoosingPolicy.heldTotal();
      long rdmaBytesBefore = c.rdmaBytesWritten();
      for (int d = 0; d < 2; d++) {
        RdmaDataNodePlugin p = plugin(dn(d));
        HoldingVolumeChoosingPolicy.hold(new java.util.TreeSet<>(p.disk().schedulers().keySet()).first(), release);
      }
      int writes = 12; // more than a DataNode's write threads (1 here) and its volumes
      List<Path> files = new ArrayList<>();
      List<Future<Long>> done = submitWrites(c, writers, "/limits/hung-create-", writes, data, files);
      // every write either completes or waits on a held volume; the free ones do not wait for the held
      await(() -> done.stream().filter(Future::isDone).count() + HoldingVolumeChoosingPolicy.waiting() == writes,
          60_000, "each write completed or held");
      int held = HoldingVolumeChoosingPolicy.waiting();
      assertTrue(held >= 2 && held <= writes - 2, held + " of " + writes + " writes held");
      assertEquals(held, HoldingVolumeChoosingPolicy.heldTotal() - heldBefore, "held creations");
      // reads are served meanwhile, by a DataNode with a hung creation
      assertArrayEquals(data, PluginCluster.readWhole(c, before));
      Thread.sleep(500);
      assertEquals(held, HoldingVolumeChoosingPolicy.waiting(), "a held write went on while its volume was held");
      assertEquals(writes - held, done.stream().filter(Future::isDone).count());
      for (Future<Long> f : done) {
        if (f.isDone()) {
          f.get(); // completed, not failed
        }
      }
      long releasedAt = System.nanoTime();
      HoldingVolumeChoosingPolicy.releaseAll();
      for (int i = 0; i < writes; i++) {
        done.get(i).get(60, TimeUnit.SECONDS);
        assertArrayEquals(data, PluginCluster.readWhole(c, files.get(i)), files.get(i) + " content");
      }
      System.err.println("hrdma test: " + held + " held writes completed within "
          + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - releasedAt) + " ms of the release");
      // all over our path, none set up again or sent through the stock path
      assertEquals(0, c.stockWriteFallbacks(), "writes through the stock path");
      assertEquals(0, c.pipelineRecoveries(), "pipeline recoveries");
      assertEquals((long) writes * data.length, c.rdmaBytesWritten() - rdmaBytesBefore, "bytes written over hrdma");
      // nothing left behind: no open write, no set-up thread waiting
      await(() -> RdmaDataNodePlugin.running().stream().allMatch(p -> p.openWrites() == 0), 30_000,
          "no open writes");
      assertEquals(0, HoldingVolumeChoosingPolicy.waiting());
    } finally {
      HoldingVolumeChoosingPolicy.releaseAll();
      release.countDown();
      writers.shutdownNow();
      c.close();
    }
  }

  /**
   * Starts {@code n} writes of {@code data} (replication 1) to PREFIX0.. on {@code writers}, one
   * every 100 ms so that they reach the volume choosing policy one at a time; adds their paths
   * to {@code files}; each future gives the time its write closed.
   */
  private static List<Future<Long>> submitWrites(FileSystem c, ExecutorService writers, String prefix, int n,
      byte[] data, List<Path> files) throws InterruptedException {
    List<Future<Long>> done = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Path f = new Path(prefix + i);
      files.add(f);
      done.add(writers.submit(() -> {
        try (FSDataOutputStream out = c.create(f, true, 4096, (short) 1, PluginCluster.BLOCK)) {
          out.write(data);
        }
        return System.nanoTime();
      }));
      Thread.sleep(100);
    }
    return done;
  }

  /**
   * Writes open at once on a DataNode are bounded by the connection cap's figure, as stock's
   * DataXceivers by dfs.datanode.max.transfer.threads: one connection that opens WRITE_REQUESTs
   * without end (each holds a replica's files) gets an ERROR WRITE_RESPONSE naming this
   * DataNode and the key past the bound, and writes are served again once those close.
   */
  @Test
  @Order(11)
  @Timeout(120)
  void writesOpenAtOnceAreBoundedAndARefusalNamesTheKey() throws Exception {
    DataNode dn = dn(0);
    RdmaDataNodePlugin p = plugin(dn);
    await(() -> p.openWrites() == 0, 20_000, "writes of earlier tests still open");
    org.apache.hadoop.hdfs.security.token.block.BlockTokenSecretManager sm =
        cluster.getNamesystem().getBlockManager().getBlockTokenSecretManager();
    DatanodeInfo self = new org.apache.hadoop.hdfs.protocol.DatanodeInfo.DatanodeInfoBuilder()
        .setNodeID(dn.getDatanodeId()).build();
    String storage;
    try (org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi.FsVolumeReferences v =
        dn.getFSDataset().getFsVolumeReferences()) {
      storage = v.get(0).getStorageID();
    }
    try (RawPlugin raw = new RawPlugin(pluginAddress(dn))) {
      for (int i = 0; i <= MAX_CONNECTIONS; i++) {
        ExtendedBlock b = new ExtendedBlock(bpid, 3_000_000_000L + i, 0, 1001);
        raw.ep.send(org.hdfsrdma.protocol.MessageCodec.encode(raw.ep.transport().allocator(),
            MessageKind.WRITE_REQUEST, 100 + i, org.hdfsrdma.protocol.BlockOps.writeBlock(b,
                sm.generateToken(b, EnumSet.of(
                    org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier.AccessMode.WRITE),
                    new org.apache.hadoop.fs.StorageType[0], new String[0]),
                "hostile", new DatanodeInfo[] {self},
                new org.apache.hadoop.fs.StorageType[] {org.apache.hadoop.fs.StorageType.DEFAULT},
                new String[] {storage},
                org.apache.hadoop.util.DataChecksum.newDataChecksum(
                    org.apache.hadoop.util.DataChecksum.Type.CRC32C, PluginCluster.BPC)), null));
        org.hdfsrdma.protocol.Message r = raw.next();
        assertEquals(MessageKind.WRITE_RESPONSE, r.kind());
        assertEquals(100 + i, r.requestId());
        org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto w = r.writeResponse();
        if (i < MAX_CONNECTIONS) {
          assertEquals(org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status.SUCCESS, w.getStatus(),
              w.getMessage());
        } else {
          System.err.println("hrdma test: write past the bound: " + w.getStatus() + " " + w.getMessage());
          assertEquals(org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status.ERROR, w.getStatus(),
              "write " + (i + 1) + " of one connection served: " + w.getMessage());
          assertTrue(w.getMessage().contains("hrdma.datanode.max-connections"), w.getMessage());
          assertEquals(self.getXferAddr(), w.getFirstBadLink(), "this DataNode named as the bad link");
        }
      }
      assertEquals(MAX_CONNECTIONS, p.openWrites());
    }
    await(() -> p.openWrites() == 0, 20_000, "the closed connection's writes still open");
    // served again: a client's write to that DataNode
    Path f = new Path("/limits/after-the-write-bound");
    byte[] data = PluginCluster.random(5000, 41);
    try (FileSystem ours = FileSystem.newInstance(PluginCluster.rdmaClientConf(cluster))) {
      try (FSDataOutputStream out = ours.create(f, true, 4096, (short) 2, PluginCluster.BLOCK)) {
        out.write(data);
      }
      byte[] got = new byte[data.length];
      try (org.apache.hadoop.fs.FSDataInputStream in = ours.open(f)) {
        in.readFully(got);
      }
      assertArrayEquals(data, got);
    }
  }
}
