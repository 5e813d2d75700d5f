package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Arrays;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.ReadStatistics;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.util.DataChecksum;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * A stream opened after {@code setVerifyChecksum(false)} (as {@code hadoop fs -get -ignoreCrc}
 * and HBase's HFile reads open theirs) checks no chunk against its checksum on any of our read
 * paths, as stock's block readers: a file whose every replica is corrupted on disk reads as the
 * bytes on disk, through our readers (no fallback to the stock stream, no checksum error
 * counted), while a stream that verifies (the default) gets the ChecksumException. Over the
 * transport, and over short-circuit reads: the sequential reader with windows verified ahead
 * ({@value #WINDOW} bytes, {@value #AHEAD} ahead), positional reads, and the kept replica of a
 * block no longer than a window.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class SkipChecksumReadTest {
  private static final int BLOCK = PluginCluster.BLOCK;
  private static final int WINDOW = 16 * 1024;
  private static final int AHEAD = 3;

  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private RdmaDistributedFileSystem local;
  private RdmaDistributedFileSystem remote;

  @BeforeAll
  void start() throws Exception {
    LocalReadFixture fixture = new LocalReadFixture("skipcrc-");
    Configuration conf = fixture.clusterConf();
    cluster = PluginCluster.start(conf, getClass(), 3);
    stock = cluster.getFileSystem();
    local = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(),
        fixture.clientConf(cluster, true, WINDOW, AHEAD));
    remote = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(),
        fixture.clientConf(cluster, false, 0, 0));
  }

  @AfterAll
  void stop() throws IOException {
    if (remote != null) {
      remote.close();
    }
    PluginCluster.shutdown(local, cluster);
  }

  /**
   * Writes {@code data} with three replicas and flips the byte at each of {@code at} (file
   * offsets) in every replica; returns the bytes now on disk.
   */
  private byte[] writeCorrupted(Path p, byte[] data, long... at) throws Exception {
    try (FSDataOutputStream out = stock.create(p, (short) 3)) {
      out.write(data);
    }
    DFSTestUtil.waitReplication(stock, p, (short) 3);
    byte[] onDisk = data.clone();
    for (long a : at) {
      LocatedBlock lb = stock.getClient().getLocatedBlocks(p.toString(), a).get(0);
      for (DatanodeInfo dn : lb.getLocations()) {
        LocalReadFixture.flip(cluster, dn, lb, a - lb.getStartOffset());
      }
      onDisk[(int) a] ^= 0x01;
    }
    assertFalse(Arrays.equals(data, onDisk));
    return onDisk;
  }

  /**
   * Reads {@code p} with {@code fs}: a verifying stream fails with a ChecksumException, one
   * opened with checksums skipped returns {@code onDisk} (sequentially, then positionally) from
   * our readers; returns that stream's read statistics.
   */
  private ReadStatistics readBothWays(RdmaDistributedFileSystem fs, Path p, byte[] onDisk) throws Exception {
    try (FSDataInputStream in = fs.open(p)) {
      assertThrows(ChecksumException.class, () -> in.readFully(new byte[onDisk.length]), "verifying (the default)");
    }
    long stockBytes0 = fs.stockBytesRead();
    long fallbacks0 = fs.stockFallbacks();
    long errors0 = fs.checksumErrors();
    long ours0 = fs.rdmaBytesRead() + fs.localBytesRead();
    fs.setVerifyChecksum(false);
    ReadStatistics stats;
    try (FSDataInputStream in = fs.open(p)) {
      byte[] got = new byte[onDisk.length];
      in.readFully(got);
      assertArrayEquals(onDisk, got, "sequentially: the bytes on disk");
      assertEquals(-1, in.read());
      int from = onDisk.length / 3;
      byte[] part = new byte[onDisk.length - from];
      in.readFully(from, part);
      assertArrayEquals(Arrays.copyOfRange(onDisk, from, onDisk.length), part, "positionally: the bytes on disk");
      stats = ((HdfsDataInputStream) in).getReadStatistics();
      assertEquals(onDisk.length + part.length, stats.getTotalBytesRead(), "bytes counted as read");
    } finally {
      fs.setVerifyChecksum(true);
    }
    assertEquals(stockBytes0, fs.stockBytesRead(), "no byte through the stock stream");
    assertEquals(fallbacks0, fs.stockFallbacks(), "no fallback to the stock path");
    assertEquals(errors0, fs.checksumErrors(), "no checksum error met");
    assertEquals(ours0 + stats.getTotalBytesRead(), fs.rdmaBytesRead() + fs.localBytesRead(),
        "every byte from our readers");
    return stats;
  }

  @Test
  void overTheTransportChecksumsAreSkippedWhenTheStreamSaysSo() throws Exception {
    Path p = new Path("/skip/remote");
    byte[] onDisk = writeCorrupted(p, PluginCluster.random(BLOCK + 5000, 1), 1000, 70_000, BLOCK + 100);
    long rdma0 = remote.rdmaBytesRead();
    ReadStatistics s = readBothWays(remote, p, onDisk);
    assertEquals(0, s.getTotalShortCircuitBytesRead());
    assertEquals(s.getTotalBytesRead(), remote.rdmaBytesRead() - rdma0, "over the transport");
  }

  /**
   * A transport reader that verifies none asks for no checksums and the DataNode sends none
   * (type NULL, packets of data only), as stock's; one that verifies gets the replica's.
   */
  @Test
  void aTransportReaderThatVerifiesNoneIsSentNoChecksums() throws Exception {
    Path p = new Path("/skip/nosums");
    byte[] onDisk = writeCorrupted(p, PluginCluster.random(BLOCK, 4), 3000, BLOCK - 10);
    LocatedBlock lb = remote.getClient().getLocatedBlocks(p.toString(), 0).get(0);
    DatanodeInfo dn = lb.getLocations()[0];
    byte[] got = new byte[BLOCK - 7];
    try (RdmaBlockReader r = remote.blockClient().open(lb, dn, 7, BLOCK - 7, false)) {
      r.readFully(got, 0, got.length);
      assertEquals(DataChecksum.Type.NULL, r.lastChecksumType());
    }
    assertArrayEquals(Arrays.copyOfRange(onDisk, 7, BLOCK), got);
    try (RdmaBlockReader r = remote.blockClient().open(lb, dn, 7, BLOCK - 7, true)) {
      assertThrows(ChecksumException.class, () -> r.readFully(new byte[BLOCK - 7], 0, BLOCK - 7));
      assertEquals(DataChecksum.Type.CRC32C, r.lastChecksumType());
    }
  }

  @Test
  void overShortCircuitChecksumsAreSkippedWhenTheStreamSaysSo() throws Exception {
    Path p = new Path("/skip/local");
    // windows verified ahead on the verifier thread, across a block boundary
    byte[] onDisk = writeCorrupted(p, PluginCluster.random(BLOCK + 5000, 2), 1000, 70_000, BLOCK + 100);
    long local0 = local.localBytesRead();
    long unverified0 = local.localBytesUnverified();
    ReadStatistics s = readBothWays(local, p, onDisk);
    assertEquals(s.getTotalBytesRead(), s.getTotalShortCircuitBytesRead(), "all short-circuit, counted as stock's");
    assertEquals(s.getTotalBytesRead(), local.localBytesRead() - local0);
    assertEquals(s.getTotalBytesRead(), local.localBytesUnverified() - unverified0,
        "every byte counted as handed out without checksum work");
  }

  @Test
  void theKeptReplicaOfASmallBlockSkipsChecksumsWhenTheStreamSaysSo() throws Exception {
    Path p = new Path("/skip/small");
    // a block no longer than a window: read from the replica the client keeps
    byte[] onDisk = writeCorrupted(p, PluginCluster.random(WINDOW - 1000, 3), 10, 9000);
    long local0 = local.localBytesRead();
    LocalReplicas kept = local.blockClient().replicas();
    long hits0 = kept.hits();
    ReadStatistics s = readBothWays(local, p, onDisk);
    assertTrue(kept.hits() > hits0, "read from the kept replica");
    assertEquals(s.getTotalBytesRead(), s.getTotalShortCircuitBytesRead(), "all short-circuit");
    assertEquals(s.getTotalBytesRead(), local.localBytesRead() - local0);
    // the replica kept by the stream that skipped checksums still verifies for one that does not
    try (FSDataInputStream in = local.open(p)) {
      assertThrows(ChecksumException.class, () -> in.readFully(0, new byte[onDisk.length]));
    }
  }
}
