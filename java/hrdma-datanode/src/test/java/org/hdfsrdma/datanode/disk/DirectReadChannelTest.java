package org.hdfsrdma.datanode.disk;

import static org.hdfsrdma.datanode.disk.DirectFixtures.diskIo;
import static org.hdfsrdma.datanode.disk.DirectFixtures.file;
import static org.hdfsrdma.datanode.disk.DirectFixtures.volume;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The O_DIRECT io_uring read path of ssd volumes on a real file of this
 * machine, through {@link DiskIo} as a client read uses it: the bytes, the
 * request accounting (every O_DIRECT request is one scheduler request), and
 * the read-ahead kept full.
 */
@Timeout(60)
class DirectReadChannelTest {
  private static final int KB = 1 << 10;
  private static final int MB = 1 << 20;

  @TempDir
  Path dir;

  /** Reads [start, limit) through the volume's direct channel in pieces of {@code piece} bytes. */
  private static byte[] read(DiskIo io, Path dir, Path p, long start, long limit, int piece) throws Exception {
    DiskIo.ReadStream rs = io.openRead(volume(dir), p);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (rs; ReadableByteChannel ch = rs.direct(FileChannel.open(p, StandardOpenOption.READ), start, limit)) {
      assertTrue(ch instanceof DirectReadChannel, "an ssd volume reads with O_DIRECT: " + ch);
      ByteBuffer b = ByteBuffer.allocateDirect(piece);
      while (true) {
        b.clear();
        int n = ch.read(b);
        if (n < 0) {
          break;
        }
        b.flip();
        byte[] got = new byte[n];
        b.get(got);
        out.write(got);
      }
    }
    return out.toByteArray();
  }

  @Test
  void readsTheBytesOfAnyRangeInAnyPieces() throws Exception {
    Path p = dir.resolve("blk_1");
    byte[] data = file(p, 5 * MB + 1234);
    // depth 3 of 256 KB in a window of 1 MB: the window wraps every 4 requests
    try (DiskIo io = diskIo(dir, 3, 256 * KB, MB)) {
      long[][] ranges = {{0, data.length}, {5000, 3 * MB + 17}, {data.length - 10, data.length},
        {MB, 2 * MB}, {4095, 4097}};
      int[] pieces = {MB, 100_000, 4096, 7};
      for (long[] r : ranges) {
        for (int piece : pieces) {
          if (piece < 4096 && r[1] - r[0] > 64 * KB) {
            continue; // slow, and says nothing more
          }
          byte[] got = read(io, dir, p, r[0], r[1], piece);
          assertArrayEquals(Arrays.copyOfRange(data, (int) r[0], (int) r[1]), got,
              "range " + r[0] + ".." + r[1] + " in pieces of " + piece);
        }
      }
    }
  }

  @Test
  void theEndOfTheFileEndsTheReadEvenBeforeTheLimit() throws Exception {
    Path p = dir.resolve("blk_2");
    byte[] data = file(p, MB + 100);
    try (DiskIo io = diskIo(dir, 4, 256 * KB, 2 * MB)) {
      assertArrayEquals(Arrays.copyOfRange(data, 300, data.length), read(io, dir, p, 300, 2 * MB, 64 * KB));
    }
  }

  @Test
  void everyDirectRequestIsOneSchedulerRequestOfThePolicysSize() throws Exception {
    Path p = dir.resolve("blk_3");
    file(p, 4 * MB);
    try (DiskIo io = diskIo(dir, 4, 512 * KB, 2 * MB + 512 * KB)) {
      VolumeScheduler s = io.schedulers().get("ssd-1");
      read(io, dir, p, 0, 4 * MB, MB);
      // a request's data reaches the reader before its worker counts it done in the scheduler
      long end = System.nanoTime() + 5_000_000_000L;
      while (s.stats().snapshot().requests() < 8 && System.nanoTime() < end) {
        Thread.sleep(5);
      }
      VolumeStats.Snapshot st = s.stats().snapshot();
      assertEquals(8, st.directRequests(), "4 MB in requests of 512 KB");
      assertEquals(4L * MB, st.directBytes());
      assertEquals(8, st.requests(), "the scheduler saw each O_DIRECT request, not one per refill");
      assertEquals(4L * MB, st.bytesRead());
    }
  }

