package org.hdfsrdma.datanode.disk;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.datanode.compat.DataNodeAccess.Volume;
import org.hdfsrdma.datanode.disk.DiskSettings.WriteMode;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeDisk;
import org.hdfsrdma.nativelib.NativeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Which write mode a volume gets (storage type, directory override, "auto" following the
 * volume's reads), what each mode leaves in the page cache, the data and its CRC32C chunk
 * checksums in every mode, and a read of a block whose page cache was dropped.
 */
@Timeout(120)
class WriteModeTest {
  private static final int MB = 1 << 20;
  private static final int BYTES_PER_CHECKSUM = 512;

  @TempDir
  Path dir;

  @Test
  void modesFollowStorageTypesOverridesAndTheVolumesReads() {
    DiskSettings d = DiskSettings.of(new Configuration(false));
    // auto: O_DIRECT where reads are O_DIRECT (they never look in the cache), else the first
    // replica of a pipeline cached as stock, the others O_DIRECT
    assertEquals(WriteMode.CACHE_FIRST, d.writeMode(StorageType.DISK, "/data/1", false));
    assertEquals(WriteMode.DIRECT, d.writeMode(StorageType.DISK, "/data/1", true));
    assertEquals(WriteMode.DIRECT, d.writeMode(StorageType.SSD, "/ssd/1", true));
    assertEquals(WriteMode.CACHE_FIRST, d.writeMode(StorageType.SSD, "/ssd/1", false));
    assertEquals(WriteMode.DROP_BEHIND, d.writeMode(StorageType.ARCHIVE, "/archive/1", false));
    assertEquals(WriteMode.CACHE_FIRST, d.writeMode(StorageType.RAM_DISK, "/mnt/ram", false));
    // cache-first, per replica: the first of a pipeline cached, the ones downstream O_DIRECT
    assertEquals(WriteMode.CACHE, WriteMode.CACHE_FIRST.forPipeline(true));
    assertEquals(WriteMode.DIRECT, WriteMode.CACHE_FIRST.forPipeline(false));
    for (WriteMode m : List.of(WriteMode.CACHE, WriteMode.DROP_BEHIND, WriteMode.DIRECT)) {
      assertEquals(m, m.forPipeline(true));
      assertEquals(m, m.forPipeline(false));
    }

    Configuration conf = new Configuration(false);
    conf.set(DiskSettings.WRITE_MODE_KEY_PREFIX + "disk", "drop-behind");
    conf.set(DiskSettings.WRITE_MODE_KEY_PREFIX + "ssd", "Cache");
    conf.set(DiskSettings.WRITE_MODE_OVERRIDES_KEY, "/data/2/=direct, file:///data/3=auto, /data/4=cache-first");
    DiskSettings s = DiskSettings.of(conf);
    assertEquals(WriteMode.DROP_BEHIND, s.writeMode(StorageType.DISK, "/data/1", true));
    assertEquals(WriteMode.CACHE, s.writeMode(StorageType.SSD, "/ssd/1", true));
    assertEquals(WriteMode.DIRECT, s.writeMode(StorageType.DISK, "/data/2", false));
    assertEquals(WriteMode.CACHE_FIRST, s.writeMode(StorageType.DISK, "/data/3/", false));
    assertEquals(WriteMode.DIRECT, s.writeMode(StorageType.DISK, "file:///data/3", true));
    assertEquals(WriteMode.CACHE_FIRST, s.writeMode(StorageType.DISK, "/data/4", true));

    String[][] bad = {
      {DiskSettings.WRITE_MODE_KEY_PREFIX + "disk", "o_direct"},
      {DiskSettings.WRITE_MODE_OVERRIDES_KEY, "/data/1"},
      {DiskSettings.WRITE_MODE_OVERRIDES_KEY, "/data/1=sometimes"},
    };
    for (String[] kv : bad) {
      Configuration c = new Configuration(false);
      c.set(kv[0], kv[1]);
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DiskSettings.of(c),
          kv[0] + "=" + kv[1]);
      assertTrue(e.getMessage().contains(kv[0]), e.getMessage());
    }
  }

  @Test
  void aVolumeGetsItsModeFromItsPolicy() throws Exception {
    Volume disk = new Volume("disk-1", StorageType.DISK, dir.resolve("disk").toString());
    Volume ssd = new Volume("ssd-1", StorageType.SSD, dir.resolve("ssd").toString());
    Configuration conf = new Configuration(false);
    conf.set(DiskSettings.POLICY_KEY_PREFIX + "disk", "rotational");
    conf.set(DiskSettings.POLICY_KEY_PREFIX + "ssd", "ssd");
    try (DiskIo io = new DiskIo(DiskSettings.of(conf), List.of(disk, ssd))) {
      assertEquals(WriteMode.CACHE_FIRST, io.writeMode(disk), "rotational: reads go through the cache");
      assertEquals(uringAvailable() ? WriteMode.DIRECT : WriteMode.CACHE_FIRST, io.writeMode(ssd),
          "ssd policy: reads are O_DIRECT where io_uring is there");
    }
    conf.setBoolean(DiskSettings.DIRECT_READS_KEY, false);
    try (DiskIo io = new DiskIo(DiskSettings.of(conf), List.of(disk, ssd))) {
      assertEquals(WriteMode.CACHE_FIRST, io.writeMode(ssd), "buffered reads: written data is kept for them");
    }
  }

  @Test
  void everyModeWritesTheDataItsChecksumsVerifyAndLeavesTheCacheAsItSays() throws Exception {
    assumeTrue(HrdmaNative.isAvailable(), "libhrdma: write-back, dropping and O_DIRECT need it");
    int size = 16 * MB + 12345; // ends inside a page: the tail goes through the page cache in every mode
    byte[] data = new byte[size];
    new Random(7).nextBytes(data);
    DataChecksum sum = DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, BYTES_PER_CHECKSUM);
    // the chunk checksums of the stream, as the client sends them with its packets (.meta)
    byte[] sums = new byte[(size + BYTES_PER_CHECKSUM - 1) / BYTES_PER_CHECKSUM * sum.getChecksumSize()];
    sum.calculateChunkedSums(ByteBuffer.wrap(data), ByteBuffer.wrap(sums));
    for (String c : cases()) {
      WriteMode mode = modeOf(c);
      boolean first = !c.endsWith(DOWNSTREAM);
      WriteMode want = mode.forPipeline(first);
      Path d = Files.createDirectories(dir.resolve(c));
      Volume v = new Volume("v-" + c, StorageType.DISK, d.toString());
      Configuration conf = new Configuration(false);
      conf.set(DiskSettings.POLICY_KEY_PREFIX + "disk", "rotational");
      conf.set(DiskSettings.WRITE_MODE_OVERRIDES_KEY, d + "=" + mode.key());
      conf.setLong(DiskSettings.DROP_BYTES_KEY, MB);
      Path blk = d.resolve("blk_1");
      Files.createFile(blk);
      WriteMode used;
      try (DiskIo io = new DiskIo(DiskSettings.of(conf), List.of(v))) {
        assertEquals(mode, io.writeMode(v));
        long directBefore = io.scheduler(v).stats().snapshot().directWrittenBytes();
        try (FileChannel ch = FileChannel.open(blk, StandardOpenOption.WRITE)) {
          DiskIo.WriteStream w = io.openWrite(v, blk, 32L * MB, first);
          boolean direct = w.alignment() > 0;
          assertEquals(want == WriteMode.DIRECT, direct || w.mode() != want,
              "only a direct volume opens the file O_DIRECT (or falls back to dropping)");
          // packets of 64 KiB + 100 bytes: most of each direct, an odd head and tail through the channel
          int packet = (64 << 10) + 100;
          for (int at = 0; at < size; at += packet) {
            int n = Math.min(packet, size - at);
            ByteBuffer b = ByteBuffer.wrap(data, at, n).slice();
            long off = at;
            w.write(off, n, () -> {
              writeLikeTheReplica(w, ch, b, off);
              return null;
            });
          }
          used = w.mode();
          w.close();
          w.finish();
        }
        long direct = io.scheduler(v).stats().snapshot().directWrittenBytes() - directBefore;
        if (used == WriteMode.DIRECT) {
          assertTrue(direct > size - 2 * MB, mode + ": most bytes around the cache, " + direct);
        } else {
          assertEquals(0, direct, mode + ": nothing O_DIRECT");
        }
      }
      byte[] got = Files.readAllBytes(blk);
      assertArrayEquals(data, got, mode + ": the file holds what was written");
      try {
        sum.verifyChunkedSums(ByteBuffer.wrap(got), ByteBuffer.wrap(sums), blk.toString(), 0);
      } catch (ChecksumException e) {
        throw new AssertionError(mode + ": " + e.getMessage(), e);
      }
    }
  }

  @Test
  void whatEachModeLeavesInThePageCache() throws Exception {
    assumeTrue(HrdmaNative.isAvailable(), "libhrdma: write-back, dropping and O_DIRECT need it");
    int size = 8 * MB;
    byte[] data = new byte[size];
    new Random(8).nextBytes(data);
    for (String c : cases()) {
      WriteMode mode = modeOf(c);
      boolean first = !c.endsWith(DOWNSTREAM);
      Path d = Files.createDirectories(dir.resolve("cache-" + c));
      Volume v = new Volume("c-" + c, StorageType.DISK, d.toString());
      Configuration conf = new Configuration(false);
      conf.set(DiskSettings.POLICY_KEY_PREFIX + "disk", "rotational");
      conf.set(DiskSettings.WRITE_MODE_OVERRIDES_KEY, d + "=" + mode.key());
      conf.setLong(DiskSettings.DROP_BYTES_KEY, MB);
      Path blk = d.resolve("blk_2");
      Files.createFile(blk);
      WriteMode used;
      try (DiskIo io = new DiskIo(DiskSettings.of(conf), List.of(v));
          FileChannel ch = FileChannel.open(blk, StandardOpenOption.WRITE)) {
        DiskIo.WriteStream w = io.openWrite(v, blk, size, first);
        for (int at = 0; at < size; at += MB) {
          ByteBuffer b = ByteBuffer.wrap(data, at, MB).slice();
          long off = at;
          w.write(off, MB, () -> {
            writeLikeTheReplica(w, ch, b, off);
            return null;
          });
        }
        used = w.mode();
        w.close();
        w.finish();
      }
      // the first MiB: dropped behind a drop-behind writer (two windows before its end)
      try (FileChannel ch = FileChannel.open(blk, StandardOpenOption.READ)) {
        MappedByteBuffer head = ch.map(FileChannel.MapMode.READ_ONLY, 0, MB);
        assertEquals(mode.forPipeline(first), used, c);
        switch (used) {
          case CACHE -> assertTrue(head.isLoaded(), c + ": what was written stays in the page cache");
          case DROP_BEHIND, DIRECT -> assertFalse(head.isLoaded(), c + ": not in the page cache");
          default -> throw new AssertionError(used);
        }
      }
    }
  }

  @Test
  void aBlockReadsBackCorrectlyAfterItsPageCacheIsDropped() throws Exception {
    assumeTrue(HrdmaNative.isAvailable(), "libhrdma: dropping the cache needs it");
    int size = 6 * MB + 777;
    byte[] data = new byte[size];
    new Random(9).nextBytes(data);
    for (String policy : List.of("rotational", "ssd")) {
      Path d = Files.createDirectories(dir.resolve("cold-" + policy));
      Volume v = new Volume("cold-" + policy, StorageType.DISK, d.toString());
      Path blk = d.resolve("blk_3");
      Files.write(blk, data);
      try (FileChannel ch = FileChannel.open(blk, StandardOpenOption.READ);
          NativeDisk.File nf = NativeDisk.File.open(blk, 0)) {
        ch.force(false);
        nf.dropCache(0, 0, false);
        assertFalse(ch.map(FileChannel.MapMode.READ_ONLY, 0, size).isLoaded(), "dropped");
      }
      Configuration conf = new Configuration(false);
      conf.set(DiskSettings.POLICY_KEY_PREFIX + "disk", policy);
      try (DiskIo io = new DiskIo(DiskSettings.of(conf), List.of(v))) {
        DiskIo.ReadStream rs = io.openRead(v, blk);
        ByteBuffer got = ByteBuffer.allocate(size);
        try (FileChannel ch = FileChannel.open(blk, StandardOpenOption.READ)) {
          // as the packet reader does: the direct channel on an ssd volume, else the file's own
          java.nio.channels.ReadableByteChannel in = rs.direct(ch, 0, size);
          while (got.hasRemaining()) {
            int n = Math.min(got.remaining(), 64 << 10);
            ByteBuffer piece = got.slice(got.position(), n);
            rs.read(got.position(), n, () -> {
              while (piece.hasRemaining()) {
                if (in.read(piece) < 0) {
                  throw new java.io.EOFException();
                }
              }
              return null;
            });
            got.position(got.position() + n);
          }
          in.close();
        }
        rs.close();
        assertArrayEquals(data, got.array(), policy + ": the cold read returns the file's bytes");
      }
    }
  }

  /**
   * O_DIRECT writes go straight from a packet whose data the transport placed page-aligned, and
   * through the staging buffer only where the address is not aligned; the file has the bytes
   * either way.
   */
  @Test
  void alignedDataIsWrittenInPlaceUnalignedDataIsStaged() throws Exception {
    assumeTrue(HrdmaNative.isAvailable(), "libhrdma: O_DIRECT writes need it");
    Path d = Files.createDirectories(dir.resolve("inplace"));
    Volume v = new Volume("v-inplace", StorageType.DISK, d.toString());
    Configuration conf = new Configuration(false);
    conf.set(DiskSettings.POLICY_KEY_PREFIX + "disk", "rotational");
    conf.set(DiskSettings.WRITE_MODE_OVERRIDES_KEY, d + "=direct");
    Path blk = d.resolve("blk_2");
    Files.createFile(blk);
    byte[] data = new byte[4 * MB];
    new Random(11).nextBytes(data);
    // a received packet's buffer: the data at a page-aligned address, or 100 bytes past one
    ByteBuffer mem = ByteBuffer.allocateDirect(2 * MB + 8192).alignedSlice(4096);
    try (DiskIo io = new DiskIo(DiskSettings.of(conf), List.of(v))) {
      DiskIo.WriteStream w = io.openWrite(v, blk, 4L * MB, false);
      assumeTrue(w.alignment() > 0, "this filesystem takes no O_DIRECT");
      VolumeStats.Snapshot before = io.scheduler(v).stats().snapshot();
      int[] shift = {0, 100};
      int[] written = new int[2];
      for (int i = 0; i < 2; i++) {
        ByteBuffer b = mem.duplicate().position(shift[i]).limit(shift[i] + 2 * MB).slice();
        b.put(0, data, i * 2 * MB, 2 * MB);
        long off = (long) i * 2 * MB;
        int k = i;
        w.write(off, 2 * MB, () -> {
          written[k] = w.writeDirect(b, off);
          return null;
        });
        assertEquals(2 * MB, written[i], "whole pages at an aligned offset go O_DIRECT");
        assertFalse(b.hasRemaining());
      }
      VolumeStats.Snapshot after = io.scheduler(v).stats().snapshot();
      w.close();
      assertEquals(4L * MB, after.directWrittenBytes() - before.directWrittenBytes());
      assertEquals(2L * MB, after.directStagedBytes() - before.directStagedBytes(),
          "only the unaligned packet is copied through the staging buffer");
    }
    assertArrayEquals(data, Files.readAllBytes(blk));
  }

  /** What RbwReplica.writeData does with a direct writer: a head to the alignment buffered, the aligned part direct. */
  private static void writeLikeTheReplica(DiskIo.WriteStream w, FileChannel ch, ByteBuffer data, long at)
      throws java.io.IOException {
    int align = w.alignment();
    if (align > 0) {
      int head = (int) Math.min(data.remaining(), (align - at % align) % align);
      if (head > 0 && data.remaining() - head >= align) {
        ByteBuffer h = data.slice(data.position(), head);
        while (h.hasRemaining()) {
          ch.write(h, at + h.position());
        }
        data.position(data.position() + head);
        at += head;
      }
      if (at % align == 0) {
        at += w.writeDirect(data, at);
      }
    }
    while (data.hasRemaining()) {
      at += ch.write(data, at);
    }
  }

  private static boolean uringAvailable() {
    if (!HrdmaNative.isAvailable()) {
      return false;
    }
    try (NativeDisk.Ring r = new NativeDisk.Ring(1)) {
      return true;
    } catch (NativeException | RuntimeException e) {
      return false;
    }
  }

  private static final String DOWNSTREAM = "-downstream";

  /** Each mode's name, and cache-first's also as written by a node downstream in its pipeline. */
  private static List<String> cases() {
    List<String> c = new java.util.ArrayList<>();
    for (WriteMode m : WriteMode.values()) {
      c.add(m.key());
      c.add(m.key() + DOWNSTREAM);
    }
    return c;
  }

  private static WriteMode modeOf(String c) {
    String k = c.endsWith(DOWNSTREAM) ? c.substring(0, c.length() - DOWNSTREAM.length()) : c;
    for (WriteMode m : WriteMode.values()) {
      if (m.key().equals(k)) {
        return m;
      }
    }
    throw new AssertionError(c);
  }
}
