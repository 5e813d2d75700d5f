package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.BlockLocalPathInfo;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.security.token.block.InvalidBlockTokenException;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.nativelib.NativeFiles;
import org.hdfsrdma.protocol.ShortCircuitSocket;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * Short-circuit reads ({@code hrdma.client.read.local=true}) on a
 * MiniDFSCluster whose DataNodes all run on this host: finalized replicas are
 * read from their files, whose descriptors the plugin passed over its Unix
 * domain socket after checking the token, byte-identical, checksums
 * verified; a block still being written, or a bad token, is refused. Every
 * test leaves no descriptor held and nothing mapped. The
 * client verifies small windows ({@value #WINDOW} bytes) {@value #AHEAD} ahead
 * of the reader on its verifier thread, so every test crosses many windows
 * verified ahead.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class LocalReadTest {
  private static final int BLOCK = PluginCluster.BLOCK;
  private static final int WINDOW = 16 * 1024;
  private static final int AHEAD = 3;
  private static final long SCR_TIMEOUT_MS = 2000;

  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private RdmaDistributedFileSystem fs;

  @BeforeAll
  void start() throws Exception {
    local = new LocalReadFixture("scr-");
    Configuration conf = local.clusterConf();
    conf.setLong("hrdma.datanode.short-circuit.timeout-ms", SCR_TIMEOUT_MS);
    cluster = PluginCluster.start(conf, getClass(), 3);
    stock = cluster.getFileSystem();
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(),
        local.clientConf(cluster, true, WINDOW, AHEAD));
  }

  private LocalReadFixture local;

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  /**
   * Nothing a test's readers had stays: every received descriptor closed, every mapping
   * gone but the replicas the client keeps for positional reads, which go when dropped.
   */
  @AfterEach
  void nothingLeaks() throws IOException {
    LocalReplicas kept = fs.blockClient().replicas();
    assertEquals(kept.filesOpen(), NativeFiles.fdsHeld(), "descriptors held beyond the replicas kept");
    assertEquals(0, NativeFiles.mappedBytes(), "bytes mapped");
    kept.clear();
    assertEquals(0, NativeFiles.fdsHeld(), "descriptors held once the kept replicas are dropped");
    assertEquals(0, kept.sumBytes(), "sums held once the kept replicas are dropped");
  }

  private long granted() {
    return RdmaDataNodePlugin.running().stream().mapToLong(RdmaDataNodePlugin::shortCircuitGranted).sum();
  }

  private long refused() {
    return RdmaDataNodePlugin.running().stream().mapToLong(RdmaDataNodePlugin::shortCircuitRefused).sum();
  }

  private Path writeStock(String name, byte[] data) throws Exception {
    Path p = new Path(name);
    try (FSDataOutputStream out = stock.create(p, (short) 3)) {
      out.write(data);
    }
    // every replica known to the NameNode (close returns once one is): the tests pick replicas by location
    DFSTestUtil.waitReplication(stock, p, (short) 3);
    return p;
  }

  @Test
  void finalizedReplicasAreReadFromTheirFilesByteIdentical() throws Exception {
    byte[] data = PluginCluster.random(3 * BLOCK + 1001, 11);
    Path p = writeStock("/local/a", data);
    long granted0 = granted();
    long local0 = fs.localBytesRead();
    long rdma0 = fs.rdmaBytesRead();
    byte[] got = new byte[data.length];
    try (FSDataInputStream in = fs.open(p)) {
      in.readFully(got); // sequential, across block boundaries
      assertEquals(-1, in.read());
      byte[] part = new byte[777];
      in.readFully(BLOCK - 300, part); // positional, across a block boundary, unaligned
      assertArrayEquals(java.util.Arrays.copyOfRange(data, BLOCK - 300, BLOCK + 477), part);
      in.seek(2 * BLOCK + 513);
      ByteBuffer bb = ByteBuffer.allocateDirect(5000);
      while (bb.hasRemaining()) {
        assertTrue(in.read(bb) > 0);
      }
      bb.flip();
      byte[] fromBb = new byte[5000];
      bb.get(fromBb);
      assertArrayEquals(java.util.Arrays.copyOfRange(data, 2 * BLOCK + 513, 2 * BLOCK + 5513), fromBb);
    }
    assertArrayEquals(data, got);
    byte[] byStock = new byte[data.length];
    try (FSDataInputStream in = stock.open(p)) {
      in.readFully(byStock);
    }
    assertArrayEquals(byStock, got, "what stock reads");
    assertEquals(data.length + 777 + 5000, fs.localBytesRead() - local0, "every byte by short-circuit");
    assertEquals(rdma0, fs.rdmaBytesRead(), "nothing over the transport");
    assertTrue(granted() - granted0 >= 4, "each of the 4 blocks' files handed over: " + (granted() - granted0));
  }

  /** Appending to a file read before: the new replicas (new generation stamp, longer) are read whole. */
  @Test
  void aFileAppendedToIsReadWholeAgain() throws Exception {
    byte[] first = PluginCluster.random(BLOCK / 2 + 100, 31);
    byte[] more = PluginCluster.random(BLOCK, 32);
    Path p = writeStock("/local/append", first);
    byte[] got = new byte[first.length];
    try (FSDataInputStream in = fs.open(p)) {
      in.readFully(got);
    }
    assertArrayEquals(first, got);
    try (FSDataOutputStream out = stock.append(p)) {
      out.write(more);
    }
    DFSTestUtil.waitReplication(stock, p, (short) 3);
    byte[] all = new byte[first.length + more.length];
    System.arraycopy(first, 0, all, 0, first.length);
    System.arraycopy(more, 0, all, first.length, more.length);
    long local0 = fs.localBytesRead();
    byte[] again = new byte[all.length];
    try (FSDataInputStream in = fs.open(p)) {
      in.readFully(again);
    }
    assertArrayEquals(all, again);
    assertEquals(all.length, fs.localBytesRead() - local0, "by short-circuit, the appended block included");
  }

  /**
   * The token is checked as for a read: one with a wrong password, one for
   * another block, an expired one and none at all are refused
   * (InvalidBlockTokenException), counted, and nothing is handed over.
   */
  @Test
  void aBadTokenIsRefused() throws Exception {
    Path a = writeStock("/local/token-a", PluginCluster.random(1000, 41));
    Path b = writeStock("/local/token-b", PluginCluster.random(1000, 42));
    LocatedBlock la = stock.getClient().getLocatedBlocks(a.toString(), 0).get(0);
    LocatedBlock lbB = stock.getClient().getLocatedBlocks(b.toString(), 0).get(0);
    DatanodeInfo dn = la.getLocations()[0];
    Token<BlockTokenIdentifier> good = la.getBlockToken();
    byte[] pw = good.getPassword().clone();
    pw[0] ^= 1;
    BlockTokenIdentifier id = good.decodeIdentifier();
    id.setExpiryDate(System.currentTimeMillis() - 60_000);
    List<Token<BlockTokenIdentifier>> bad = List.of(
        new Token<>(good.getIdentifier(), pw, good.getKind(), good.getService()),
        lbB.getBlockToken(),
        new Token<>(id.getBytes(), good.getPassword(), good.getKind(), good.getService()),
        new Token<>());
    for (Token<BlockTokenIdentifier> t : bad) {
      long refused0 = refused();
      long granted0 = granted();
      LocatedBlock withBad = new LocatedBlock(la.getBlock(), la.getLocations());
      withBad.setBlockToken(t);
      InvalidBlockTokenException e = assertThrows(InvalidBlockTokenException.class,
          () -> fs.blockClient().openLocal(withBad, dn, 0, 1000).close(), "token " + t);
      assertTrue(e.getMessage().contains("Block token verification failed"), e.getMessage());
      assertEquals(refused0 + 1, refused());
      assertEquals(granted0, granted());
    }
    try (BlockReader r = fs.blockClient().openLocal(la, dn, 0, 1000)) {
      assertEquals(1000, r.remaining(), "the good token is accepted");
    }
  }

  /**
   * The client opens no file under the DataNodes' data directories itself: it
   * only maps what the DataNode passed. (Tests run as root, whom no file mode
   * stops, so a reader that opened the files by path would pass a permission
   * test here: instead every open this thread asks the JVM for is watched.)
   */
  @Test
  void theClientOpensNothingUnderTheDataDirectories() throws Exception {
    byte[] data = PluginCluster.random(BLOCK + 500, 43);
    Path p = writeStock("/local/no-paths", data);
    java.nio.file.Path dataDir = java.nio.file.Path.of(cluster.getDataDirectory()).toAbsolutePath().normalize();
    Thread me = Thread.currentThread();
    List<String> opened = java.util.Collections.synchronizedList(new ArrayList<>());
    long local0 = fs.localBytesRead();
    byte[] got = new byte[data.length];
    SecurityManager watcher = new SecurityManager() {
      @Override
      public void checkPermission(java.security.Permission perm) {
        // everything is allowed: this only watches
      }

      @Override
      public void checkPermission(java.security.Permission perm, Object context) {
      }

      @Override
      public void checkRead(String file) {
        if (Thread.currentThread() == me && java.nio.file.Path.of(file).toAbsolutePath().normalize()
            .startsWith(dataDir)) {
          opened.add(file);
        }
      }
    };
    LocatedBlock lb = stock.getClient().getLocatedBlocks(p.toString(), 0).get(0);
    String blockFile = LocalReadFixture.files(cluster, lb.getLocations()[0], lb).getBlockPath();
    try (FSDataInputStream in = fs.open(p)) {
      System.setSecurityManager(watcher);
      try {
        // the watcher sees an open by path, as the reader that was given paths did
        java.nio.channels.FileChannel.open(java.nio.file.Path.of(blockFile)).close();
        assertEquals(List.of(blockFile), List.copyOf(opened), "the watcher works");
        opened.clear();
        in.readFully(got);
      } finally {
        System.setSecurityManager(null);
      }
    }
    assertArrayEquals(data, got);
    assertEquals(data.length, fs.localBytesRead() - local0, "by short-circuit");
    assertEquals(List.of(), opened, "files the client opened under " + dataDir);
  }

  private static void writeFrame(java.nio.channels.SocketChannel ch, byte[] body) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(4 + body.length).putInt(body.length).put(body).flip();
    while (b.hasRemaining()) {
      ch.write(b);
    }
  }

  /** The reply frame, or null when the DataNode closed the socket first. */
  private static org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto readReply(
      java.nio.channels.SocketChannel ch) throws IOException {
    ByteBuffer len = ByteBuffer.allocate(4);
    while (len.hasRemaining()) {
      if (ch.read(len) < 0) {
        return null;
      }
    }
    ByteBuffer body = ByteBuffer.allocate(len.flip().getInt());
    while (body.hasRemaining()) {
      if (ch.read(body) < 0) {
        return null;
      }
    }
    return org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto.parseFrom(body.array());
  }

  /**
   * Hostile peers on the socket: garbage is an ERROR_INVALID, an oversized
   * frame closes the connection, and a peer that is granted the files but
   * never sends the go-ahead is cut off after the timeout with the files the
   * DataNode had opened for it closed again; the server serves on.
   */
  @Test
  void badAndSlowPeersOnTheSocketCostNothing() throws Exception {
    byte[] data = PluginCluster.random(1000, 45);
    Path p = writeStock("/local/hostile", data);
    LocatedBlock lb = stock.getClient().getLocatedBlocks(p.toString(), 0).get(0);
    DatanodeInfo dn = lb.getLocations()[0];
    java.net.UnixDomainSocketAddress addr = java.net.UnixDomainSocketAddress.of(
        ShortCircuitSocket.path(local.clientConf(cluster, true, WINDOW, AHEAD), dn.getXferPort()));
    try (java.nio.channels.SocketChannel ch = java.nio.channels.SocketChannel.open(addr)) {
      writeFrame(ch, new byte[] {1, 2, 3, 4, 5});
      var r = readReply(ch);
      assertEquals(org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status.ERROR_INVALID, r.getStatus(),
          r.toString());
      assertEquals(-1, ch.read(ByteBuffer.allocate(1)), "closed after the error");
    }
    try (java.nio.channels.SocketChannel ch = java.nio.channels.SocketChannel.open(addr)) {
      ByteBuffer huge = ByteBuffer.allocate(4).putInt(1 << 30).flip();
      ch.write(huge);
      assertEquals(-1, ch.read(ByteBuffer.allocate(1)), "an oversized frame closes the connection");
    }
    String blockFile = LocalReadFixture.files(cluster, dn, lb).getBlockPath();
    long before = PluginCluster.descriptorsOf(blockFile);
    try (java.nio.channels.SocketChannel ch = java.nio.channels.SocketChannel.open(addr)) {
      writeFrame(ch, ShortCircuitSocket.request(lb.getBlock(), lb.getBlockToken()).toByteArray());
      assertEquals(org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status.SUCCESS, readReply(ch).getStatus());
      assertEquals(before + 1, PluginCluster.descriptorsOf(blockFile), "opened for the peer, waiting for its go-ahead");
      long t0 = System.nanoTime();
      assertEquals(-1, ch.read(ByteBuffer.allocate(1)), "cut off after the timeout");
      assertTrue(System.nanoTime() - t0 >= (SCR_TIMEOUT_MS - 500) * 1_000_000L);
    }
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (PluginCluster.descriptorsOf(blockFile) != before && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertEquals(before, PluginCluster.descriptorsOf(blockFile), "the files opened for it are closed");
    try (BlockReader r = fs.blockClient().openLocal(lb, dn, 0, 1000)) {
      byte[] got = new byte[1000];
      r.readFully(got, 0, 1000);
      assertArrayEquals(data, got, "and the server serves on");
    }
  }

  /** No socket where the client looks: it reads over the transport, counted, and stops trying that DataNode. */
  @Test
  void withoutTheSocketTheClientReadsOverTheTransport() throws Exception {
    byte[] data = PluginCluster.random(BLOCK, 44);
    Path p = writeStock("/local/no-socket", data);
    Configuration c = local.clientConf(cluster, true, WINDOW, AHEAD);
    c.set(ShortCircuitSocket.PATH_KEY, local.socketDir.resolve("nobody-listens-_PORT.sock").toString());
    try (RdmaDistributedFileSystem other = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c)) {
      byte[] got = new byte[data.length];
      try (FSDataInputStream in = other.open(p)) {
        in.readFully(got);
      }
      assertArrayEquals(data, got);
      assertEquals(0, other.localBytesRead());
      assertEquals(data.length, other.rdmaBytesRead());
      assertEquals(1, other.localFallbacks(), "one try, then that DataNode is read over the transport");
    }
  }

  /**
   * The plugin gives the files of finalized replicas only: a block still
   * being written is refused (files under construction are read by the stock
   * stream anyway, see RdmaDistributedFileSystem#open), a finalized one of the
   * same file is served.
   */
  @Test
  void onlyFinalizedReplicasAreGivenOut() throws Exception {
    byte[] data = PluginCluster.random(BLOCK + 4000, 12);
    Path p = new Path("/local/open");
    try (FSDataOutputStream out = stock.create(p, (short) 3)) {
      out.write(data);
      out.hflush(); // the second block is visible but not finalized
      List<LocatedBlock> blocks = stock.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks();
      LocatedBlock open = blocks.get(1);
      long refused0 = refused();
      IOException e = assertThrows(IOException.class,
          () -> fs.blockClient().openLocal(open, open.getLocations()[0], 0, 4000).close());
      assertTrue(e.getMessage().contains("no finalized replica"), e.getMessage());
      assertEquals(refused0 + 1, refused());
      LocatedBlock done = blocks.get(0);
      byte[] got = new byte[BLOCK];
      try (BlockReader r = fs.blockClient().openLocal(done, done.getLocations()[0], 0, BLOCK)) {
        r.readFully(got, 0, BLOCK);
        assertEquals(0, r.remaining());
      }
      assertArrayEquals(java.util.Arrays.copyOf(data, BLOCK), got);
    }
  }

  @Test
  void corruptReplicasAreDetectedAndTheGoodOneServes() throws Exception {
    byte[] data = PluginCluster.random(BLOCK / 2, 13);
    Path good = writeStock("/local/corrupt2", data);
    LocatedBlock lb = stock.getClient().getLocatedBlocks(good.toString(), 0).get(0);
    LocalReadFixture.flip(cluster, lb.getLocations()[0], lb, 1000);
    LocalReadFixture.flip(cluster, lb.getLocations()[1], lb, 70_000);
    byte[] got = new byte[data.length];
    try (FSDataInputStream in = fs.open(good)) {
      in.readFully(got);
    }
    assertArrayEquals(data, got, "served by the one good replica");

    Path bad = writeStock("/local/corrupt3", data);
    LocatedBlock lb3 = stock.getClient().getLocatedBlocks(bad.toString(), 0).get(0);
    for (DatanodeInfo dn : lb3.getLocations()) {
      LocalReadFixture.flip(cluster, dn, lb3, 5000);
    }
    long rdma0 = fs.rdmaBytesRead();
    try (FSDataInputStream in = fs.open(bad)) {
      assertThrows(ChecksumException.class, () -> in.readFully(new byte[data.length]));
    }
    assertEquals(rdma0, fs.rdmaBytesRead(), "the short-circuit reader itself found every bad chunk");
  }

  /**
   * A chunk gone bad in a window the verifier checked ahead: the bytes before
   * its window are handed out, then the caller gets the ChecksumException at
   * the bad chunk's position, on this read and every later one, and no byte
   * of that window.
   */
  @Test
  void aWindowVerifiedAheadThatFailsIsTheCallersChecksumExceptionAtItsChunk() throws Exception {
    byte[] data = PluginCluster.random(BLOCK, 21);
    Path p = writeStock("/local/ahead", data);
    LocatedBlock lb = stock.getClient().getLocatedBlocks(p.toString(), 0).get(0);
    DatanodeInfo dn = lb.getLocations()[0];
    int bad = 2 * WINDOW + 1234;
    LocalReadFixture.flip(cluster, dn, lb, bad);
    try (LocalBlockReader r = (LocalBlockReader) fs.blockClient().openLocal(lb, dn, 0, BLOCK)) {
      byte[] got = new byte[2 * WINDOW];
      r.readFully(got, 0, WINDOW); // window 0; windows 1 to AHEAD are the verifier's now
      LocalBlockReader.Window w2 = r.queuedWindows().get(1);
      assertEquals(2 * WINDOW, w2.start);
      w2.awaitVerified();
      assertTrue(w2.verifiedBy().getName().startsWith(RdmaBlockClient.VERIFIER_THREAD_PREFIX),
          "verified ahead, by " + w2.verifiedBy());
      r.readFully(got, WINDOW, WINDOW); // window 1 is good
      assertArrayEquals(Arrays.copyOf(data, 2 * WINDOW), got);
      ChecksumException e = assertThrows(ChecksumException.class, () -> r.read(new byte[10], 0, 10));
      assertEquals(bad / PluginCluster.BPC * PluginCluster.BPC, e.getPos());
      assertEquals(BLOCK - 2 * WINDOW, r.remaining(), "no byte of the bad window handed out");
      ChecksumException again = assertThrows(ChecksumException.class, () -> r.read(ByteBuffer.allocate(10)));
      assertEquals(e.getPos(), again.getPos());
    }
  }

  /**
   * The replica being read goes bad beyond the windows made so far: when the
   * stream reaches the window (verified ahead), it reads the rest from another
   * replica, byte-identical, and reports the bad one once.
   */
  @Test
  void aReplicaFoundBadAheadIsLeftForAnotherAndReported() throws Exception {
    byte[] data = PluginCluster.random(2 * BLOCK, 22);
    Path p = writeStock("/local/ahead-stream", data);
    long errors0 = fs.checksumErrors();
    long reported0 = fs.badReplicasReported();
    long local0 = fs.localBytesRead();
    byte[] got = new byte[data.length];
    try (FSDataInputStream in = fs.open(p)) {
      in.readFully(got, 0, 100);
      DatanodeInfo dn = ((RdmaInputStream) in.getWrappedStream()).currentDataNode();
      LocatedBlock lb = stock.getClient().getLocatedBlocks(p.toString(), 0).get(0);
      LocalReadFixture.flip(cluster, dn, lb, (2L + AHEAD) * WINDOW + 77); // no window made there yet
      in.readFully(got, 100, data.length - 100);
    }
    assertArrayEquals(data, got);
    assertEquals(errors0 + 1, fs.checksumErrors());
    assertEquals(reported0 + 1, fs.badReplicasReported());
    assertEquals(data.length, fs.localBytesRead() - local0, "every byte by short-circuit, from two replicas");
  }

  /**
   * close() with windows out: those nobody started are withdrawn (a verifier
   * running them later does nothing), one being verified is waited for; the
   * reader fails every read afterwards. The verifier here holds the windows
   * until the test runs them.
   */
  @Test
  void closeWithWindowsOutWithdrawsThemAndTheReaderFailsAfterwards() throws Exception {
    byte[] data = PluginCluster.random(BLOCK, 23);
    Path p = writeStock("/local/close", data);
    LocatedBlock lb = stock.getClient().getLocatedBlocks(p.toString(), 0).get(0);
    BlockLocalPathInfo f = LocalReadFixture.files(cluster, lb.getLocations()[0], lb);
    List<Runnable> held = new ArrayList<>();
    // the reader takes the descriptors over: the .meta file's closed once its sums are read
    LocalBlockReader r = new LocalBlockReader(lb.getBlock(), NativeFiles.adopt(NativeFiles.openForPassing(
        f.getBlockPath())), NativeFiles.adopt(NativeFiles.openForPassing(f.getMetaPath())), BLOCK, 0, BLOCK, WINDOW,
        held::add, AHEAD, true, 0);
    assertEquals(1, NativeFiles.fdsHeld(), "the block file stays open, the .meta file is closed");
    assertEquals(0, NativeFiles.mappedBytes(), "nothing mapped");
    byte[] got = new byte[100];
    r.readFully(got, 0, got.length); // the caller verified window 0 itself: the verifier had not started it
    assertArrayEquals(Arrays.copyOf(data, 100), got);
    List<LocalBlockReader.Window> out = r.queuedWindows();
    // windows 1 to AHEAD: the next batch is made once half the lead is read
    assertEquals(AHEAD, out.size());
    assertEquals(AHEAD + 1, held.size(), "window 0 and the ones ahead were handed to the verifier");
    Thread running = new Thread(held.get(1)); // window 1: verifying, or verified, when close() runs
    running.start();
    r.close();
    for (LocalBlockReader.Window w : out) {
      assertFalse(w.isRunning(), "close() returned while " + w.start + " was being verified");
    }
    running.join();
    for (Runnable w : held) {
      w.run(); // the verifier gets to them after close(): nothing happens
    }
    for (LocalBlockReader.Window w : out.subList(1, out.size())) {
      assertFalse(w.isVerified(), "window " + w.start + " was verified after close()");
      assertNull(w.verifiedBy());
    }
    IOException e = assertThrows(IOException.class, () -> r.read(new byte[10], 0, 10));
    assertTrue(e.getMessage().contains("closed"), e.getMessage());
    assertThrows(IOException.class, () -> r.read(ByteBuffer.allocate(10)));
    r.close(); // idempotent
  }

  /**
   * A cold block file: the reader asks the kernel to read ahead of it (MADV_WILLNEED), so the
   * pages beyond the first window arrive in the page cache before anything faults on them (the
   * verifier here holds its windows, the caller has read nothing); without read-ahead they do
   * not. Either way the bytes read are the block's.
   */
  @Test
  void aColdBlockIsReadAheadOfTheReaderAndReadsBack() throws Exception {
    byte[] data = PluginCluster.random(BLOCK, 29);
    Path p = writeStock("/local/cold", data);
    LocatedBlock lb = stock.getClient().getLocatedBlocks(p.toString(), 0).get(0);
    BlockLocalPathInfo f = LocalReadFixture.files(cluster, lb.getLocations()[0], lb);
    java.nio.file.Path blk = java.nio.file.Path.of(f.getBlockPath());
    for (long readAhead : new long[] {0, BLOCK}) {
      try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(blk);
          org.hdfsrdma.nativelib.NativeDisk.File nf = org.hdfsrdma.nativelib.NativeDisk.File.open(blk, 0)) {
        ch.force(false);
        nf.dropCache(0, 0, false);
        assertFalse(tailLoaded(ch), "the page cache was dropped");
        List<Runnable> held = new ArrayList<>();
        LocalBlockReader r = new LocalBlockReader(lb.getBlock(), NativeFiles.adopt(NativeFiles.openForPassing(
            f.getBlockPath())), NativeFiles.adopt(NativeFiles.openForPassing(f.getMetaPath())), BLOCK, 0, BLOCK,
            WINDOW, held::add, AHEAD, true, readAhead);
        try {
          long until = System.nanoTime() + 10_000_000_000L;
          boolean loaded = tailLoaded(ch);
          while (!loaded && readAhead > 0 && System.nanoTime() < until) {
            Thread.sleep(20);
            loaded = tailLoaded(ch);
          }
          if (readAhead == 0) {
            Thread.sleep(200);
            loaded = tailLoaded(ch);
          }
          assertEquals(readAhead > 0, loaded, "the block's second half in the page cache, read-ahead " + readAhead);
          byte[] got = new byte[BLOCK];
          r.readFully(got, 0, got.length);
          assertArrayEquals(data, got, "read-ahead " + readAhead);
        } finally {
          r.close();
        }
      }
    }
  }

  /** Whether the second half of the file is all in the page cache (mincore, through a mapping nobody touches). */
  private static boolean tailLoaded(java.nio.channels.FileChannel ch) throws IOException {
    return ch.map(java.nio.channels.FileChannel.MapMode.READ_ONLY, BLOCK / 2, BLOCK / 2).isLoaded();
  }

  /** Ranges that start inside a chunk: the bytes from their start; an empty one ends at once. */
  @Test
  void unalignedAndEmptyRanges() throws Exception {
    byte[] data = PluginCluster.random(BLOCK, 26);
    Path p = writeStock("/local/ranges", data);
    LocatedBlock lb = stock.getClient().getLocatedBlocks(p.toString(), 0).get(0);
    DatanodeInfo dn = lb.getLocations()[0];
    try (BlockReader r = fs.blockClient().openLocal(lb, dn, 1000, 0)) {
      assertEquals(0, r.remaining());
      assertEquals(-1, r.read(new byte[10], 0, 10));
    }
    int from = 3 * WINDOW - 7;
    int len = 2 * WINDOW + 20;
    try (BlockReader r = fs.blockClient().openLocal(lb, dn, from, len)) {
      byte[] got = new byte[len];
      r.readFully(got, 0, len);
      assertArrayEquals(Arrays.copyOfRange(data, from, from + len), got);
      assertEquals(0, r.remaining());
      assertEquals(-1, r.read(ByteBuffer.allocate(10)));
    }
  }

  /** Seeks (each dropping a reader with windows out) and unbuffer while reading: the right bytes every time. */
  @Test
  void seeksAndUnbufferWhileWindowsAreVerifiedAheadReadTheRightBytes() throws Exception {
    byte[] data = PluginCluster.random(2 * BLOCK + 5000, 24);
    Path p = writeStock("/local/seeks", data);
    Random rnd = new Random(24);
    byte[] b = new byte[3 * WINDOW + 100];
    try (FSDataInputStream in = fs.open(p)) {
      for (int i = 0; i < 200; i++) {
        int at = rnd.nextInt(data.length - b.length);
        in.seek(at);
        in.readFully(b);
        assertArrayEquals(Arrays.copyOfRange(data, at, at + b.length), b, "at " + at);
        if (i % 7 == 0) {
          in.unbuffer();
        }
      }
    }
  }

  /** The client's verifier threads end when the client is closed. */
  @Test
  void theVerifierEndsWithTheClient() throws Exception {
    byte[] data = PluginCluster.random(BLOCK, 25);
    Path p = writeStock("/local/verifier", data);
    RdmaDistributedFileSystem other = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(),
        local.clientConf(cluster, true, WINDOW, AHEAD));
    RdmaBlockClient client;
    try {
      byte[] got = new byte[data.length];
      try (FSDataInputStream in = other.open(p)) {
        in.readFully(got);
      }
      assertArrayEquals(data, got);
      client = other.blockClient();
      assertTrue(client.verifierThreadsStarted() > 0, "the verifier was used");
    } finally {
      other.close();
    }
    assertTrue(client.awaitVerifierTermination(60_000), "verifier threads left after close");
  }
}
