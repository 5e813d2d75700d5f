package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier.AccessMode;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenSecretManager;
import org.apache.hadoop.hdfs.security.token.block.InvalidBlockTokenException;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.RdmaPorts;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportConf;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * The read path end to end: files written by the stock client into a
 * MiniDFSCluster of three DataNodes with the plugin (block tokens on, 1 MiB
 * blocks), read back block by block through {@link RdmaBlockReader}. One
 * cluster for the class; the last test checks that nothing leaked.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(120)
class RdmaBlockReaderTest {
  private static final int BLOCK = PluginCluster.BLOCK;
  private static final int BPC = PluginCluster.BPC;

  private MiniDFSCluster cluster;
  private Configuration conf;
  private DistributedFileSystem fs;
  /** Default transport order (ucx where it runs) and tcp only. */
  private RdmaBlockClient client;
  private RdmaBlockClient tcpClient;

  @BeforeAll
  void start() throws Exception {
    conf = PluginCluster.baseConf();
    cluster = PluginCluster.start(conf, getClass(), 3);
    fs = cluster.getFileSystem();
    client = new RdmaBlockClient(conf);
    Configuration tcp = new Configuration(conf);
    tcp.set(TransportConf.ORDER_KEY, "tcp");
    tcpClient = new RdmaBlockClient(tcp);
  }

  @AfterAll
  void stop() {
    if (client != null) {
      client.close();
    }
    if (tcpClient != null) {
      tcpClient.close();
    }
    if (cluster != null) {
      cluster.shutdown();
    }
  }

  private byte[] write(String name, byte[] data, int replication) throws IOException {
    Path p = new Path(name);
    try (FSDataOutputStream out = fs.create(p, true, 4096, (short) replication, BLOCK)) {
      out.write(data);
    }
    if (data.length > 0) {
      // the NameNode learns of the last replicas by incremental block reports
      try {
        DFSTestUtil.waitReplication(fs, p, (short) replication);
      } catch (java.util.concurrent.TimeoutException | InterruptedException e) {
        throw new IOException(e);
      }
    }
    return data;
  }

  private List<LocatedBlock> blocks(String name) throws IOException {
    return fs.getClient().getLocatedBlocks(name, 0).getLocatedBlocks();
  }

  /** Reads every block of {@code name} from every replica and compares with {@code data}. */
  private void readBack(RdmaBlockClient c, String name, byte[] data, int replication) throws IOException {
    List<LocatedBlock> blocks = blocks(name);
    assertEquals((data.length + BLOCK - 1) / BLOCK, blocks.size(), name);
    for (LocatedBlock lb : blocks) {
      assertEquals(replication, lb.getLocations().length, lb.toString());
      for (DatanodeInfo dn : lb.getLocations()) {
        byte[] got = new byte[(int) lb.getBlockSize()];
        c.readFully(lb, dn, 0, got, 0, got.length);
        byte[] want = Arrays.copyOfRange(data, (int) lb.getStartOffset(),
            (int) (lb.getStartOffset() + lb.getBlockSize()));
        assertArrayEquals(want, got, name + " " + lb.getBlock() + " from " + dn);
      }
    }
  }

  @Test
  @Order(1)
  void stockWrittenFilesReadBackByteIdentical() throws Exception {
    int[] sizes = {0, 1, BPC - 1, BPC + 1, BLOCK - 1, BLOCK + 1, 3 * BLOCK + 100};
    for (int replication : new int[] {1, 3}) {
      for (int size : sizes) {
        String name = "/sizes/r" + replication + "-" + size;
        byte[] data = write(name, PluginCluster.random(size, size * 31L + replication), replication);
        readBack(client, name, data, replication);
        readBack(tcpClient, name, data, replication);
      }
    }
    DatanodeInfo any = blocks("/sizes/r3-1").get(0).getLocations()[0];
    System.err.println("hrdma test: default client reads over " + client.transportTo(any)
        + ", the other over " + tcpClient.transportTo(any));
    assertEquals("tcp", tcpClient.transportTo(any));
    assertEquals(3, client.openConnections(), "one cached connection per DataNode");
  }

