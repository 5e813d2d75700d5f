package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.io.IOException;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * {@code seekToNewSource} as the stock stream answers it (Hadoop's
 * TestBlockTokenWithDFS#testRead calls it again and again on one stream): each
 * call moves to another replica when there is one and says so, the replica
 * left is out of that one choice only, so the stream can come back to it, and
 * a block with one replica gives false and reads on.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class SeekToNewSourceTest {
  private static final int BLOCK = PluginCluster.BLOCK;

  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private RdmaDistributedFileSystem ours;

  @BeforeAll
  void start() throws Exception {
    cluster = PluginCluster.start(PluginCluster.baseConf(), getClass(), 2);
    stock = cluster.getFileSystem();
    ours = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), PluginCluster.rdmaClientConf(cluster));
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(ours, cluster);
  }

  private byte[] write(String name, int size, short replication) throws Exception {
    byte[] data = PluginCluster.random(size, name.hashCode());
    Path p = new Path(name);
    try (FSDataOutputStream out = stock.create(p, true, 4096, replication, BLOCK)) {
      out.write(data);
    }
    DFSTestUtil.waitReplication(stock, p, replication);
    return data;
  }

  private static byte[] readFrom0(HdfsDataInputStream in, int size) throws IOException {
    in.seek(0);
    byte[] got = new byte[size];
    int off = 0;
    while (off < size) {
      int n = in.read(got, off, size - off);
      if (n < 0) {
        break;
      }
      off += n;
    }
    assertEquals(size, off);
    return got;
  }

  /** The calls and answers of one stream, as the test drives both file systems: they must agree. */
  private String drive(FileSystem fs, String name, int size, byte[] data) throws IOException {
    StringBuilder answers = new StringBuilder();
    try (HdfsDataInputStream in = (HdfsDataInputStream) fs.open(new Path(name))) {
      assertArrayEquals(data, readFrom0(in, size), fs.getClass().getSimpleName());
      for (int round = 0; round < 4; round++) {
        in.seek(0);
        in.read(); // the current replica is that of block 0
        DatanodeInfo before = in.getCurrentDatanode();
        assertNotNull(before);
        boolean moved = in.seekToNewSource(0);
        answers.append(moved).append(' ');
        if (moved) {
          assertNotEquals(before.getDatanodeUuid(), in.getCurrentDatanode().getDatanodeUuid(),
              fs.getClass().getSimpleName() + " round " + round + ": true, yet on the same DataNode");
        }
        assertArrayEquals(data, readFrom0(in, size), fs.getClass().getSimpleName() + " round " + round);
      }
    }
    return answers.toString();
  }

  @Test
  void everyCallMovesToTheOtherReplicaAndTheStreamReadsOn() throws Exception {
    int size = 2 * BLOCK + 77;
    byte[] data = write("/seek-new/two", size, (short) 2);
    long fallbacks = ours.stockFallbacks();
    String want = drive(stock, "/seek-new/two", size, data);
    assertEquals("true true true true ", want, "stock's answers");
    assertEquals(want, drive(ours, "/seek-new/two", size, data));
    assertEquals(fallbacks, ours.stockFallbacks(), "nothing went to the stock path");
  }

  @Test
  void aSingleReplicaGivesFalseAndTheStreamReadsOn() throws Exception {
    int size = BLOCK + 5;
    byte[] data = write("/seek-new/one", size, (short) 1);
    String want = drive(stock, "/seek-new/one", size, data);
    assertEquals("false false false false ", want, "stock's answers");
    assertEquals(want, drive(ours, "/seek-new/one", size, data));
  }
}
