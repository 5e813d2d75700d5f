package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.GlobalStorageStatistics;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSClientFaultInjector;
import org.apache.hadoop.hdfs.DFSOpsCountStatistics;
import org.apache.hadoop.hdfs.DFSOutputStream;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.client.HdfsDataOutputStream;
import org.apache.hadoop.hdfs.client.HdfsDataOutputStream.SyncFlag;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;
import org.hdfsrdma.protocol.RdmaPorts;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * Our output stream as the stock DFSOutputStream behaves for applications and
 * Hadoop's own tests: the HdfsDataOutputStream API, many threads on one
 * stream, close racing hflush, interrupts, lazy block allocation, the
 * fallback that keeps the file, the stock client's fault injector.
 * A MiniDFSCluster of three DataNodes with the plugin.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(240)
class WriteCompatTest {
  private static final int BLOCK = PluginCluster.BLOCK;

  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private RdmaDistributedFileSystem fs;

  /** The cluster's settings (a subclass runs the same tests on other ones). */
  Configuration conf() {
    return PluginCluster.baseConf();
  }

  @BeforeAll
  void start() throws Exception {
    cluster = PluginCluster.start(conf(), getClass(), 3);
    stock = cluster.getFileSystem();
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), PluginCluster.rdmaClientConf(cluster));
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  private static byte[] readAll(FileSystem f, Path p) throws IOException {
    byte[] got = new byte[(int) f.getFileStatus(p).getLen()];
    try (FSDataInputStream in = f.open(p)) {
      in.readFully(got);
    }
    return got;
  }

  private int blocks(Path p) throws IOException {
    LocatedBlocks lb = stock.getClient().getLocatedBlocks(p.toUri().getPath(), 0, Long.MAX_VALUE);
    return lb.locatedBlockCount();
  }

  /**
   * HBase creates with favored nodes, and its write-ahead log with createNonRecursive: both
   * go over hrdma, the blocks land where the NameNode placed them for the favored node, and a
   * missing parent fails as stock's does.
   */
  @Test
  void favoredNodesAndNonRecursiveCreatesGoOverHrdma() throws Exception {
    byte[] data = PluginCluster.random(200_000, 21);
    for (int k = 0; k < 3; k++) {
      org.apache.hadoop.hdfs.server.datanode.DataNode dn = cluster.getDataNodes().get(k);
      Path f = new Path("/compat/favored-" + k);
      long before = fs.rdmaBytesWritten();
      InetSocketAddress favored = InetSocketAddress.createUnresolved("127.0.0.1", dn.getXferPort());
      try (HdfsDataOutputStream out = fs.create(f, null, true, 4096, (short) 1, 1 << 20, null,
          new InetSocketAddress[] {favored})) {
        out.write(data);
      }
      assertEquals(data.length, fs.rdmaBytesWritten() - before, f + " went over hrdma");
      LocatedBlocks lb = stock.getClient().getLocatedBlocks(f.toUri().getPath(), 0, Long.MAX_VALUE);
      assertEquals(dn.getDatanodeUuid(), lb.get(0).getLocations()[0].getDatanodeUuid(), f + " placement");
      assertArrayEquals(data, readAll(stock, f));
    }
    Path orphan = new Path("/compat/no-such-dir/wal");
    assertThrows(java.io.FileNotFoundException.class, () -> fs.createNonRecursive(orphan, null,
        EnumSet.of(org.apache.hadoop.fs.CreateFlag.CREATE), 4096, (short) 2, 1 << 20, null).close());
    assertFalse(stock.exists(orphan.getParent()), "createNonRecursive made the parent");
    Path wal = new Path("/compat/wal");
    long before = fs.rdmaBytesWritten();
    try (FSDataOutputStream out = fs.createNonRecursive(wal, null, EnumSet.of(org.apache.hadoop.fs.CreateFlag.CREATE),
        4096, (short) 2, 1 << 20, null)) {
      assertInstanceOf(HdfsDataOutputStream.class, out);
      out.write(data);
      out.hflush();
    }
    assertEquals(data.length, fs.rdmaBytesWritten() - before, "createNonRecursive went over hrdma");
    assertArrayEquals(data, readAll(stock, wal));
  }

  @Test
  void createReturnsAnHdfsDataOutputStreamWhoseSyncFlagsWork() throws Exception {
    Path p = new Path("/compat/syncflags");
    byte[] data = PluginCluster.random(3000, 1);
    FSDataOutputStream out = fs.create(p, true, 4096, (short) 2, BLOCK);
    HdfsDataOutputStream h = assertInstanceOf(HdfsDataOutputStream.class, out);
    assertInstanceOf(DFSOutputStream.class, h.getWrappedStream());
    assertInstanceOf(RdmaOutputStream.class, h.getWrappedStream());
    h.write(data, 0, 1000);
    h.hsync(EnumSet.of(SyncFlag.UPDATE_LENGTH));
    assertEquals(1000, stock.getFileStatus(p).getLen(), "UPDATE_LENGTH tells the NameNode");
    assertEquals(2, h.getCurrentBlockReplication());
    assertEquals(2, ((DFSOutputStream) h.getWrappedStream()).getPipeline().length);
    h.write(data, 1000, 2000);
    h.hsync(EnumSet.of(SyncFlag.END_BLOCK));
    assertEquals(1, blocks(p));
    h.write(data, 0, 10);
    h.hflush();
    assertEquals(2, blocks(p), "END_BLOCK: the next byte starts a new block");
    h.close();
    assertEquals(3010, stock.getFileStatus(p).getLen());
    LocatedBlocks lb = stock.getClient().getLocatedBlocks(p.toUri().getPath(), 0, Long.MAX_VALUE);
    assertEquals(3000, lb.get(0).getBlockSize());
    assertEquals(0, fs.stockWriteFallbacks());
  }

  /** As stock: hsync tells the NameNode the last block's length with UPDATE_LENGTH, and after a new block. */
  @Test
  void syncAtBlockBoundariesTellsTheNameNodeTheLength() throws Exception {
    int bs = 1024;
    Path p = new Path("/compat/boundaries");
    byte[] data = PluginCluster.random(4 * bs, 6);
    try (FSDataOutputStream out = fs.create(p, true, 4096, (short) 2, bs)) {
      HdfsDataOutputStream h = (HdfsDataOutputStream) out;
      h.write(data, 0, bs); // fills the block exactly: it ends before the hsync
      h.hsync(EnumSet.of(SyncFlag.UPDATE_LENGTH));
      assertEquals(bs, stock.getFileStatus(p).getLen(), "the block that just ended");
      h.write(data, bs, bs / 2);
      h.hsync(EnumSet.of(SyncFlag.END_BLOCK)); // a new block since the last sync: its length goes too
      assertEquals(bs + bs / 2, stock.getFileStatus(p).getLen());
      h.write(data, bs + bs / 2, bs / 4);
      h.hflush(); // a new block again: hflush persists it with its length, as stock
      assertEquals(bs + bs / 2 + bs / 4, stock.getFileStatus(p).getLen());
    }
  }

  @Test
  void aFileWrittenButNotFlushedHasNoBlockYet() throws Exception {
    Path p = new Path("/compat/lazy");
    try (FSDataOutputStream out = fs.create(p, true, 4096, (short) 3, BLOCK)) {
      out.write(PluginCluster.random(32, 2));
      // as stock: the block is allocated when its first packet goes (a lease recovery of
      // this file needs no block recovery until then)
      assertEquals(0, blocks(p));
      out.hflush();
      assertEquals(1, blocks(p));
    }
    assertEquals(32, stock.getFileStatus(p).getLen());
  }

  /**
   * With dfs.client-write-packet-size set (516: one 512-byte chunk a packet, as Hadoop's
   * TestDFSInputStream sets it), bytes written and not flushed reach the DataNodes packet by
   * packet as the stock client's do: a new reader sees them and reads them back.
   */
  @Test
  void anExplicitStockPacketSizeSendsUnflushedBytesAsStockDoes() throws Exception {
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    c.setInt(org.apache.hadoop.hdfs.client.HdfsClientConfigKeys.DFS_CLIENT_WRITE_PACKET_SIZE_KEY, 516);
    Path p = new Path("/compat/small-packets");
    byte[] data = PluginCluster.random(5120, 23);
    try (RdmaDistributedFileSystem small = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
        FSDataOutputStream out = small.create(p, true, 4096, (short) 3, BLOCK)) {
      long before = small.rdmaBytesWritten();
      out.write(data);
      assertEquals(data.length, small.rdmaBytesWritten() - before, "went over hrdma");
      long deadline = System.nanoTime() + 20_000_000_000L;
      long visible;
      while ((visible = visibleLength(p)) < data.length && System.nanoTime() < deadline) {
        Thread.sleep(100);
      }
      assertEquals(data.length, visible, "bytes the DataNodes acknowledged without hflush");
      byte[] got = new byte[1024];
      try (FSDataInputStream in = stock.open(p)) {
        in.readFully(1024, got);
      }
      assertArrayEquals(java.util.Arrays.copyOfRange(data, 1024, 2048), got);
    }
    assertArrayEquals(data, readAll(stock, p));
  }

  /** The length a new stock reader of {@code p} sees (a block being written: its DataNodes' visible length). */
  private long visibleLength(Path p) throws IOException {
    try (FSDataInputStream in = stock.open(p)) {
      return ((org.apache.hadoop.hdfs.client.HdfsDataInputStream) in).getVisibleLength();
    }
  }

  /** Records of (thread, index, crc) from many threads that write and hflush one stream. */
  @Test
  void manyThreadsWriteAndHflushOneStream() throws Exception {
    int threads = 8;
    int perThread = 300;
    int recordBytes = 1000; // records cross packet and chunk boundaries
    Path p = new Path("/compat/threads");
    FSDataOutputStream out = fs.create(p, true, 4096, (short) 3, BLOCK);
    CountDownLatch go = new CountDownLatch(1);
    AtomicReference<Throwable> err = new AtomicReference<>();
    List<Thread> ts = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int id = t;
      Thread th = new Thread(() -> {
        try {
          go.await();
          for (int i = 0; i < perThread; i++) {
            out.write(record(id, i, recordBytes));
            out.hflush();
          }
        } catch (Throwable e) {
          err.compareAndSet(null, e);
        }
      });
      th.start();
      ts.add(th);
    }
    go.countDown();
    for (Thread th : ts) {
      th.join(200_000);
      assertFalse(th.isAlive(), "a writer hangs");
    }
    if (err.get() != null) {
      throw new AssertionError("a writer failed", err.get());
    }
    out.close();
    byte[] all = readAll(stock, p);
    assertEquals((long) threads * perThread * recordBytes, all.length);
    int[] next = new int[threads];
    ByteBuffer b = ByteBuffer.wrap(all);
    while (b.hasRemaining()) {
      byte[] r = new byte[recordBytes];
      b.get(r);
      ByteBuffer rb = ByteBuffer.wrap(r);
      int id = rb.getInt();
      int i = rb.getInt();
      assertTrue(id >= 0 && id < threads, "thread id " + id);
      assertEquals(next[id]++, i, "records of thread " + id + " in order, none lost or torn");
      assertArrayEquals(record(id, i, recordBytes), r);
    }
  }

  private static byte[] record(int id, int i, int n) {
    ByteBuffer b = ByteBuffer.allocate(n);
    b.putInt(id).putInt(i);
    CRC32 c = new CRC32();
    c.update(id * 1_000_003 + i);
    while (b.remaining() >= 8) {
      b.putLong(c.getValue() * (b.position() + 1));
    }
    return b.array();
  }

  @Test
  void hflushersRacingCloseEndWithClosedChannelException() throws Exception {
    Path p = new Path("/compat/close-race");
    FSDataOutputStream out = fs.create(p, true, 4096, (short) 1, BLOCK);
    AtomicReference<Throwable> err = new AtomicReference<>();
    List<Thread> ts = new ArrayList<>();
    for (int t = 0; t < 6; t++) {
      Thread th = new Thread(() -> {
        try {
          while (true) {
            try {
              out.hflush();
            } catch (ClosedChannelException expected) {
              return;
            }
          }
        } catch (Throwable e) {
          err.compareAndSet(null, e);
        }
      });
      th.start();
      ts.add(th);
    }
    for (int i = 0; i < 5000; i++) {
      out.write(i);
    }
    out.close();
    for (Thread th : ts) {
      th.join(60_000);
      assertFalse(th.isAlive(), "an hflush hangs after close");
    }
    assertNull(err.get(), () -> "an hflush failed otherwise: " + err.get());
    assertEquals(5000, stock.getFileStatus(p).getLen());
    assertThrows(ClosedChannelException.class, () -> out.write(1));
  }

  @Test
  void anInterruptedHflushOrCloseLeavesTheStreamIntact() throws Exception {
    Path p = new Path("/compat/interrupted");
    byte[] data = PluginCluster.random(6, 3);
    FSDataOutputStream out = fs.create(p, true, 4096, (short) 3, BLOCK);
    out.write(data, 0, 2);
    Thread.currentThread().interrupt(); // interrupts the NameNode call that allocates the block
    try {
      out.hflush();
      assertTrue(Thread.interrupted(), "returned: the interrupt is still pending");
    } catch (InterruptedIOException e) {
      assertFalse(Thread.interrupted(), "as stock: the status is cleared with the exception");
    }
    out.hflush(); // the pipeline is up: what follows waits for acks only
    out.write(data, 2, 2);
    Thread.currentThread().interrupt();
    try {
      out.hflush();
      assertTrue(Thread.interrupted(), "returned: the interrupt is still pending");
    } catch (InterruptedIOException e) {
      assertFalse(Thread.interrupted(), "as stock: the status is cleared with the exception");
    }
    out.hflush();
    out.write(data, 4, 2);
    Thread.currentThread().interrupt();
    try {
      out.close();
      assertTrue(Thread.interrupted());
    } catch (InterruptedIOException e) {
      assertFalse(Thread.interrupted());
      out.close(); // as stock: the stream is still open, this close completes the file
    }
    assertArrayEquals(data, readAll(stock, p));
  }

  @Test
  void theFirstBlockFallingBackKeepsTheFileItsBytesAndOneCreate() throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0)) {
      closedPort = s.getLocalPort();
    }
    Configuration c = new Configuration(PluginCluster.rdmaClientConf(cluster));
    c.setInt(RdmaPorts.PORT_KEY, closedPort);
    byte[] data = PluginCluster.random(2 * BLOCK + 77, 4);
    Path p = new Path("/compat/fallback");
    try (RdmaDistributedFileSystem wrong = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c)) {
      DFSOpsCountStatistics ops = (DFSOpsCountStatistics) GlobalStorageStatistics.INSTANCE.get(
          DFSOpsCountStatistics.NAME);
      long creates = ops.getLong(DFSOpsCountStatistics.OpType.CREATE.getSymbol());
      FSDataOutputStream out = wrong.create(p, true, 4096, (short) 2, BLOCK);
      long fileId = stock.getClient().getFileInfo(p.toUri().getPath()).getFileId();
      assertEquals(creates + 1, ops.getLong(DFSOpsCountStatistics.OpType.CREATE.getSymbol()));
      for (int off = 0; off < data.length; off += 10_000) {
        out.write(data, off, Math.min(10_000, data.length - off));
      }
      out.hflush();
      out.close();
      assertEquals(1, wrong.stockWriteFallbacks());
      assertEquals(0, wrong.rdmaBytesWritten());
      assertEquals(fileId, stock.getClient().getFileInfo(p.toUri().getPath()).getFileId(),
          "the file is the one created, not deleted and created again");
      assertEquals(creates + 1, ops.getLong(DFSOpsCountStatistics.OpType.CREATE.getSymbol()),
          "one create, as stock");
    }
    assertEquals(data.length, stock.getFileStatus(p).getLen());
    assertArrayEquals(data, readAll(stock, p));
  }

  /** DFSClientFaultInjector as Hadoop's TestCrcCorruption drives it. */
  static final class Corrupter extends DFSClientFaultInjector {
    volatile int corrupt;       // packets still to corrupt
    final boolean uncorrupt;
    volatile int corrupted;

    Corrupter(int corrupt, boolean uncorrupt) {
      this.corrupt = corrupt;
      this.uncorrupt = uncorrupt;
    }

    @Override
    public synchronized boolean corruptPacket() {
      if (corrupt > 0) {
        corrupt--;
        corrupted++;
        return true;
      }
      return false;
    }

    @Override
    public boolean uncorruptPacket() {
      return uncorrupt;
    }
  }

  @Test
  void aPacketCorruptedInFlightIsRefusedAndSentAgain() throws Exception {
    DFSClientFaultInjector old = DFSClientFaultInjector.get();
    byte[] data = PluginCluster.random(BLOCK / 2, 5);
    Path p = new Path("/compat/corrupt-once");
    long recoveries = fs.pipelineRecoveries();
    // replication 2 of 3 DataNodes: the DataNode taken out needs no replacement
    try (FSDataOutputStream out = fs.create(p, true, 4096, (short) 2, BLOCK)) {
      out.write(data, 0, 1000);
      out.hflush();
      Corrupter c = new Corrupter(1, true);
      DFSClientFaultInjector.set(c);
      out.write(data, 1000, data.length - 1000);
      out.hflush();
      assertEquals(1, c.corrupted);
    } finally {
      DFSClientFaultInjector.set(old);
    }
    assertTrue(fs.pipelineRecoveries() > recoveries, "the DataNode refused the packet: a recovery");
    assertArrayEquals(data, readAll(stock, p));

    Path q = new Path("/compat/corrupt-always");
    try {
      DFSClientFaultInjector.set(new Corrupter(1, false));
      FSDataOutputStream out = fs.create(q, true, 4096, (short) 2, BLOCK);
      IOException e = assertThrows(IOException.class, () -> {
        out.write(data);
        out.close();
      });
      System.out.println("expected: " + e);
    } finally {
      DFSClientFaultInjector.set(old);
    }
  }
}