  @Test
  @Order(2)
  void oddOffsetsAndLengths() throws Exception {
    byte[] data = write("/odd/file", PluginCluster.random(3 * BLOCK + 777, 5), 2);
    List<LocatedBlock> blocks = blocks("/odd/file");
    Random rnd = new Random(11);
    List<long[]> ranges = new ArrayList<>();
    for (long[] r : new long[][] {{0, 0}, {1, 1}, {511, 2}, {512, 512}, {513, 1000}, {BLOCK - 1, 1},
        {BLOCK - 513, 513}, {100_000, 300_001}}) {
      ranges.add(r);
    }
    for (int i = 0; i < 20; i++) {
      long off = rnd.nextInt(BLOCK);
      ranges.add(new long[] {off, rnd.nextInt((int) (BLOCK - off) + 1)});
    }
    for (LocatedBlock lb : blocks) {
      for (long[] r : ranges) {
        long off = Math.min(r[0], lb.getBlockSize());
        long len = Math.min(r[1], lb.getBlockSize() - off);
        DatanodeInfo dn = lb.getLocations()[rnd.nextInt(lb.getLocations().length)];
        byte[] want = Arrays.copyOfRange(data, (int) (lb.getStartOffset() + off),
            (int) (lb.getStartOffset() + off + len));
        // byte[] path
        byte[] got = new byte[(int) len];
        client.readFully(lb, dn, off, got, 0, got.length);
        assertArrayEquals(want, got, lb.getBlock() + " [" + off + ", +" + len + ")");
        // ByteBuffer path, direct, in odd-sized pieces
        try (RdmaBlockReader reader = tcpClient.open(lb, dn, off, len)) {
          ByteBuffer all = ByteBuffer.allocateDirect((int) len);
          while (all.hasRemaining()) {
            ByteBuffer piece = all.slice(all.position(), Math.min(all.remaining(), 1 + rnd.nextInt(7000)));
            int n = reader.read(piece);
            assertTrue(n > 0, "read returned " + n + " with " + reader.remaining() + " left");
            all.position(all.position() + n);
          }
          assertEquals(-1, reader.read(ByteBuffer.allocate(1)));
          byte[] got2 = new byte[(int) len];
          all.flip().get(got2);
          assertArrayEquals(want, got2);
        }
      }
    }
  }

  @Test
  @Order(3)
  void readAheadKeepsTheNextRequestsInFlight() throws Exception {
    byte[] data = write("/ahead/file", PluginCluster.random(BLOCK, 3), 1);
    LocatedBlock lb = blocks("/ahead/file").get(0);
    Configuration c = new Configuration(conf);
    c.setLong(RdmaBlockClient.REQUEST_BYTES_KEY, 100_000); // not a multiple of the chunk size
    c.setLong(RdmaBlockClient.MAX_REQUEST_BYTES_KEY, 100_000); // every request the same size
    c.setInt(RdmaBlockClient.REQUESTS_IN_FLIGHT_KEY, 3);
    try (RdmaBlockClient small = new RdmaBlockClient(c)) {
      try (RdmaBlockReader r = small.open(lb, lb.getLocations()[0], 7, BLOCK - 7)) {
        assertEquals(3, r.requestsInFlight(), "the first requests go out before the first read");
        byte[] got = new byte[BLOCK - 7];
        int done = 0;
        int maxInFlight = 0;
        while (done < got.length) {
          int n = r.read(got, done, Math.min(4096, got.length - done));
          done += n;
          maxInFlight = Math.max(maxInFlight, r.requestsInFlight());
          if (r.remaining() > 300_000) {
            assertEquals(3, r.requestsInFlight(), "window refilled at " + done);
          }
        }
        assertArrayEquals(Arrays.copyOfRange(data, 7, BLOCK), got);
        assertEquals((BLOCK - 7 + 99_999) / 100_000, r.requestsSent());
        assertEquals(3, maxInFlight);
      }
      // the last READ_STATUS may still be on its way out
      eventually(() -> small.buffersOutstanding() == 0, () -> small.buffersOutstanding() + " buffers");
    }
  }

