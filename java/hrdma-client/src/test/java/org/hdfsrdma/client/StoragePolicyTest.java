package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfoWithStorage;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.datanode.disk.VolumeScheduler;
import org.hdfsrdma.datanode.disk.VolumeStats;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * DataNodes with an SSD and a DISK volume each; HDFS storage policies set
 * through the stock NameNode; files written through our write path land on
 * the storage type and storage id the NameNode assigned, on the volume's
 * scheduler with the type's policy.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class StoragePolicyTest {
  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private FileSystem fs;

  @BeforeAll
  void start() throws Exception {
    Configuration conf = PluginCluster.baseConf();
    File base = new File("target/test-dir/" + getClass().getSimpleName());
    cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(3).storagesPerDatanode(2)
        .storageTypes(new StorageType[] {StorageType.SSD, StorageType.DISK}).build();
    cluster.waitActive();
    PluginCluster.awaitPluginsServing(cluster);
    stock = cluster.getFileSystem();
    fs = FileSystem.get(cluster.getURI(), PluginCluster.rdmaClientConf(cluster));
  }

  @AfterAll
  void stop() throws IOException {
    if (fs != null) {
      fs.close();
    }
    if (cluster != null) {
      cluster.shutdown();
    }
  }

  private RdmaDataNodePlugin plugin(DataNode dn) {
    return RdmaDataNodePlugin.running().stream().filter(p -> dn.getDatanodeUuid().equals(p.datanodeUuid()))
        .findFirst().orElseThrow();
  }

  /** Bytes each storage id's scheduler has written so far, over all DataNodes. */
  private Map<String, Long> writtenByStorage() {
    Map<String, Long> m = new TreeMap<>();
    for (DataNode dn : cluster.getDataNodes()) {
      for (Map.Entry<String, VolumeScheduler> e : plugin(dn).disk().schedulers().entrySet()) {
        m.put(e.getKey(), e.getValue().stats().snapshot().bytesWritten());
      }
    }
    return m;
  }

  @ParameterizedTest
  @CsvSource({"ALL_SSD, SSD SSD SSD", "ONE_SSD, SSD DISK DISK", "HOT, DISK DISK DISK"})
  void policiesChosenAtTheNameNodeAreWhereOurWritesGo(String policy, String types) throws Exception {
    Path dir = new Path("/policy/" + policy);
    stock.mkdirs(dir);
    stock.setStoragePolicy(dir, policy);
    Path p = new Path(dir, "f");
    byte[] data = PluginCluster.random(3 * PluginCluster.BLOCK / 2, policy.hashCode());
    Map<String, Long> before = writtenByStorage();
    try (OutputStream out = fs.create(p)) {
      out.write(data);
    }
    Map<String, Long> after = writtenByStorage();
    List<String> want = Arrays.asList(types.split(" "));
    // close() returns once the NameNode has the minimum replication; the other replicas' reports may lag
    List<LocatedBlock> located = stock.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks();
    long until = System.nanoTime() + 20_000_000_000L;
    while (located.stream().anyMatch(b -> b.getLocations().length < want.size()) && System.nanoTime() < until) {
      Thread.sleep(100);
      located = stock.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks();
    }
    for (LocatedBlock b : located) {
      List<String> got = new ArrayList<>();
      for (StorageType t : b.getStorageTypes()) {
        got.add(t.name());
      }
      got.sort(null);
      List<String> w = new ArrayList<>(want);
      w.sort(null);
      assertEquals(w, got, policy + ": storage types of " + b.getBlock());
      for (DatanodeInfoWithStorage loc : b.getLocations()) {
        DataNode dn = cluster.getDataNode(loc.getIpcPort());
        // the replica is on the very volume the NameNode assigned
        String onDisk = dn.getFSDataset().getVolume(b.getBlock()).getStorageID();
        assertEquals(loc.getStorageID(), onDisk, policy + ": " + b.getBlock() + " on " + dn.getDisplayName());
        assertEquals(loc.getStorageType(), dn.getFSDataset().getVolume(b.getBlock()).getStorageType());
        // and it went through that volume's scheduler, with the policy of its type
        VolumeScheduler s = plugin(dn).disk().schedulers().get(onDisk);
        assertEquals(loc.getStorageType() == StorageType.SSD ? "adaptive" : "rotational", s.policy().name());
        assertTrue(after.get(onDisk) > before.getOrDefault(onDisk, 0L), policy + ": nothing written via " + onDisk);
      }
    }
    byte[] got = new byte[data.length];
    try (InputStream in = stock.open(p)) {
      org.apache.hadoop.io.IOUtils.readFully(in, got, 0, got.length);
    }
    assertArrayEquals(data, got);

    // our read path: on SSD volumes O_DIRECT through io_uring, elsewhere buffered; a read from
    // the start of the file goes straight into the packets sent
    long directBefore = directBytes(false);
    long packetsBefore = directBytes(true);
    byte[] ours = new byte[data.length];
    try (InputStream in = fs.open(p)) {
      org.apache.hadoop.io.IOUtils.readFully(in, ours, 0, ours.length);
      assertEquals(-1, in.read());
    }
    assertArrayEquals(data, ours);
    long intoPackets = directBytes(true) - packetsBefore;
    long windowBefore = directBytes(false) - directBytes(true);
    // unaligned positional reads (O_DIRECT reads whole aligned pages around them, into a window)
    try (org.apache.hadoop.fs.FSDataInputStream in = fs.open(p)) {
      for (int off : new int[] {12_345, PluginCluster.BLOCK - 700, data.length - 3000}) {
        byte[] part = new byte[Math.min(100_000, data.length - off)];
        in.readFully(off, part);
        assertArrayEquals(Arrays.copyOfRange(data, off, off + part.length), part, policy + " at " + off);
      }
    }
    long direct = directBytes(false) - directBefore;
    long viaWindow = directBytes(false) - directBytes(true) - windowBefore;
    if (types.startsWith("SSD SSD")) {
      assertTrue(direct >= data.length, policy + ": read directly " + direct + " of " + data.length);
      assertTrue(intoPackets >= data.length, policy + ": read into the packets " + intoPackets + " of "
          + data.length);
      assertTrue(viaWindow > 0, policy + ": reads from unaligned offsets went through the window");
    } else if (!types.contains("SSD")) {
      assertEquals(0, direct, policy + ": no direct reads on DISK");
    }
  }

  /** O_DIRECT bytes read on every volume of the cluster; with {@code packets}, those read into packets. */
  private long directBytes(boolean packets) {
    long n = 0;
    for (DataNode dn : cluster.getDataNodes()) {
      for (VolumeScheduler s : plugin(dn).disk().schedulers().values()) {
        VolumeStats.Snapshot st = s.stats().snapshot();
        n += packets ? st.directPacketBytes() : st.directBytes();
      }
    }
    return n;
  }
}
