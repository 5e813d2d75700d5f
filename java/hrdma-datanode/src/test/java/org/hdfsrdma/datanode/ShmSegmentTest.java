package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.nativelib.NativeShm;
import org.hdfsrdma.protocol.SameHost;
import org.hdfsrdma.transport.BufferPool;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.SlabAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The DataNode's shared-memory segments alone (no connection): who is granted
 * one, the budget, the file's mode, stale files; slots handed out until the
 * segment is full and the transport's buffers after; releases only of what
 * the client holds; the memory unmapped only once every slot is back.
 */
class ShmSegmentTest {
  private static final int SLOT = 1 << 20;

  @TempDir
  Path dir;

  private final BufferPool pool = new BufferPool(SlabAllocator.DIRECT, 1 << 20, 64 << 20);

  @AfterEach
  void closePool() {
    pool.close();
  }

  private ShmGrants grants(long segmentBytes, long maxBytes) {
    return grants(segmentBytes, maxBytes, ReadSettings.SHM_MAX_BYTES_PER_CLIENT_DEFAULT,
        ReadSettings.SHM_MAP_TIMEOUT_DEFAULT);
  }

  private ShmGrants grants(long segmentBytes, long maxBytes, long perClient, long mapTimeoutMs) {
    Configuration c = new Configuration(false);
    c.setLong(ReadSettings.SHM_MAX_BYTES_PER_CLIENT_KEY, perClient);
    c.setLong(ReadSettings.SHM_MAP_TIMEOUT_KEY, mapTimeoutMs);
    c.setLong(ReadSettings.SHM_SEGMENT_BYTES_KEY, segmentBytes);
    c.setLong(ReadSettings.SHM_MAX_BYTES_KEY, maxBytes);
    c.set(ReadSettings.SHM_DIR_KEY, dir.toString());
    return new ShmGrants(ReadSettings.of(c), Runnable::run);
  }

