package org.hdfsrdma.datanode.disk;

import static org.hdfsrdma.datanode.disk.DirectFixtures.diskIo;
import static org.hdfsrdma.datanode.disk.DirectFixtures.file;
import static org.hdfsrdma.datanode.disk.DirectFixtures.volume;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.EOFException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.hdfsrdma.nativelib.Jni;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * O_DIRECT straight into the packets of a read, on a real file of this
 * machine through {@link DiskIo}: the bytes of every packet, a policy-size
 * request split over whole packets, the packets held ahead bounded, and
 * every packet made either taken by the reader or discarded (none lost,
 * none given back while a read may still land in it).
 */
@Timeout(60)
class DirectPacketReaderTest {
  private static final int KB = 1 << 10;
  private static final int MB = 1 << 20;

  @TempDir
  Path dir;

  /** A packet of plain aligned direct memory; counts what is made and given back. */
  static final class Made {
    final AtomicInteger made = new AtomicInteger();
    final AtomicInteger discarded = new AtomicInteger();
    final List<TestPacket> all = java.util.Collections.synchronizedList(new ArrayList<>());

    TestPacket allocate(long offset, int length, int align) {
      made.incrementAndGet();
      TestPacket p = new TestPacket(offset, length, align, this);
      all.add(p);
      return p;
    }
  }

  static final class TestPacket implements DirectPacketReader.Packet {
    final long offset;
    final int length;
    final ByteBuffer data;
    final Made owner;
    volatile boolean gone;

    TestPacket(long offset, int length, int align, Made owner) {
      this.offset = offset;
      this.length = length;
      this.owner = owner;
      int room = length + (align - length % align) % align;
      this.data = ByteBuffer.allocateDirect(room + align).alignedSlice(align).limit(room);
    }

    @Override
    public long dataAddress() {
      return Jni.bufferAddress0(data);
    }

    @Override
    public void discard() {
      if (gone) {
        throw new IllegalStateException("discarded twice: packet at " + offset);
      }
      gone = true;
      owner.discarded.incrementAndGet();
    }

    byte[] bytes() {
      byte[] b = new byte[length];
      data.duplicate().get(b);
      return b;
    }
  }

  @Test
  void everyPacketHoldsItsBytesInPlace() throws Exception {
    Path p = dir.resolve("blk_1");
    byte[] data = file(p, 5 * MB + 1234);
    try (DiskIo io = diskIo(dir, 3, 512 * KB, 2 * MB)) {
      long[][] ranges = {{0, data.length}, {MB, 3 * MB + 17}, {4 * MB, data.length}, {0, 100}};
      for (long[] r : ranges) {
        Made made = new Made();
        int packetBytes = 128 * KB;
        DiskIo.ReadStream rs = io.openRead(volume(dir), p);
        try (rs; DirectPacketReader<TestPacket> in = rs.packets(r[0], r[1], packetBytes, made::allocate)) {
          assertNotNull(in, "an ssd volume reads with O_DIRECT into the packets");
          for (long at = r[0]; at < r[1]; at += packetBytes) {
            TestPacket t = in.take(at);
            int len = (int) Math.min(packetBytes, r[1] - at);
            assertEquals(at, t.offset);
            assertEquals(len, t.length);
            assertArrayEquals(Arrays.copyOfRange(data, (int) at, (int) at + len), t.bytes(),
                "the packet at " + at + " of range " + r[0] + ".." + r[1]);
          }
          assertThrows(EOFException.class, () -> in.take(r[1]), "nothing past the range");
        }
        long packets = (r[1] - r[0] + packetBytes - 1) / packetBytes;
        assertEquals(packets, made.made.get(), "one packet made per packet of the range, none twice");
        assertEquals(0, made.discarded.get(), "all taken");
      }
    }
  }

  @Test
  void aRequestOfThePolicysSizeReadsWholePackets() throws Exception {
    Path p = dir.resolve("blk_2");
    file(p, 4 * MB);
    // requests of 1 MB, packets of 256 KB: four reads (segments) per scheduler request
    try (DiskIo io = diskIo(dir, 2, MB, 4 * MB)) {
      Made made = new Made();
      DiskIo.ReadStream rs = io.openRead(volume(dir), p);
      try (rs; DirectPacketReader<TestPacket> in = rs.packets(0, 4 * MB, 256 * KB, made::allocate)) {
        for (long at = 0; at < 4 * MB; at += 256 * KB) {
          in.take(at);
        }
      }
      VolumeScheduler s = io.schedulers().get("ssd-1");
      long end = System.nanoTime() + 10_000_000_000L;
      while (s.stats().snapshot().requests() < 4 && System.nanoTime() < end) {
        Thread.sleep(5); // the scheduler counts a request just after its reads are done
      }
      Thread.sleep(20);
      VolumeStats.Snapshot st = s.stats().snapshot();
      assertEquals(4, st.requests(), "4 MB in scheduler requests of 1 MB");
      assertEquals(4, st.directRequests());
      assertEquals(4L * MB, st.directBytes());
      assertEquals(4L * MB, st.directPacketBytes(), "all of it into the packets");
      assertEquals(16, made.made.get());
    }
  }

