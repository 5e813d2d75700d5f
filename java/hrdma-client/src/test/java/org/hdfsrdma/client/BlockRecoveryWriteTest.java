package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.zip.CRC32C;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.util.DataChecksum;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A block recovery stops our writes as stock's stops its writers
 * ({@code ReplicaInPipeline#stopWriter}): the NameNode recovering the lease of a file our
 * stream still writes, every DataNode of the pipeline stops the write before recovering its
 * replica, so the stream's next write or hflush fails (its pipeline recovery is refused: the
 * lease is gone) and no packet sent after the recovery reaches a replica: each stays at the
 * recovered length, its checksums valid, and the file reads back as written up to that length.
 */
@Timeout(240)
class BlockRecoveryWriteTest {
  private MiniDFSCluster cluster;
  private RdmaDistributedFileSystem fs;

  @AfterEach
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  @Test
  void aRecoveredLeaseStopsOurWriteAndLeavesEveryReplicaWhole() throws Exception {
    cluster = PluginCluster.start(PluginCluster.baseConf(), getClass(), 3);
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
    Path p = new Path("/recovery/stopped");
    byte[] a = PluginCluster.random(5000 + 37, 1); // ends inside a chunk, as TestLeaseRecovery2's
    byte[] b = PluginCluster.random(3000, 2);
    FSDataOutputStream out = fs.create(p, (short) 3);
    assertInstanceOf(RdmaOutputStream.class, out.getWrappedStream(), "the file is written by our stream");
    out.write(a);
    out.hflush();

    // another client takes the lease: the NameNode recovers the open block now
    DistributedFileSystem other = cluster.getFileSystem();
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (!other.recoverLease(p)) {
      assertTrue(System.nanoTime() < deadline, "the lease of " + p + " was not recovered");
      Thread.sleep(200);
    }
    assertEquals(a.length, other.getFileStatus(p).getLen());

    // the writer lost its lease: its next write or flush fails (our stream, having no streamer
    // thread, finds its pipeline gone and recovers it when it next writes; the NameNode refuses),
    // and its data goes to no replica
    IOException failed = null;
    try {
      out.write(b);
      out.hflush();
    } catch (IOException e) {
      failed = e;
    }
    try {
      out.close();
    } catch (IOException expected) {
      // the stream failed already
    }
    Thread.sleep(1000); // a packet that got through would be on the DataNodes' disks by now

    assertEquals(a.length, other.getFileStatus(p).getLen());
    assertArrayEquals(a, PluginCluster.readWhole(other, p), "the file as the stock client reads it");
    assertArrayEquals(a, PluginCluster.readWhole(fs, p), "the file as our client reads it");
    LocatedBlock lb = other.getClient().getLocatedBlocks(p.toString(), 0).getLastLocatedBlock();
    assertEquals(3, lb.getLocations().length);
    for (DatanodeInfo dn : lb.getLocations()) {
      assertReplicaWhole(dn, lb, a);
    }
    assertNotNull(failed, "flushed after the lease was recovered");
    // the threads that stood for the write as its replicas' writer ended with it
    String blk = "blk_" + lb.getBlock().getBlockId() + "_";
    assertTrue(Thread.getAllStackTraces().keySet().stream().noneMatch(t -> t.isAlive()
        && t.getName().startsWith("hrdma-writer-") && t.getName().contains(blk)), "a writer thread of " + blk
        + " outlived its write");
  }

  /** {@code dn}'s replica of {@code lb}'s block holds {@code want}, each chunk matching its checksum. */
  private void assertReplicaWhole(DatanodeInfo dn, LocatedBlock lb, byte[] want) throws IOException {
    int len = want.length;
    File block = PluginCluster.blockFile(cluster, dn, lb.getBlock());
    File[] metas = block.getParentFile().listFiles((d, n) -> n.startsWith(block.getName() + "_")
        && n.endsWith(".meta"));
    assertEquals(1, metas.length, "the .meta files of " + block);
    byte[] data = Files.readAllBytes(block.toPath());
    byte[] meta = Files.readAllBytes(metas[0].toPath());
    assertEquals(len, data.length, "the length of " + dn + "'s replica " + block);
    ByteBuffer header = ByteBuffer.wrap(meta);
    assertEquals(1, header.getShort(), "the .meta version");
    assertEquals(DataChecksum.Type.CRC32C.id, header.get(), "the checksum type");
    int bpc = header.getInt();
    int chunks = (len + bpc - 1) / bpc;
    assertEquals(7 + 4 * chunks, meta.length, "the .meta length of " + dn + "'s replica " + block);
    for (int i = 0; i < chunks; i++) {
      CRC32C crc = new CRC32C();
      crc.update(data, i * bpc, Math.min(bpc, len - i * bpc));
      assertEquals((int) crc.getValue(), header.getInt(), "the checksum of chunk " + i + " of " + dn
          + "'s replica " + block);
    }
    assertArrayEquals(want, data, "the data of " + dn + "'s replica " + block);
  }
}
