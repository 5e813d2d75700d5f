package org.hdfsrdma.bench.fs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.zip.CRC32C;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.StorageType;
import org.hdfsrdma.datanode.compat.DataNodeAccess.Volume;
import org.hdfsrdma.datanode.disk.DiskIo;
import org.hdfsrdma.datanode.disk.DiskSettings;
import org.hdfsrdma.datanode.disk.VolumeStats;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.Transports;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.hdfsrdma.tools.fs.Stats;

/**
 * bench disk's disk stage on block files made here (a block file and its
 * .meta with CRC32C per 512 bytes): every packet it hands on holds the
 * checksums of its data, the data in file order, and the reads went through
 * the ssd policy's O_DIRECT path; and the ssd table's rows and settings.
 */
@Timeout(120)
class DiskStageTest {
  private static final int BPC = 512;

  @TempDir
  Path dir;

  private static byte[] blockFile(Path blk, int size, long seed) throws Exception {
    byte[] data = new byte[size];
    new Random(seed).nextBytes(data);
    Files.write(blk, data);
    ByteArrayOutputStream meta = new ByteArrayOutputStream();
    DataOutputStream m = new DataOutputStream(meta);
    m.writeShort(1);      // version
    m.writeByte(2);       // CRC32C
    m.writeInt(BPC);
    CRC32C crc = new CRC32C();
    for (int off = 0; off < size; off += BPC) {
      crc.reset();
      crc.update(data, off, Math.min(BPC, size - off));
      m.writeInt((int) crc.getValue());
    }
    Files.write(blk.resolveSibling(blk.getFileName() + "_1001.meta"), meta.toByteArray());
    return data;
  }

  @Test
  void packetsCarryTheChecksumsOfTheirDataInFileOrder() throws Exception {
    Path vol = Files.createDirectories(dir.resolve("current/finalized"));
    List<Path> blocks = List.of(vol.resolve("blk_1"), vol.resolve("blk_2"));
    ByteArrayOutputStream want = new ByteArrayOutputStream();
    want.write(blockFile(blocks.get(0), 3 * (1 << 20) + 700, 1));
    want.write(blockFile(blocks.get(1), 1 << 20, 2));
    Configuration conf = new Configuration(false);
    conf.set(DiskSettings.POLICY_KEY_PREFIX + "ssd", "ssd");
    conf.setInt(DiskSettings.SSD_DEPTH_KEY, 4);
    conf.setInt(DiskSettings.SSD_REQUEST_BYTES_KEY, 256 << 10);
    Volume v = new Volume("stage", StorageType.SSD, vol.toString());
    ByteArrayOutputStream got = new ByteArrayOutputStream();
    List<Integer> packets = new ArrayList<>();
    try (Transport t = Transports.create("tcp", TransportConf.defaults());
        DiskIo io = new DiskIo(DiskSettings.of(conf), List.of(v))) {
      double mbps = DiskStage.run(io, v, blocks, t.allocator(), 1 << 20, 0, p -> {
        int chunks = (p.remaining() + BPC + 3) / (BPC + 4); // 4 checksum bytes per chunk of up to 512
        int data = p.remaining() - 4 * chunks;
        ByteBuffer sums = p.slice(p.position(), 4 * chunks);
        byte[] b = new byte[data];
        p.get(p.position() + 4 * chunks, b);
        CRC32C crc = new CRC32C();
        for (int i = 0; i < chunks; i++) {
          crc.reset();
          crc.update(b, i * BPC, Math.min(BPC, data - i * BPC));
          assertEquals(sums.getInt(4 * i), (int) crc.getValue(), "chunk " + i + " of a packet");
        }
        packets.add(data);
        got.write(b, 0, b.length);
      });
      assertTrue(mbps > 0);
      VolumeStats.Snapshot s = io.schedulers().get("stage").stats().snapshot();
      assertEquals(want.size(), s.directBytes(), "every byte read with O_DIRECT through the ssd policy");
      assertEquals(0, t.allocator().buffersOutstanding(), "every packet buffer given back");
    }
    assertArrayEquals(want.toByteArray(), got.toByteArray());
    // as the DataNode sizes them: 1 MiB asked for, 1 MiB - 12 KiB sent, which with its
    // checksums and the alignment slack fits the pool's 1 MiB buffer
    int p = (1 << 20) - (12 << 10);
    assertEquals(List.of(p, p, p, 3 * (1 << 20) + 700 - 3 * p, p, (1 << 20) - p), packets);
  }

  @Test
  void ssdRowsCompareEachPathWithFioAtItsDepthAndTheWindowHoldsDepthPlusOne() throws Exception {
    assertArrayEquals(new String[] {"4", "500 [400-700]", "0.25", "1900 [1800-1950]", "0.95", "2000 [1000-2100]"},
        DiskBench.ssdRow(4, Stats.of(700, 400, 500), Stats.of(1900, 1800, 1950), Stats.of(2100, 1000, 2000)),
        "medians, their ratios, and each spread");
    assertArrayEquals(new String[] {"1", "500", "0.50", "900", "0.90", "1000"},
        DiskBench.ssdRow(1, Stats.of(500), Stats.of(900), Stats.of(1000)), "one round: no spread");
    DiskBench.Options o = DiskBench.parse(new String[] {"--depths", "1,16", "--request", "1M"});
    assertEquals(5, o.rounds());
    assertEquals(5, DiskBench.parse(new String[] {"--rounds", "5"}).rounds());
    for (String bad : new String[] {"0", "51", "x"}) {
      assertThrows(org.hdfsrdma.tools.UsageException.class, () -> DiskBench.parse(new String[] {"--rounds", bad}),
          "--rounds " + bad);
    }
    assertEquals(64 << 20, DiskBench.parse(new String[] {"--request", "64M"}).request());
    assertThrows(org.hdfsrdma.tools.UsageException.class, () -> DiskBench.parse(new String[] {"--request", "65M"}),
        "beyond what the ssd policy takes, refused before any cluster starts");
    Map<String, String> c1 = DiskBench.ssdConf(o, 1);
    Map<String, String> c16 = DiskBench.ssdConf(o, 16);
    assertEquals("ssd", c16.get(DiskSettings.POLICY_KEY_PREFIX + "ssd"));
    assertEquals("16", c16.get(DiskSettings.SSD_DEPTH_KEY));
    assertEquals(Integer.toString(8 << 20), c1.get(DiskSettings.READ_AHEAD_BYTES_KEY), "8 MB at least");
    assertEquals(Integer.toString(17 << 20), c16.get(DiskSettings.READ_AHEAD_BYTES_KEY));
  }
}
