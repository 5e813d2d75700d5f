package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.client.HdfsDataInputStream;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeDisk;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * A replication-3 file written in {@code cache-first} mode has one replica of each block in the
 * page cache, the pipeline's first DataNode's. With every DataNode on this host (equally near,
 * listed by the NameNode in random order), our short-circuit reads take that replica: each
 * block is served from the replica that was in memory, the other replicas stay out of the page
 * cache (nothing read them), the bytes are the written ones, and nothing falls back. A block
 * with one replica here asks nothing more; replicas none of which is cached read as before.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(300)
class NearestCachedReplicaTest {
  private static final int BLOCK = 4 << 20;
  private static final int BLOCKS = 8;

  private LocalReadFixture local;
  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private RdmaDistributedFileSystem fs;

  @BeforeAll
  void start() throws Exception {
    local = new LocalReadFixture("nearest-cached");
    Configuration conf = local.clusterConf();
    conf.setLong(DFSConfigKeys.DFS_BLOCK_SIZE_KEY, BLOCK);
    // no block scanner: stock's reads each new replica with drop-behind, evicting it from the
    // page cache (and reading ahead into it) while the test looks at residency
    conf.setLong(DFSConfigKeys.DFS_BLOCK_SCANNER_VOLUME_BYTES_PER_SECOND, 0);
    conf.set(org.hdfsrdma.datanode.disk.DiskSettings.POLICY_KEY_PREFIX + "disk", "rotational");
    conf.set(org.hdfsrdma.datanode.disk.DiskSettings.WRITE_MODE_KEY_PREFIX + "disk", "cache-first");
    cluster = PluginCluster.start(conf, getClass(), 3);
    stock = cluster.getFileSystem();
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), local.clientConf(cluster, true, 0, 0));
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  @BeforeEach
  void native_() {
    org.junit.jupiter.api.Assumptions.assumeTrue(HrdmaNative.isAvailable(), "libhrdma: short-circuit reads need it");
  }

  private long probesAtDataNodes() {
    return RdmaDataNodePlugin.running().stream().mapToLong(RdmaDataNodePlugin::shortCircuitProbes).sum();
  }

  private long grantsAtDataNodes() {
    return RdmaDataNodePlugin.running().stream().mapToLong(RdmaDataNodePlugin::shortCircuitGranted).sum();
  }

  private File blockFile(DatanodeInfo dn, LocatedBlock lb) throws IOException {
    return new File(LocalReadFixture.files(cluster, dn, lb).getBlockPath());
  }

  /** Bytes of {@code dn}'s replica of {@code lb} in the page cache. */
  private long resident(DatanodeInfo dn, LocatedBlock lb) throws IOException {
    try (NativeDisk.File f = NativeDisk.File.open(blockFile(dn, lb).toPath(), 0)) {
      return f.residentBytes(0, lb.getBlockSize());
    }
  }

  private void drop(DatanodeInfo dn, LocatedBlock lb) throws IOException {
    try (NativeDisk.File f = NativeDisk.File.open(blockFile(dn, lb).toPath(), 0)) {
      f.dropCache(0, lb.getBlockSize(), false);
    }
  }

  private List<LocatedBlock> blocks(String path) throws IOException {
    return stock.getClient().getLocatedBlocks(path, 0).getLocatedBlocks();
  }

  /**
   * Each block's one replica in the page cache (its uuid); fails unless there is exactly one. In
   * the page cache means any of it: the host of this machine pages out memory left idle for a
   * while (the kernel's DAMON reclaim, page cache included), so a replica written through the
   * page cache may have lost part of it by the time it is looked at; the replicas written
   * O_DIRECT and never read have none, and one read by mistake would have some.
   */
  private List<String> cachedReplicas(List<LocatedBlock> blocks) throws IOException {
    List<String> cached = new ArrayList<>();
    for (LocatedBlock lb : blocks) {
      List<String> in = new ArrayList<>();
      StringBuilder all = new StringBuilder();
      for (DatanodeInfo dn : lb.getLocations()) {
        long r = resident(dn, lb);
        all.append(' ').append(dn.getXferPort()).append('=').append(r);
        if (r > 0) {
          in.add(dn.getDatanodeUuid());
        }
      }
      assertEquals(1, in.size(), lb.getBlock() + ": one replica in the page cache, the pipeline's first;"
          + all);
      cached.add(in.get(0));
    }
    return cached;
  }

  private byte[] write(String path, int size, short replication, long seed) throws Exception {
    byte[] data = PluginCluster.random(size, seed);
    org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(path);
    try (FSDataOutputStream out = fs.create(p, replication)) {
      out.write(data);
    }
    // close returns once the NameNode knows one replica of the last block; it learns of the others
    // from each DataNode's incremental block report, sent on its own. The pipeline's first DataNode,
    // the one that keeps the block in the page cache, finalizes last (the acks come upstream), so on
    // a loaded machine the NameNode could list only the two written O_DIRECT, and the residency
    // checks and the client's choice would see neither the cached replica nor all replicas
    DFSTestUtil.waitReplication(stock, p, replication);
    return data;
  }

  @Test
  void sequentialReadsTakeTheCachedReplica() throws Exception {
    String path = "/nearest/sequential";
    byte[] data = write(path, BLOCKS * BLOCK, (short) 3, 41);
    List<LocatedBlock> blocks = blocks(path);
    assertEquals(BLOCKS, blocks.size());
    List<String> cached = cachedReplicas(blocks);
    long fallbacks = fs.localFallbacks();
    long probes = probesAtDataNodes();
    long clientProbes = fs.nearReplicaProbes();
    long switches = fs.nearReplicaSwitches();
    byte[] got = new byte[data.length];
    List<String> served = new ArrayList<>();
    try (HdfsDataInputStream in = (HdfsDataInputStream) fs.open(new org.apache.hadoop.fs.Path(path))) {
      for (int b = 0; b < BLOCKS; b++) {
        int at = b * BLOCK;
        org.apache.hadoop.io.IOUtils.readFully(in, got, at, 4096);
        served.add(in.getCurrentDatanode().getDatanodeUuid());
        org.apache.hadoop.io.IOUtils.readFully(in, got, at + 4096, BLOCK - 4096);
      }
      assertEquals(-1, in.read());
    }
    assertArrayEquals(data, got);
    int fromCache = 0;
    for (int b = 0; b < BLOCKS; b++) {
      if (served.get(b).equals(cached.get(b))) {
        fromCache++;
      }
    }
    System.out.println("sequential: " + fromCache + " of " + BLOCKS + " blocks served by the replica in the page "
        + "cache; DataNode probes " + (probesAtDataNodes() - probes));
    assertEquals(cached, served, "each block read from its replica in the page cache");
    assertEquals(cached, cachedReplicas(blocks), "the other replicas not read: still out of the page cache");
    assertEquals(fallbacks, fs.localFallbacks(), "no short-circuit fallback");
    long asked = probesAtDataNodes() - probes;
    assertTrue(asked >= BLOCKS && asked <= 3L * BLOCKS, "at most one probe per replica and block: " + asked);
    assertEquals(asked, fs.nearReplicaProbes() - clientProbes, "the client counts what it asked");
    assertTrue(fs.nearReplicaSwitches() - switches <= BLOCKS);
  }

  @Test
  void positionalReadsTakeTheCachedReplicaAndAskOncePerBlock() throws Exception {
    String path = "/nearest/positional";
    byte[] data = write(path, BLOCKS * BLOCK, (short) 3, 43);
    List<LocatedBlock> blocks = blocks(path);
    List<String> cached = cachedReplicas(blocks);
    long fallbacks = fs.localFallbacks();
    long probes = probesAtDataNodes();
    try (org.apache.hadoop.fs.FSDataInputStream in = fs.open(new org.apache.hadoop.fs.Path(path))) {
      for (int round = 0; round < 2; round++) {
        for (int b = 0; b < BLOCKS; b++) {
          byte[] got = new byte[64 << 10];
          long at = (long) b * BLOCK + BLOCK / 2 + round * 8192 + 100;
          in.readFully(at, got);
          assertArrayEquals(java.util.Arrays.copyOfRange(data, (int) at, (int) at + got.length), got);
        }
        if (round == 0) {
          probes = probesAtDataNodes() - probes;
          assertTrue(probes >= BLOCKS && probes <= 3L * BLOCKS, "at most one probe per replica and block: " + probes);
          probes = probesAtDataNodes();
        }
      }
    }
    assertEquals(probes, probesAtDataNodes(), "the second read of each block asks nothing: the choice is kept");
    assertEquals(cached, cachedReplicas(blocks), "only the cached replicas were read");
    assertEquals(fallbacks, fs.localFallbacks());
  }

  @Test
  void aSmallFileOpenedAgainIsReadFromTheKeptReplicaAskingNothing() throws Exception {
    String path = "/nearest/small";
    byte[] data = write(path, 64 * 1024 + 11, (short) 3, 61);
    long grants = grantsAtDataNodes();
    long probes = probesAtDataNodes();
    long fallbacks = fs.localFallbacks();
    for (int round = 0; round < 4; round++) {
      byte[] got = new byte[data.length];
      try (org.apache.hadoop.fs.FSDataInputStream in = fs.open(new org.apache.hadoop.fs.Path(path))) {
        org.apache.hadoop.io.IOUtils.readFully(in, got, 0, got.length); // sequential
        assertEquals(-1, in.read());
      }
      assertArrayEquals(data, got, "round " + round);
      if (round == 0) {
        assertTrue(grantsAtDataNodes() > grants, "the first opening asks a DataNode for the files");
        grants = grantsAtDataNodes();
        probes = probesAtDataNodes();
      }
    }
    assertEquals(grants, grantsAtDataNodes(), "later openings of the block read the replica kept open");
    assertEquals(probes, probesAtDataNodes(), "and ask no DataNode what it has in the page cache");
    assertEquals(fallbacks, fs.localFallbacks());
  }

  @Test
  void oneReplicaOnThisHostIsAskedNothingMore() throws Exception {
    String path = "/nearest/one";
    byte[] data = write(path, 2 * BLOCK, (short) 1, 47);
    long probes = probesAtDataNodes();
    long grants = grantsAtDataNodes();
    byte[] got = new byte[data.length];
    try (org.apache.hadoop.fs.FSDataInputStream in = fs.open(new org.apache.hadoop.fs.Path(path))) {
      in.readFully(0, got); // positional
    }
    assertArrayEquals(data, got);
    assertEquals(probes, probesAtDataNodes(), "no residency asked with one replica");
    assertEquals(grants + 2, grantsAtDataNodes(), "one exchange per block, as before");
  }

  @Test
  void offBySettingNothingIsAsked() throws Exception {
    String path = "/nearest/off";
    byte[] data = write(path, 2 * BLOCK, (short) 3, 59);
    Configuration c = local.clientConf(cluster, true, 0, 0);
    c.setBoolean(RdmaBlockClient.LOCAL_PREFER_CACHED_KEY, false);
    long probes = probesAtDataNodes();
    long grants = grantsAtDataNodes();
    byte[] got = new byte[data.length];
    try (RdmaDistributedFileSystem off = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
        org.apache.hadoop.fs.FSDataInputStream in = off.open(new org.apache.hadoop.fs.Path(path))) {
      org.apache.hadoop.io.IOUtils.readFully(in, got, 0, got.length);
      assertEquals(0, off.nearReplicaProbes());
    }
    assertArrayEquals(data, got);
    assertEquals(probes, probesAtDataNodes(), "nothing asked");
    assertEquals(grants + 2, grantsAtDataNodes(), "the first replica listed, one exchange per block");
  }

  @Test
  void replicasNoneOfWhichIsCachedReadAsBefore() throws Exception {
    String path = "/nearest/evicted";
    byte[] data = write(path, 3 * BLOCK, (short) 3, 53);
    List<LocatedBlock> blocks = blocks(path);
    for (LocatedBlock lb : blocks) {
      for (DatanodeInfo dn : lb.getLocations()) {
        drop(dn, lb);
        assertEquals(0, resident(dn, lb), "dropped");
      }
    }
    long fallbacks = fs.localFallbacks();
    long probes = probesAtDataNodes();
    byte[] got = new byte[data.length];
    try (HdfsDataInputStream in = (HdfsDataInputStream) fs.open(new org.apache.hadoop.fs.Path(path))) {
      org.apache.hadoop.io.IOUtils.readFully(in, got, 0, got.length);
    }
    assertArrayEquals(data, got);
    assertEquals(fallbacks, fs.localFallbacks());
    // none had it, so no block's choice stopped at its first replica; at most one exchange per replica
    long asked = probesAtDataNodes() - probes;
    assertTrue(asked >= 2L * blocks.size() && asked <= 3L * blocks.size(),
        "each block's replicas asked until none had it: " + asked + " exchanges for " + blocks.size() + " blocks");
    for (LocatedBlock lb : blocks) {
      int read = 0;
      for (DatanodeInfo dn : lb.getLocations()) {
        if (resident(dn, lb) > 0) {
          read++;
        }
      }
      assertEquals(1, read, lb.getBlock() + ": read from one replica");
    }
  }
}
