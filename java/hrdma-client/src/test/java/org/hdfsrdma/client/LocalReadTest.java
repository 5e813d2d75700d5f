package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * Short-circuit reads ({@code hrdma.client.read.local=true}) on a
 * MiniDFSCluster whose DataNodes all run on this host: finalized replicas are
 * read from their files after the plugin checked the token, byte-identical,
 * checksums verified; a block still being written is read over hrdma.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class LocalReadTest {
  private static final int BLOCK = PluginCluster.BLOCK;

  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private RdmaDistributedFileSystem fs;

  @BeforeAll
  void start() throws Exception {
    cluster = PluginCluster.start(PluginCluster.baseConf(), getClass(), 3);
    stock = cluster.getFileSystem();
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    c.setBoolean(RdmaBlockClient.LOCAL_READS_KEY, true);
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
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
    assertEquals(data.length + 777 + 5000, fs.localBytesRead() - local0, "every byte by short-circuit");
    assertEquals(rdma0, fs.rdmaBytesRead(), "nothing over the transport");
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
      IOException e = assertThrows(IOException.class,
          () -> fs.blockClient().openLocal(open, open.getLocations()[0], 0, 4000).close());
      assertTrue(e.getMessage().contains("no finalized replica"), e.getMessage());
      LocatedBlock done = blocks.get(0);
      byte[] got = new byte[BLOCK];
      try (BlockReader r = fs.blockClient().openLocal(done, done.getLocations()[0], 0, BLOCK)) {
        r.readFully(got, 0, BLOCK);
        assertEquals(0, r.remaining());
      }
      assertArrayEquals(java.util.Arrays.copyOf(data, BLOCK), got);
    }
  }

  /** Flips one byte of {@code lb}'s replica on {@code dn} (found through that DataNode's own dataset). */
  private void flip(DatanodeInfo dn, LocatedBlock lb, long at) throws IOException {
    for (DataNode d : cluster.getDataNodes()) {
      if (d.getDatanodeUuid().equals(dn.getDatanodeUuid())) {
        File f = new File(d.getFSDataset().getBlockLocalPathInfo(lb.getBlock()).getBlockPath());
        try (RandomAccessFile raf = new RandomAccessFile(f, "rw")) {
          raf.seek(at);
          int v = raf.read();
          raf.seek(at);
          raf.write(v ^ 0x01);
        }
        return;
      }
    }
    throw new AssertionError("no DataNode " + dn);
  }

  @Test
  void corruptReplicasAreDetectedAndTheGoodOneServes() throws Exception {
    byte[] data = PluginCluster.random(BLOCK / 2, 13);
    Path good = writeStock("/local/corrupt2", data);
    LocatedBlock lb = stock.getClient().getLocatedBlocks(good.toString(), 0).get(0);
    flip(lb.getLocations()[0], lb, 1000);
    flip(lb.getLocations()[1], lb, 70_000);
    byte[] got = new byte[data.length];
    try (FSDataInputStream in = fs.open(good)) {
      in.readFully(got);
    }
    assertArrayEquals(data, got, "served by the one good replica");

    Path bad = writeStock("/local/corrupt3", data);
    LocatedBlock lb3 = stock.getClient().getLocatedBlocks(bad.toString(), 0).get(0);
    for (DatanodeInfo dn : lb3.getLocations()) {
      flip(dn, lb3, 5000);
    }
    long rdma0 = fs.rdmaBytesRead();
    try (FSDataInputStream in = fs.open(bad)) {
      assertThrows(ChecksumException.class, () -> in.readFully(new byte[data.length]));
    }
    assertEquals(rdma0, fs.rdmaBytesRead(), "the short-circuit reader itself found every bad chunk");
  }
}
