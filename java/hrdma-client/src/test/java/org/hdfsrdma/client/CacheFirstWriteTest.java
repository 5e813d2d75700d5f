package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.datanode.disk.VolumeScheduler;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeDisk;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * The default write mode of rotational DISK volumes, {@code cache-first}: in a pipeline of
 * three, the first DataNode writes through the page cache and keeps the block there, the two
 * downstream write O_DIRECT; the file reads back as written and checksums as stock's copy of
 * the same bytes. Only the last DataNode verifies the checksums (RdmaBlockWriterTest: a
 * corrupt packet is refused by it and the node before it leaves the pipeline).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(300)
class CacheFirstWriteTest {
  private static final int BLOCK = 8 << 20;

  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private RdmaDistributedFileSystem fs;

  @BeforeAll
  void start() throws Exception {
    Configuration conf = PluginCluster.diskConf(BLOCK, null); // write mode left at "auto"
    // no block scanner: stock's reads each new replica with drop-behind, evicting it from the
    // page cache (and reading ahead into it) while the test looks at residency
    conf.setLong(DFSConfigKeys.DFS_BLOCK_SCANNER_VOLUME_BYTES_PER_SECOND, 0);
    cluster = PluginCluster.start(conf, getClass(), 3);
    stock = cluster.getFileSystem();
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), PluginCluster.rdmaClientConf(cluster));
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  @AfterEach
  void nothingLeaks() throws IOException {
    assertEquals(0, fs.blockClient().buffersOutstanding(), "transport buffers out");
    assertTrue(RdmaDataNodePlugin.running().stream().allMatch(p -> p.openWrites() == 0), "writes left open");
  }

  private long directWritten() {
    long n = 0;
    for (RdmaDataNodePlugin p : RdmaDataNodePlugin.running()) {
      for (VolumeScheduler s : p.disk().schedulers().values()) {
        n += s.stats().snapshot().directWrittenBytes();
      }
    }
    return n;
  }

  /** Bytes of {@code f} in the page cache now (the DataNode's own probe: this process owns the file). */
  private static long resident(File f) throws IOException {
    try (NativeDisk.File nf = NativeDisk.File.open(f.toPath(), 0)) {
      return nf.residentBytes(0, f.length());
    }
  }

  @Test
  void theFirstReplicaIsCachedTheOthersWrittenDirect() throws Exception {
    Assumptions.assumeTrue(HrdmaNative.isAvailable(), "libhrdma: O_DIRECT writes need it");
    int size = 2 * BLOCK; // two blocks of whole 1 MiB packets: all of a direct replica goes O_DIRECT
    byte[] data = PluginCluster.random(size, 31);
    Path p = new Path("/cache-first/f");
    long before = directWritten();
    long rdmaBefore = fs.rdmaBytesWritten();
    try (FSDataOutputStream out = fs.create(p, (short) 3)) {
      out.write(data);
    }
    assertEquals(size, fs.rdmaBytesWritten() - rdmaBefore, "written over hrdma");
    // two of the three replicas of each block, the downstream ones, around the page cache
    assertEquals(2L * size, directWritten() - before);
    // every replica known to the NameNode: close returns once it knows one, and the first DataNode,
    // whose replica is the cached one, finalizes and reports last (the acks come upstream)
    DFSTestUtil.waitReplication(stock, p, (short) 3);
    List<LocatedBlock> blocks = stock.getClient().getLocatedBlocks(p.toUri().getPath(), 0).getLocatedBlocks();
    assertEquals(2, blocks.size());
    for (LocatedBlock lb : blocks) {
      int inCache = 0;
      StringBuilder seen = new StringBuilder();
      for (DatanodeInfo dn : lb.getLocations()) {
        File f = PluginCluster.blockFile(cluster, dn, lb.getBlock());
        long r = resident(f);
        seen.append(' ').append(dn.getXferPort()).append(": ").append(r).append(" of ").append(f.length());
        // any of it: this machine's host pages out memory left idle a while (DAMON reclaim), so
        // the cached replica may have lost part of it; the O_DIRECT ones have none
        if (r > 0) {
          inCache++;
        }
      }
      assertEquals(1, inCache, "one replica of " + lb.getBlock() + " in the page cache: the first's (resident"
          + " bytes by DataNode:" + seen + ")");
    }
    byte[] got = new byte[size];
    try (InputStream in = stock.open(p)) {
      org.apache.hadoop.io.IOUtils.readFully(in, got, 0, size);
      assertEquals(-1, in.read());
    }
    assertArrayEquals(data, got);
    Path q = new Path("/cache-first/by-stock");
    try (FSDataOutputStream out = stock.create(q, (short) 3)) {
      out.write(data);
    }
    assertEquals(stock.getFileChecksum(q), stock.getFileChecksum(p), "the checksum of the same bytes");
  }
}