  @Test
  @Order(3)
  void requestsDoubleUpToTheLargestAsTheReadGoesOn() throws Exception {
    byte[] data = write("/ramp/file", PluginCluster.random(BLOCK, 5), 1);
    LocatedBlock lb = blocks("/ramp/file").get(0);
    Configuration c = new Configuration(conf);
    c.setLong(RdmaBlockClient.REQUEST_BYTES_KEY, 64 << 10);
    c.setLong(RdmaBlockClient.MAX_REQUEST_BYTES_KEY, 256 << 10);
    try (RdmaBlockClient fixed = new RdmaBlockClient(c)) {
      // this cluster's replicas are on DISK, not a type read in growing requests by default
      assertEquals(StorageType.DISK, lb.getStorageTypes()[0]);
      try (RdmaBlockReader r = fixed.open(lb, lb.getLocations()[0], 0, BLOCK)) {
        assertArrayEquals(data, readAll(r, BLOCK));
        assertEquals(16, r.requestsSent(), "64K each");
      }
    }
    c.set(RdmaBlockClient.RAMP_STORAGE_TYPES_KEY, "SSD, DISK");
    try (RdmaBlockClient ramp = new RdmaBlockClient(c)) {
      try (RdmaBlockReader r = ramp.open(lb, lb.getLocations()[0], 0, BLOCK)) {
        assertArrayEquals(data, readAll(r, BLOCK));
        // 64K, 128K, then 256K three times (960K), then the 64K left: 6 requests
        // (fixed requests of 64K would be 16, of 256K 4)
        assertEquals(6, r.requestsSent());
      }
      // two readers on the same connection, read in turns: neither grows its requests, so
      // neither holds the other's back behind a large one
      try (RdmaBlockReader a = ramp.open(lb, lb.getLocations()[0], 0, BLOCK);
          RdmaBlockReader b = ramp.open(lb, lb.getLocations()[0], 0, BLOCK)) {
        byte[] ga = new byte[BLOCK];
        byte[] gb = new byte[BLOCK];
        int da = 0;
        int db = 0;
        while (da < BLOCK || db < BLOCK) {
          if (da < BLOCK) {
            da += a.read(ga, da, Math.min(8192, BLOCK - da));
          }
          if (db < BLOCK) {
            db += b.read(gb, db, Math.min(8192, BLOCK - db));
          }
        }
        assertArrayEquals(data, ga);
        assertArrayEquals(data, gb);
        // a was alone when it opened (64K, then 128K), then 64K each: 2 + 13
        assertEquals(15, a.requestsSent(), "64K requests while the other reader has some in flight");
        assertEquals(16, b.requestsSent(), "b never alone: 64K each");
      }
      eventually(() -> ramp.buffersOutstanding() == 0, () -> ramp.buffersOutstanding() + " buffers");
    }
    Configuration bad = new Configuration(conf);
    bad.setLong(RdmaBlockClient.REQUEST_BYTES_KEY, 1 << 20);
    bad.setLong(RdmaBlockClient.MAX_REQUEST_BYTES_KEY, 1 << 19);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new RdmaBlockClient(bad));
    assertTrue(e.getMessage().contains("max-request-bytes 524288 (at least request-bytes)"), e.getMessage());
    Configuration badType = new Configuration(conf);
    badType.set(RdmaBlockClient.RAMP_STORAGE_TYPES_KEY, "SSD,FLOPPY");
    e = assertThrows(IllegalArgumentException.class, () -> new RdmaBlockClient(badType));
    assertTrue(e.getMessage().contains("'FLOPPY' is not a storage type"), e.getMessage());
  }

  /** Reads {@code n} bytes from {@code r} in pieces of 8 KB. */
  private static byte[] readAll(RdmaBlockReader r, int n) throws IOException {
    byte[] got = new byte[n];
    int done = 0;
    while (done < n) {
      done += r.read(got, done, Math.min(8192, n - done));
    }
    return got;
  }


  @Test
  @Order(4)
  void aFlippedByteOnDiskIsAChecksumExceptionNamingTheBlock() throws Exception {
    byte[] data = write("/corrupt/file", PluginCluster.random(2 * BLOCK, 9), 1);
    LocatedBlock lb = blocks("/corrupt/file").get(1);
    DatanodeInfo dn = lb.getLocations()[0];
    File f = PluginCluster.blockFile(cluster, dn, lb.getBlock());
    long flipAt = 300_000 + 17;
    try (RandomAccessFile raf = new RandomAccessFile(f, "rw")) {
      raf.seek(flipAt);
      int b = raf.read();
      raf.seek(flipAt);
      raf.write(b ^ 0x40);
    }
    byte[] got = new byte[BLOCK];
    ChecksumException e = assertThrows(ChecksumException.class,
        () -> client.readFully(lb, dn, 0, got, 0, got.length));
    System.err.println("hrdma test: " + e.getMessage());
    assertTrue(e.getMessage().contains(lb.getBlock().getBlockName()), e.getMessage());
    assertTrue(e.getMessage().contains(dn.getXferAddr()), e.getMessage());
    long chunk = flipAt - flipAt % BPC;
    assertEquals(chunk, e.getPos());
    assertTrue(e.getMessage().contains("at offset " + chunk), e.getMessage());
    // the bytes before the bad chunk are fine, and so is the connection
    byte[] head = new byte[(int) chunk];
    client.readFully(lb, dn, 0, head, 0, head.length);
    assertArrayEquals(Arrays.copyOfRange(data, BLOCK, BLOCK + (int) chunk), head);
    byte[] tail = new byte[BLOCK - (int) chunk - BPC];
    client.readFully(lb, dn, chunk + BPC, tail, 0, tail.length);
    assertArrayEquals(Arrays.copyOfRange(data, BLOCK + (int) chunk + BPC, 2 * BLOCK), tail);
  }

  @Test
  @Order(5)
  void badTokensAreRefusedWithAClearAccessTokenError() throws Exception {
    byte[] data = write("/token/file", PluginCluster.random(5000, 13), 1);
    LocatedBlock good = blocks("/token/file").get(0);
    DatanodeInfo dn = good.getLocations()[0];
    Token<BlockTokenIdentifier> token = good.getBlockToken();
    assertTrue(token.getIdentifier().length > 0, "tokens are on");

    byte[] got = new byte[5000];
    client.readFully(good, dn, 0, got, 0, got.length); // the valid token
    assertArrayEquals(data, got);

    byte[] pw = token.getPassword().clone();
    pw[0] ^= 1;
    LocatedBlock tampered = withToken(good, new Token<>(token.getIdentifier(), pw, token.getKind(),
        token.getService()));
    InvalidBlockTokenException e = assertThrows(InvalidBlockTokenException.class,
        () -> client.readFully(tampered, dn, 0, got, 0, got.length));
    System.err.println("hrdma test: tampered: " + e.getMessage());
    assertTrue(e.getMessage().contains("Block token verification failed"), e.getMessage());
    assertTrue(e.getMessage().contains(Status.ERROR_ACCESS_TOKEN.name()), e.getMessage());

    BlockTokenSecretManager sm = cluster.getNamesystem().getBlockManager().getBlockTokenSecretManager();
    Token<BlockTokenIdentifier> expired;
    sm.setTokenLifetime(1);
    try {
      expired = sm.generateToken(good.getBlock(), EnumSet.of(AccessMode.READ), new StorageType[0],
          new String[0]);
    } finally {
      sm.setTokenLifetime(TimeUnit.MINUTES.toMillis(DFSConfigKeys.DFS_BLOCK_ACCESS_TOKEN_LIFETIME_DEFAULT));
    }
    Thread.sleep(20);
    e = assertThrows(InvalidBlockTokenException.class,
        () -> client.readFully(withToken(good, expired), dn, 0, got, 0, got.length));
    System.err.println("hrdma test: expired: " + e.getMessage());
    assertTrue(e.getMessage().contains("expired"), e.getMessage());

    e = assertThrows(InvalidBlockTokenException.class,
        () -> client.readFully(withToken(good, new Token<>()), dn, 0, got, 0, got.length));
    System.err.println("hrdma test: empty: " + e.getMessage());

    client.readFully(good, dn, 0, got, 0, got.length); // still serving, same connection
    assertArrayEquals(data, got);
  }

  private static LocatedBlock withToken(LocatedBlock lb, Token<BlockTokenIdentifier> t) {
    LocatedBlock copy = new LocatedBlock(lb.getBlock(), lb.getLocations());
    copy.setBlockToken(t);
    return copy;
  }

  @Test
  @Order(6)
  void nonexistentBlockAndBadRangeAreClearErrorsOnAUsableConnection() throws Exception {
    byte[] data = write("/missing/file", PluginCluster.random(70_000, 17), 1);
    LocatedBlock good = blocks("/missing/file").get(0);
    DatanodeInfo dn = good.getLocations()[0];
    int before = client.openConnections();

    BlockTokenSecretManager sm = cluster.getNamesystem().getBlockManager().getBlockTokenSecretManager();
    ExtendedBlock ghost = new ExtendedBlock(good.getBlock().getBlockPoolId(), 987_654_321L, 70_000, 1001);
    LocatedBlock missing = new LocatedBlock(ghost, good.getLocations());
    missing.setBlockToken(sm.generateToken(ghost, EnumSet.of(AccessMode.READ), new StorageType[0],
        new String[0]));
    byte[] got = new byte[70_000];
    IOException e = assertThrows(IOException.class, () -> client.readFully(missing, dn, 0, got, 0, 10));
    System.err.println("hrdma test: missing: " + e.getMessage());
    assertTrue(e.getMessage().contains("blk_987654321"), e.getMessage());
    assertTrue(e.getMessage().contains("Replica does not exist"), e.getMessage());

    // a range past the replica's end (the client's own check bypassed by a longer block)
    ExtendedBlock longer = new ExtendedBlock(good.getBlock());
    longer.setNumBytes(200_000);
    LocatedBlock past = new LocatedBlock(longer, good.getLocations());
    past.setBlockToken(good.getBlockToken());
    e = assertThrows(IOException.class, () -> client.readFully(past, dn, 60_000, new byte[20_000], 0, 20_000));
    System.err.println("hrdma test: past the end: " + e.getMessage());
    assertTrue(e.getMessage().contains("don't match block"), e.getMessage());

    client.readFully(good, dn, 0, got, 0, got.length);
    assertArrayEquals(data, got);
    assertEquals(before, client.openConnections(), "the same connection served on");
  }

  @Test
  @Order(7)
  void garbageToThePluginGetsAnErrorAndThePluginKeepsServing() throws Exception {
    LocatedBlock lb = blocks("/missing/file").get(0);
    DatanodeInfo dn = lb.getLocations()[0];
    InetSocketAddress addr = new InetSocketAddress(dn.getIpAddr(), RdmaPorts.pluginPort(dn, conf));
    try (RawPlugin raw = new RawPlugin(addr)) {
      Endpoint ep = raw.ep;
      byte[][] garbage = {{1, 2, 3}, new byte[100], PluginCluster.random(5000, 1)};
      for (byte[] g : garbage) {
        RegisteredBuffer m = ep.transport().allocator().allocate(g.length);
        m.nio().put(0, g);
        ep.send(m).get(10, TimeUnit.SECONDS);
        Message reply = raw.next();
        assertEquals(MessageKind.ERROR, reply.kind());
        System.err.println("hrdma test: garbage answered: " + reply.error().getMessage());
      }
      // the same connection then serves a real request
      RegisteredBuffer req = MessageCodec.encode(ep.transport().allocator(), MessageKind.READ_REQUEST, 42,
          BlockOps.readBlock(lb.getBlock(), lb.getBlockToken(), "raw", 0, 1000), null);
      ep.send(req).get(10, TimeUnit.SECONDS);
      Message resp = raw.next();
      assertEquals(MessageKind.READ_RESPONSE, resp.kind());
      assertEquals(42, resp.requestId());
      Message pkt = raw.next();
      assertEquals(MessageKind.DATA_PACKET, pkt.kind());
      assertTrue(pkt.packetHeader().getLastPacketInBlock());
      assertEquals(1024, pkt.packetHeader().getDataLen(), "whole chunks, as stock");
    }
    byte[] got = new byte[1000];
    client.readFully(lb, dn, 0, got, 0, got.length);
  }

  /**
   * A token identifier in Hadoop's legacy layout whose storage type count claims {@code count}
   * entries, none of which follow: Hadoop's parse allocates the array before it reads one.
   */
  private static byte[] identifierClaimingStorageTypes(LocatedBlock lb, int count) throws IOException {
    java.io.ByteArrayOutputStream bo = new java.io.ByteArrayOutputStream();
    java.io.DataOutputStream o = new java.io.DataOutputStream(bo);
    org.apache.hadoop.io.WritableUtils.writeVLong(o, 0);
    org.apache.hadoop.io.WritableUtils.writeVInt(o, 1);
    org.apache.hadoop.io.WritableUtils.writeString(o, "mallory");
    org.apache.hadoop.io.WritableUtils.writeString(o, lb.getBlock().getBlockPoolId());
    org.apache.hadoop.io.WritableUtils.writeVLong(o, lb.getBlock().getBlockId());
    org.apache.hadoop.io.WritableUtils.writeVInt(o, 1);
    org.apache.hadoop.io.WritableUtils.writeEnum(o, AccessMode.READ);
    org.apache.hadoop.io.WritableUtils.writeVInt(o, count);
    return bo.toByteArray();
  }

  @Test
  @Order(8)
  void aTokenClaimingAHugeArrayIsRefusedAndTheConnectionServesOn() throws Exception {
    write("/hostile/token", PluginCluster.random(5000, 21), 1);
    LocatedBlock lb = blocks("/hostile/token").get(0);
    DatanodeInfo dn = lb.getLocations()[0];
    InetSocketAddress addr = new InetSocketAddress(dn.getIpAddr(), RdmaPorts.pluginPort(dn, conf));
    Token<BlockTokenIdentifier> good = lb.getBlockToken();
    Token<BlockTokenIdentifier> hostile = new Token<>(identifierClaimingStorageTypes(lb, Integer.MAX_VALUE - 8),
        new byte[20], good.getKind(), good.getService());
    try (RawPlugin raw = new RawPlugin(addr)) {
      Endpoint ep = raw.ep;
      ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.READ_REQUEST, 7,
          BlockOps.readBlock(lb.getBlock(), hostile, "raw", 0, 1000), null)).get(10, TimeUnit.SECONDS);
      Message refused = raw.next(); // before the bound: an OutOfMemoryError on the read thread, and no answer
      assertEquals(MessageKind.ERROR, refused.kind());
      assertEquals(7, refused.requestId());
      assertEquals(Status.ERROR_ACCESS_TOKEN, refused.error().getStatus());
      System.err.println("hrdma test: hostile identifier: " + refused.error().getMessage());
      assertTrue(refused.error().getMessage().contains("storage type count claims " + (Integer.MAX_VALUE - 8)),
          refused.error().getMessage());
      // the same connection serves the next request
      ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.READ_REQUEST, 8,
          BlockOps.readBlock(lb.getBlock(), good, "raw", 0, 1000), null)).get(10, TimeUnit.SECONDS);
      Message resp = raw.next();
      assertEquals(MessageKind.READ_RESPONSE, resp.kind());
      assertEquals(8, resp.requestId());
      assertEquals(MessageKind.DATA_PACKET, raw.next().kind());
    }
  }

  @Test
  @Order(9)
  void anErrorThrownInsideAReadIsAnsweredAndTheConnectionServesOn() throws Exception {
    write("/hostile/error", PluginCluster.random(5000, 22), 1);
    LocatedBlock lb = blocks("/hostile/error").get(0);
    DatanodeInfo dn = lb.getLocations()[0];
    InetSocketAddress addr = new InetSocketAddress(dn.getIpAddr(), RdmaPorts.pluginPort(dn, conf));
    org.apache.hadoop.hdfs.server.datanode.DataNodeFaultInjector before =
        org.apache.hadoop.hdfs.server.datanode.DataNodeFaultInjector.get();
    try (RawPlugin raw = new RawPlugin(addr)) {
      Endpoint ep = raw.ep;
      // stock's hook where a read opens the replica's files: an Error there (other code, as a dataset's)
      org.apache.hadoop.hdfs.server.datanode.DataNodeFaultInjector.set(
          new org.apache.hadoop.hdfs.server.datanode.DataNodeFaultInjector() {
            @Override
            public void throwTooManyOpenFiles() {
              throw new Error("injected for the test");
            }
          });
      try {
        ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.READ_REQUEST, 11,
            BlockOps.readBlock(lb.getBlock(), lb.getBlockToken(), "raw", 0, 1000), null)).get(10, TimeUnit.SECONDS);
        Message failed = raw.next(); // before: the Error left the read's task unanswered, its connection stuck
        assertEquals(MessageKind.ERROR, failed.kind());
        assertEquals(11, failed.requestId());
        System.err.println("hrdma test: an Error in a read: " + failed.error().getMessage());
        assertTrue(failed.error().getMessage().contains("injected for the test"), failed.error().getMessage());
      } finally {
        org.apache.hadoop.hdfs.server.datanode.DataNodeFaultInjector.set(before);
      }
      ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.READ_REQUEST, 12,
          BlockOps.readBlock(lb.getBlock(), lb.getBlockToken(), "raw", 0, 1000), null)).get(10, TimeUnit.SECONDS);
      Message resp = raw.next();
      assertEquals(MessageKind.READ_RESPONSE, resp.kind());
      assertEquals(12, resp.requestId());
      assertEquals(MessageKind.DATA_PACKET, raw.next().kind());
    }
  }

  @Test
  @Order(99)
  void nothingLeaks() throws Exception {
    for (RdmaBlockClient c : List.of(client, tcpClient)) {
      // with connections still open: only sends still completing may hold a buffer
      eventually(() -> c.buffersOutstanding() == 0, () -> c.buffersOutstanding() + " buffers with connections open");
      c.closeConnections();
      eventually(() -> c.openConnections() == 0 && c.buffersOutstanding() == 0,
          () -> c.openConnections() + " connections, " + c.buffersOutstanding() + " buffers");
    }
    for (RdmaDataNodePlugin p : RdmaDataNodePlugin.running()) {
      eventually(() -> p.openConnections() == 0 && p.buffersOutstanding() == 0,
          () -> p + ": " + p.openConnections() + " connections, " + p.buffersOutstanding() + " buffers");
    }
  }

  private static void eventually(java.util.function.BooleanSupplier ok, java.util.function.Supplier<String> what)
      throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!ok.getAsBoolean()) {
      if (System.nanoTime() > end) {
        throw new AssertionError("still: " + what.get());
      }
      Thread.sleep(20);
    }
  }
}