  @Test
  void theReadAheadKeepsDepthRequestsIssuedAheadOfTheReader() throws Exception {
    Path p = dir.resolve("blk_4");
    file(p, 16 * MB);
    int depth = 4;
    int req = 256 * KB;
    // a window of (depth + 1) requests: depth ahead while the reader copies from one
    try (DiskIo io = diskIo(dir, depth, req, (depth + 1) * req)) {
      DiskIo.ReadStream rs = io.openRead(volume(dir), p);
      try (rs; DirectReadChannel ch = (DirectReadChannel) rs.direct(FileChannel.open(p, StandardOpenOption.READ),
          0, 16 * MB)) {
        ByteBuffer b = ByteBuffer.allocateDirect(1);
        assertEquals(1, ch.read(b));
        assertEquals(depth + 1, ch.pendingRequests(), "the one being read and depth more");
        // once a request is copied out, its room is read again further on (at the latest when
        // the reader waits for the next one, whose slot on the device is then free)
        ByteBuffer rest = ByteBuffer.allocateDirect(req - 1);
        while (rest.hasRemaining()) {
          ch.read(rest);
        }
        assertEquals(1, ch.read(ByteBuffer.allocateDirect(1)));
        assertEquals(depth + 1, ch.pendingRequests());
      }
      // closing waited for what was in flight: depth + 1 at first, one more after the first was copied out
      assertEquals(depth + 2, io.schedulers().get("ssd-1").stats().snapshot().requests());
    }
    // in a window too small for depth + 1 requests of the policy's size, the requests get smaller, not fewer
    int small = (depth + 1) * 100 * 1024; // room for depth + 1 requests of 100 KB, not of 256 KB
    try (DiskIo io = diskIo(dir, depth, req, small)) {
      DiskIo.ReadStream rs = io.openRead(volume(dir), p);
      try (rs; DirectReadChannel ch = (DirectReadChannel) rs.direct(FileChannel.open(p, StandardOpenOption.READ),
          0, 16 * MB)) {
        assertEquals(1, ch.read(ByteBuffer.allocateDirect(1)));
        assertEquals(depth + 1, ch.pendingRequests());
      }
      VolumeStats.Snapshot st = io.schedulers().get("ssd-1").stats().snapshot();
      assertEquals(st.directRequests() * 100 * 1024, st.directBytes(), "requests of window / (depth + 1)");
    }
  }

  @Test
  void completionsRefillTheWindowWhileTheReaderIsAway() throws Exception {
    Path p = dir.resolve("blk_5");
    byte[] data = file(p, 16 * MB);
    int depth = 2;
    int req = 256 * KB;
    try (DiskIo io = diskIo(dir, depth, req, 8 * req)) {
      VolumeScheduler s = io.schedulers().get("ssd-1");
      DiskIo.ReadStream rs = io.openRead(volume(dir), p);
      ByteArrayOutputStream got = new ByteArrayOutputStream();
      try (rs; DirectReadChannel ch = (DirectReadChannel) rs.direct(FileChannel.open(p, StandardOpenOption.READ),
          0, 16 * MB)) {
        ByteBuffer one = ByteBuffer.allocateDirect(1);
        assertEquals(1, ch.read(one));
        got.write(one.get(0));
        // the reader does nothing now (as when it waits for the transport): the I/O workers
        // issue the next requests as theirs complete, depth at a time, until the window is full
        long end = System.nanoTime() + 10_000_000_000L;
        while (ch.pendingRequests() < 8 && System.nanoTime() < end) {
          Thread.sleep(5);
        }
        assertEquals(8, ch.pendingRequests(), "the window of 8 requests filled without the reader");
        while (s.stats().snapshot().requests() < 8 && System.nanoTime() < end) {
          Thread.sleep(5); // the last one reserved may still be on the device
        }
        assertEquals(8, s.stats().snapshot().requests());
        Thread.sleep(50);
        assertEquals(8, ch.pendingRequests(), "and not past it: the reader has not copied anything out");
        assertEquals(8, s.stats().snapshot().requests());
        ByteBuffer b = ByteBuffer.allocateDirect(100_000);
        int n;
        while ((n = ch.read(b.clear())) >= 0) {
          byte[] piece = new byte[n];
          b.flip().get(piece);
          got.write(piece);
        }
      }
      assertArrayEquals(data, got.toByteArray(), "the bytes, with refills from the workers throughout");
      assertEquals(16 * MB / req, s.stats().snapshot().requests(), "each part of the file read once");
      assertEquals(16L * MB, s.stats().snapshot().directBytes());
    }
  }

  @Test
  void aReaderWaitingForAQueuedRequestGetsAnErrorWhenTheVolumeCloses() throws Exception {
    Path p = dir.resolve("blk_6");
    file(p, 4 * MB);
    DiskIo io = diskIo(dir, 1, 256 * KB, 2 * MB); // depth 1: one worker
    VolumeScheduler s = io.schedulers().get("ssd-1");
    java.util.concurrent.CountDownLatch hold = new java.util.concurrent.CountDownLatch(1);
    s.submit("another stream", false, 0, 1, () -> { // holds the volume's only slot
      try {
        hold.await();
      } catch (InterruptedException e) {
        throw new java.io.InterruptedIOException("closed under it");
      }
      return null;
    });
    DiskIo.ReadStream rs = io.openRead(volume(dir), p);
    DirectReadChannel ch = (DirectReadChannel) rs.direct(FileChannel.open(p, StandardOpenOption.READ), 0, 4 * MB);
    java.util.concurrent.ExecutorService reader = java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      java.util.concurrent.Future<Integer> read = reader.submit(() -> ch.read(ByteBuffer.allocateDirect(1)));
      long end = System.nanoTime() + 10_000_000_000L;
      while (s.stats().snapshot().queued() == 0 && System.nanoTime() < end) {
        Thread.sleep(5);
      }
      assertEquals(1, s.stats().snapshot().queued(), "the reader's request waits behind the other stream");
      io.close(); // the DataNode stopping: the queued request fails without running
      java.util.concurrent.ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(
          java.util.concurrent.ExecutionException.class, () -> read.get(10, java.util.concurrent.TimeUnit.SECONDS),
          "the reader is told, not left waiting");
      assertTrue(e.getCause() instanceof java.io.IOException && e.getCause().getMessage().contains("closed"),
          String.valueOf(e.getCause()));
    } finally {
      hold.countDown();
      reader.shutdownNow();
    }
    ch.close(); // returns: every request it issued has ended
    rs.close();
    assertEquals(0, ch.pendingRequests());
  }
}