  @Test
  void grantedOnlyToThisHostWithinTheBudgetAsAnOwnerOnlyFile() throws Exception {
    ShmGrants g = grants(4 * SLOT, 6 * SLOT);
    ShmGrants.Refused other = assertThrows(ShmGrants.Refused.class, () -> g.grant("another-host", "user a", pool, SLOT));
    assertTrue(other.getMessage().contains("not on this DataNode's host"), other.getMessage());
    ShmSegment s = g.grant(SameHost.name(), "user a", pool, SLOT);
    try {
      assertEquals(4L * SLOT, s.bytes());
      assertEquals(4L * SLOT, g.bytesMapped());
      assertEquals(dir, s.path().getParent());
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(s.path())));
      ShmGrants.Refused full = assertThrows(ShmGrants.Refused.class, () -> g.grant(SameHost.name(), "user a", pool, SLOT));
      assertTrue(full.getMessage().contains(ReadSettings.SHM_MAX_BYTES_KEY), full.getMessage());
      assertEquals(2, g.refused());
      assertEquals(1, g.granted());
    } finally {
      s.close();
    }
    assertFalse(Files.exists(s.path()), "closing removes the file");
    assertEquals(0, g.bytesMapped(), "the budget is given back with the mapping");
    ShmGrants off = grants(0, 6 * SLOT);
    ShmGrants.Refused r = assertThrows(ShmGrants.Refused.class, () -> off.grant(SameHost.name(), "user a", pool, SLOT));
    assertTrue(r.getMessage().contains(ReadSettings.SHM_SEGMENT_BYTES_KEY), r.getMessage());
  }

  /** One client's segments stay within its own budget, whatever the DataNode's whole budget leaves. */
  @Test
  void eachClientHasItsOwnBudget() throws Exception {
    ShmGrants g = grants(2 * SLOT, 10 * SLOT, 3 * SLOT, 60_000);
    ShmSegment a1 = g.grant(SameHost.name(), "user a", pool, SLOT);
    ShmGrants.Refused over = assertThrows(ShmGrants.Refused.class,
        () -> g.grant(SameHost.name(), "user a", pool, SLOT));
    assertTrue(over.getMessage().contains(ReadSettings.SHM_MAX_BYTES_PER_CLIENT_KEY), over.getMessage());
    assertTrue(over.getMessage().contains("user a"), over.getMessage());
    ShmSegment b1 = g.grant(SameHost.name(), "user b", pool, SLOT);
    assertEquals(2L * SLOT, g.bytesMapped("user a"));
    assertEquals(2L * SLOT, g.bytesMapped("user b"));
    assertEquals(4L * SLOT, g.bytesMapped());
    a1.close();
    assertEquals(0, g.bytesMapped("user a"), "given back with the mapping");
    ShmSegment a2 = g.grant(SameHost.name(), "user a", pool, SLOT);
    a2.close();
    b1.close();
    assertEquals(0, g.bytesMapped());
    assertEquals(0, g.bytesMapped("user b"));
    assertEquals(1, g.refused());
  }

  /** A granted segment the client never maps is freed after the timeout; a mapped one stays. */
  @Test
  void aSegmentNotMappedInTimeIsFreed() throws Exception {
    ShmGrants g = grants(2 * SLOT, 10 * SLOT, 10 * SLOT, 300);
    ShmSegment never = g.grant(SameHost.name(), "user a", pool, SLOT);
    ShmSegment mapped = g.grant(SameHost.name(), "user a", pool, SLOT);
    mapped.clientMapped();
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (g.mapTimeouts() == 0 && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertEquals(1, g.mapTimeouts());
    assertFalse(Files.exists(never.path()), "its file is gone");
    assertEquals(2L * SLOT, g.bytesMapped(), "only the mapped one is left");
    Thread.sleep(500);
    assertTrue(mapped.isMapped());
    assertEquals(1, g.mapTimeouts(), "the mapped one is not freed");
    mapped.close();
    assertEquals(0, g.bytesMapped());
  }

  @Test
  void staleFilesOfProcessesThatAreGoneAreRemoved() throws Exception {
    long dead = ProcessHandle.current().pid() + 1;
    while (ProcessHandle.of(dead).isPresent()) {
      dead++;
    }
    Path stale = Files.createFile(dir.resolve(ShmGrants.PREFIX + dead + "-0123"));
    Path live = Files.createFile(dir.resolve(ShmGrants.PREFIX + ProcessHandle.current().pid() + "-4567"));
    Path other = Files.createFile(dir.resolve("someone-else"));
    grants(4 * SLOT, 6 * SLOT).removeStale();
    assertFalse(Files.exists(stale));
    assertTrue(Files.exists(live));
    assertTrue(Files.exists(other));
  }

  @Test
  void slotsUntilFullThenTheTransportsBuffersAndUnmappedOnlyWhenAllAreBack() throws Exception {
    long mapped0 = NativeShm.mappedBytes();
    ShmGrants g = grants(3 * SLOT, 6 * SLOT);
    ShmSegment s = g.grant(SameHost.name(), "user a", pool, SLOT);
    assertEquals(SLOT, s.footprint(SLOT - 100), "a packet that fits takes a slot");
    assertEquals(pool.footprint(SLOT + 1), s.footprint(SLOT + 1));
    // the client's mapping, made before it says SHM_MAPPED (which removes the file)
    try (NativeShm.Segment client = NativeShm.open(s.path(), s.bytes())) {
      RegisteredBuffer before = s.allocate(1000);
      assertEquals(0, s.slotsHeld(), "not mapped by the client yet: by value");
      before.release();
      assertTrue(s.clientMapped());
      s.removeFile();
      assertFalse(Files.exists(s.path()));
      List<RegisteredBuffer> slots = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        RegisteredBuffer b = s.allocate(SLOT - i);
        assertEquals(SLOT - i, b.readableBytes());
        b.nio().putInt(0, 0x5eed0000 + i);
        slots.add(b);
      }
      assertEquals(3, s.slotsHeld());
      RegisteredBuffer spilled = s.allocate(100);
      assertEquals(3, s.slotsHeld(), "full: from the transport's pool");
      assertEquals(1, pool.buffersOutstanding());
      spilled.release();
      RegisteredBuffer big = s.allocate(SLOT + 1);
      assertEquals(3, s.slotsHeld(), "larger than a slot: from the transport's pool");
      big.release();
      // what the DataNode wrote, the client sees at the slot's offset
      ByteBuffer seen = client.buffer();
      List<Integer> marks = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        marks.add(seen.getInt(i * SLOT));
      }
      marks.sort(null);
      assertEquals(List.of(0x5eed0000, 0x5eed0001, 0x5eed0002), marks);
      assertFalse(s.released(0), "nothing was sent by reference: no release is valid");
      slots.remove(0).release();
      assertEquals(2, s.slotsHeld());
      RegisteredBuffer again = s.allocate(10);
      assertEquals(3, s.slotsHeld(), "a slot given back is handed out again");
      slots.add(again);
      s.close();
      assertEquals(mapped0 + s.bytes() + client.bytes(), NativeShm.mappedBytes(),
          "closed with slots held: still mapped");
      assertEquals(3L * SLOT, g.bytesMapped());
      slots.remove(0).release();
      slots.remove(0).release();
      assertEquals(mapped0 + s.bytes() + client.bytes(), NativeShm.mappedBytes());
      slots.remove(0).release();
      assertEquals(mapped0 + client.bytes(), NativeShm.mappedBytes(), "the last slot back unmaps it");
      assertEquals(0, g.bytesMapped());
      RegisteredBuffer after = s.allocate(10);
      assertEquals(0, s.slotsHeld(), "a closed segment hands out no slot");
      after.release();
    }
    assertEquals(mapped0, NativeShm.mappedBytes());
    assertEquals(0, pool.buffersOutstanding());
  }

  /**
   * The stall the DataNode's sweep closes a connection for (dfs.datanode.socket.write.timeout):
   * measured from the first reference the client holds, reset by each release, none once it holds
   * nothing; the DATA_REF's own send completed at once (its credit came back), so only the
   * segment knows the packet is not taken.
   */
  @Test
  void packetsHeldByReferenceStallUntilReleased() throws Exception {
    NativeShm.Segment mem = NativeShm.create(dir.resolve("stall"), 2L * SLOT);
    ShmSegment s = new ShmSegment(mem, pool, SLOT, new java.util.concurrent.atomic.AtomicLong(), () -> { }, Runnable::run);
    List<Long> offsets = new ArrayList<>();
    RecordingWire ep = new RecordingWire(pool, m -> {
      if (m.kind() == org.hdfsrdma.protocol.MessageKind.DATA_REF) {
        offsets.add(m.shmRef().getOffset());
      }
    }, e -> { });
    try {
      assertTrue(s.clientMapped());
      long t0 = System.nanoTime();
      assertEquals(0, s.stallNanos(t0 + 10_000_000_000L), "nothing held: no stall");
      RegisteredBuffer p = s.allocate(4096);
      p.nio().limit(4096);
      java.util.concurrent.CompletableFuture<Void> f = ShmSegment.send(ep, 1, p);
      assertEquals(1, offsets.size());
      assertEquals(0, ep.sendStallNanos(System.nanoTime()), "the DATA_REF itself was sent");
      assertFalse(f.isDone(), "the packet's send completes at its release");
      long t1 = System.nanoTime();
      long stall = s.stallNanos(t1 + 5_000_000_000L);
      assertTrue(stall >= 5_000_000_000L && stall <= 5_000_000_000L + (t1 - t0), "stall " + stall);
      assertTrue(s.released(offsets.get(0)));
      assertTrue(f.isDone());
      assertEquals(0, s.stallNanos(System.nanoTime() + 10_000_000_000L), "all released: no stall");
    } finally {
      s.close();
      ep.close();
    }
  }

  /**
   * A connection closes on its transport's I/O thread: a segment whose file was removed once the
   * client mapped it sends no unlink to the directory then (it may be on a disk). A file put at
   * its path afterwards stands for the directory: it is left alone.
   */
  @Test
  void closingASegmentWhoseFileIsGoneTouchesNoDirectory() throws Exception {
    ShmGrants g = grants(2 * SLOT, 6 * SLOT);
    ShmSegment s = g.grant(SameHost.name(), "user a", pool, SLOT);
    assertTrue(s.clientMapped());
    s.removeFile();
    Files.createFile(s.path());
    s.close();
    assertTrue(Files.exists(s.path()), "close unlinked a path it had removed already");
    Files.delete(s.path());
    assertEquals(0, g.bytesMapped());
  }

  /**
   * No unlink on the thread that closes a segment (a connection's transport I/O thread), in every
   * ordering: a segment the client never mapped, and one closed after the client's SHM_MAPPED
   * and before the read executor removed its file, have it removed on the files executor; one
   * whose file is gone hands nothing over. Either way the file goes and the budget comes back.
   */
  @Test
  void aClosedSegmentsFileIsRemovedOffTheClosingThreadInEveryOrdering() throws Exception {
    List<Runnable> handedOver = new ArrayList<>();
    Configuration c = new Configuration(false);
    c.setLong(ReadSettings.SHM_SEGMENT_BYTES_KEY, 2 * SLOT);
    c.setLong(ReadSettings.SHM_MAX_BYTES_KEY, 6 * SLOT);
    c.set(ReadSettings.SHM_DIR_KEY, dir.toString());
    ShmGrants g = new ShmGrants(ReadSettings.of(c), handedOver::add);
    ShmSegment neverMapped = g.grant(SameHost.name(), "user a", pool, SLOT);
    ShmSegment mappedNotRemoved = g.grant(SameHost.name(), "user a", pool, SLOT);
    ShmSegment removed = g.grant(SameHost.name(), "user a", pool, SLOT);
    assertTrue(mappedNotRemoved.clientMapped()); // SHM_MAPPED; its removeFile still queued on the read executor
    assertTrue(removed.clientMapped());
    removed.removeFile();

    neverMapped.close();
    mappedNotRemoved.close();
    removed.close();
    assertTrue(Files.exists(neverMapped.path()), "a segment never mapped was unlinked on the closing thread");
    assertTrue(Files.exists(mappedNotRemoved.path()),
        "a segment closed between SHM_MAPPED and its file's removal was unlinked on the closing thread");
    assertEquals(2, handedOver.size(), "the two files handed over for removal");
    assertEquals(0, g.bytesMapped(), "the memory is unmapped at the close, the file or not");

    Thread t = new Thread(() -> handedOver.forEach(Runnable::run), "files");
    t.start();
    t.join(10_000);
    assertFalse(Files.exists(neverMapped.path()), "removed off the closing thread");
    assertFalse(Files.exists(mappedNotRemoved.path()), "removed off the closing thread");
  }
}