  @Test
  void packetsHeldAheadStayWithinTheWindowAndCloseDiscardsTheRest() throws Exception {
    Path p = dir.resolve("blk_3");
    file(p, 16 * MB);
    int packet = 256 * KB;
    // depth 2, window of 6 packets: with the reader away, the workers' refills stop at 6 held
    try (DiskIo io = diskIo(dir, 2, packet, 6 * packet)) {
      VolumeScheduler s = io.schedulers().get("ssd-1");
      Made made = new Made();
      DiskIo.ReadStream rs = io.openRead(volume(dir), p);
      DirectPacketReader<TestPacket> in = rs.packets(0, 16 * MB, packet, made::allocate);
      TestPacket first = in.take(0);
      first.discard(); // the reader's now: it gives it back itself
      long end = System.nanoTime() + 10_000_000_000L;
      while (made.made.get() < 7 && System.nanoTime() < end) {
        Thread.sleep(5);
      }
      while (s.stats().snapshot().requests() < 7 && System.nanoTime() < end) {
        Thread.sleep(5);
      }
      Thread.sleep(50);
      assertEquals(7, made.made.get(), "the one taken and 6 held ahead, no more");
      assertEquals(6, in.pendingRequests());
      in.close();
      rs.close();
      assertEquals(7, made.discarded.get(), "every packet not taken is given back at close");
      for (TestPacket t : made.all) {
        assertTrue(t.gone, "packet at " + t.offset);
      }
    }
  }

  @Test
  void aFileShorterThanTheRangeIsAnErrorAtThePacketItMisses() throws Exception {
    Path p = dir.resolve("blk_4");
    byte[] data = file(p, MB + 100);
    try (DiskIo io = diskIo(dir, 4, 256 * KB, 2 * MB)) {
      Made made = new Made();
      DiskIo.ReadStream rs = io.openRead(volume(dir), p);
      try (rs; DirectPacketReader<TestPacket> in = rs.packets(0, 2 * MB, 512 * KB, made::allocate)) {
        assertArrayEquals(Arrays.copyOfRange(data, 0, 512 * KB), in.take(0).bytes());
        in.take(512 * KB);
        EOFException e = assertThrows(EOFException.class, () -> in.take(MB));
        assertTrue(e.getMessage().contains("ended at " + (MB + 100)), e.getMessage());
      }
      assertEquals(made.made.get() - 2, made.discarded.get(), "all but the two taken given back");
    }
  }

  @Test
  void outOfPacketMemoryWaitsForTheReaderWhileItHoldsSomeAndFailsTheReadOnlyWhenItHoldsNone() throws Exception {
    Path p = dir.resolve("blk_6");
    byte[] data = file(p, 4 * MB);
    int packet = 256 * KB;
    for (int room : new int[] {3, 1}) {
      try (DiskIo io = diskIo(dir, room == 1 ? 1 : 4, packet, 8 * packet)) {
        AtomicInteger live = new AtomicInteger();
        AtomicInteger refused = new AtomicInteger();
        Made made = new Made();
        // memory for `room` packets at a time: the window of 8 never fills; with room for one,
        // the top-up after each take finds none (the reader holds it) and the take still hands it over
        DirectPacketReader.Factory<TestPacket> limited = (offset, len, align) -> {
          if (live.incrementAndGet() > room) {
            live.decrementAndGet();
            refused.incrementAndGet();
            throw new java.io.IOException("out of registered memory (test)");
          }
          return made.allocate(offset, len, align);
        };
        DiskIo.ReadStream rs = io.openRead(volume(dir), p);
        try (rs; DirectPacketReader<TestPacket> in = rs.packets(0, 4 * MB, packet, limited)) {
          for (long at = 0; at < 4 * MB; at += packet) {
            TestPacket t = in.take(at);
            assertArrayEquals(Arrays.copyOfRange(data, (int) at, (int) at + packet), t.bytes(),
                "room " + room + ": packet at " + at);
            t.discard();
            live.decrementAndGet(); // sent: its memory is free
          }
        }
        assertTrue(refused.get() > 0, "room " + room + ": the factory ran out of memory at times");
        assertEquals(made.made.get(), made.discarded.get(), "room " + room + ": every packet given back");
        assertEquals(16, made.made.get(), "room " + room + ": each packet made once");
      }
    }
    try (DiskIo io = diskIo(dir, 4, packet, 8 * packet)) {
      // no memory at all: the reader is told
      DiskIo.ReadStream rs2 = io.openRead(volume(dir), p);
      try (rs2; DirectPacketReader<TestPacket> in = rs2.packets(0, 4 * MB, packet, (o, l, a) -> {
        throw new java.io.IOException("out of registered memory (test)");
      })) {
        java.io.IOException e = assertThrows(java.io.IOException.class, () -> in.take(0));
        assertTrue(e.getMessage().contains("out of registered memory"), e.getMessage());
      }
    }
  }

  @Test
  void anUnalignedStartOrPacketSizeIsLeftToTheChannel() throws Exception {
    Path p = dir.resolve("blk_5");
    file(p, MB);
    try (DiskIo io = diskIo(dir, 4, 256 * KB, 2 * MB)) {
      Made made = new Made();
      DiskIo.ReadStream rs = io.openRead(volume(dir), p);
      try (rs) {
        assertNull(rs.packets(100, MB, 64 * KB, made::allocate), "start not on an O_DIRECT block");
        assertNull(rs.packets(0, MB, 64 * KB + 100, made::allocate), "packets not whole O_DIRECT blocks");
      }
      assertEquals(0, made.made.get());
    }
  }
}
