package org.hdfsrdma.nativelib;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The JNI side of native/src/disk, on a real file of this machine. */
class NativeDiskTest {
  @TempDir
  Path dir;

  @Test
  void preallocateTrimExtentsAndDirectReadsThroughTheRing() throws Exception {
    Path p = Files.createFile(dir.resolve("blk"));
    byte[] data = new byte[1 << 20];
    new Random(5).nextBytes(data);
    try (NativeDisk.File f = NativeDisk.File.open(p, NativeDisk.WRITE)) {
      f.preallocate(0, 8 << 20);
      assertEquals(0, Files.size(p), "preallocation keeps the length");
      Files.write(p, data, java.nio.file.StandardOpenOption.WRITE);
      f.dropCache(0, data.length, true);
      f.trim();
      assertEquals(data.length, Files.size(p));
      assertEquals(1, f.extentCount());
    }
    long ctx = Jni.ctxCreate0("TLS=tcp");
    long mem = Jni.memMap0(ctx, 1 << 20);
    try (NativeDisk.File f = NativeDisk.File.open(p, NativeDisk.DIRECT);
        NativeDisk.Ring ring = new NativeDisk.Ring(2)) {
      assertEquals(0, (1 << 20) % f.directAlignment());
      long addr = Jni.memAddress0(mem);
      ring.read(f, addr, 512 << 10, 512 << 10, 7);
      ring.read(f, addr + (512 << 10), 512 << 10, 0, 8);
      long[] cookies = new long[4];
      long[] results = new long[4];
      int got = 0;
      while (got < 2) {
        got += ring.reap(cookies, results, 1);
      }
      ByteBuffer b = Jni.memBuffer0(mem);
      byte[] back = new byte[data.length];
      b.get(back, 512 << 10, 512 << 10);
      b.get(back, 0, 512 << 10);
      assertArrayEquals(data, back);
    } finally {
      assertEquals(0, Jni.memUnmap0(mem));
      assertEquals(0, Jni.ctxDestroy0(ctx));
    }
    NativeException e = assertThrows(NativeException.class,
        () -> NativeDisk.File.open(dir.resolve("missing"), 0));
    assertEquals(NativeException.ERR_INVALID, e.status());
    assertTrue(e.getMessage().contains("missing"));
  }

  @Test
  void residentBytesSaysWhatOfARangeIsInThePageCache() throws Exception {
    Path p = Files.createFile(dir.resolve("res"));
    byte[] data = new byte[4 << 20];
    new Random(9).nextBytes(data);
    Files.write(p, data, java.nio.file.StandardOpenOption.WRITE);
    try (NativeDisk.File f = NativeDisk.File.open(p, 0)) {
      assertEquals(data.length, f.residentBytes(0, data.length), "just written: all of it cached");
      assertEquals(1000, f.residentBytes(5000, 1000));
      f.dropCache(0, data.length, true);
      assertEquals(0, f.residentBytes(0, data.length), "dropped");
      assertEquals(0, f.residentBytes(data.length, 4096), "past the end");
      NativeException e = assertThrows(NativeException.class, () -> f.residentBytes(-1, 10));
      assertEquals(NativeException.ERR_INVALID, e.status());
    }
  }
}
