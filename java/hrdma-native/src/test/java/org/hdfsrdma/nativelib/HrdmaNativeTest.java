package org.hdfsrdma.nativelib;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class HrdmaNativeTest {

  @BeforeAll
  static void load() {
    assertTrue(HrdmaNative.isAvailable(), () -> "libhrdma must load in the test build: "
        + HrdmaNative.unavailabilityCause());
  }

  @Test
  void abiAndUcxVersionAreChecked() {
    assertEquals(HrdmaNative.ABI_VERSION, HrdmaNative.abiVersion());
    String v = HrdmaNative.ucxVersion();
    assertTrue(HrdmaNative.compareVersions(v, HrdmaNative.MIN_UCX) >= 0, v);
    assertTrue(HrdmaNative.compareVersions("1.12.9", "1.13") < 0);
    assertTrue(HrdmaNative.compareVersions("1.13.1", "1.13") > 0);
    assertEquals(0, HrdmaNative.compareVersions("1.13", "1.13.0"));
  }

  @Test
  void ucxMemoryHooksAreOffUnlessTheUserAskedForThem() {
    // UCX's default is on; only the preload library turns them off. On, they patch
    // libc's brk/mmap while other JVM threads run them (a DataNode died of SIGILL).
    if (System.getenv("UCX_MEM_EVENTS") == null) {
      assertFalse(HrdmaNative.ucxMemoryHooks(), "libhrdma-preload did not run before UCX loaded");
    } else {
      assertEquals(!System.getenv("UCX_MEM_EVENTS").matches("(?i)n|no|off|0|false"),
          HrdmaNative.ucxMemoryHooks());
    }
  }

  @Test
  void crc32cMatchesTheJdkBitForBit() {
    Random r = new Random(42);
    for (int len : new int[] {0, 1, 7, 511, 512, 513, 4096, 65537, 1 << 20}) {
      byte[] data = new byte[len];
      r.nextBytes(data);
      ByteBuffer d = ByteBuffer.allocateDirect(len);
      d.put(data).flip();
      CRC32C jdk = new CRC32C();
      jdk.update(data);
      assertEquals((int) jdk.getValue(), NativeCrc32c.crc32c(d), "length " + len);
    }
  }

  @Test
  void chunkedChecksumsUseTheHdfsLayout() throws NativeException {
    int bpc = 512;
    int len = 3 * bpc + 100; // last chunk short
    byte[] data = new byte[len];
    new Random(7).nextBytes(data);
    ByteBuffer d = ByteBuffer.allocateDirect(len);
    d.put(data).flip();
    int chunks = (len + bpc - 1) / bpc;
    ByteBuffer sums = ByteBuffer.allocateDirect(4 * chunks);
    NativeCrc32c.compute(d, bpc, sums);

    ByteBuffer expected = ByteBuffer.allocate(4 * chunks).order(ByteOrder.BIG_ENDIAN);
    for (int off = 0; off < len; off += bpc) {
      CRC32C c = new CRC32C();
      c.update(data, off, Math.min(bpc, len - off));
      expected.putInt((int) c.getValue());
    }
    byte[] got = new byte[4 * chunks];
    sums.duplicate().get(got);
    assertArrayEquals(expected.array(), got);
    assertEquals(-1, NativeCrc32c.verify(d, bpc, sums));

    d.put(2 * bpc + 5, (byte) (d.get(2 * bpc + 5) ^ 1));
    assertEquals(2L * bpc, NativeCrc32c.verify(d, bpc, sums), "offset of the bad chunk");
  }

  @Test
  void tooFewChecksumBytesIsAnError() {
    ByteBuffer d = ByteBuffer.allocateDirect(1024);
    ByteBuffer sums = ByteBuffer.allocateDirect(4); // needs 8
    NativeException e = assertThrows(NativeException.class, () -> NativeCrc32c.compute(d, 512, sums));
    assertEquals(NativeException.ERR_INVALID, e.status());
  }

  @Test
  void probeWithoutDevicesIsEmptyNotAnError() throws NativeException {
    String devices = HrdmaNative.probeDevices();
    assertNotNull(devices);
    // This machine has no RDMA device; on one that has, every line names a device.
    for (String line : devices.split("\n")) {
      if (!line.isBlank()) {
        assertTrue(line.startsWith("device="), line);
      }
    }
  }

  @Test
  void registeredMemoryIsCountedAndReturned() throws NativeException {
    long ctx = Jni.ctxCreate0("TLS=tcp");
    try {
      long[] stats = new long[4];
      long mem = Jni.memMap0(ctx, 1 << 20);
      Jni.ctxStats0(ctx, stats);
      assertEquals(1 << 20, stats[0]);
      assertEquals(1, stats[1]);
      ByteBuffer b = Jni.memBuffer0(mem);
      assertEquals(1 << 20, b.capacity());
      assertEquals(Jni.memAddress0(mem), DirectAddress.of(b));
      assertEquals(0, Jni.memAddress0(mem) % 4096, "page aligned");
      assertTrue(Jni.memPackRkey0(mem).length > 0);
      assertEquals(NativeException.ERR_BUSY, Jni.ctxDestroy0(ctx), "regions still mapped");
      assertEquals(0, Jni.memUnmap0(mem));
      Jni.ctxStats0(ctx, stats);
      assertEquals(0, stats[0]);
      assertEquals(0, stats[1]);
    } finally {
      assertEquals(0, Jni.ctxDestroy0(ctx));
    }
  }

  @Test
  void badUcxConfigurationIsRefusedNotFatal() {
    NativeException e = assertThrows(NativeException.class,
        () -> Jni.ctxCreate0("NO_SUCH_UCX_SETTING=1"));
    assertEquals(NativeException.ERR_INVALID, e.status());
    assertThrows(NativeException.class, () -> Jni.ctxCreate0("SOCKADDR_TLS_PRIORITY=rdmacm"));
    assertThrows(NativeException.class, () -> Jni.ctxCreate0("tls=tcp"));
  }

  /**
   * HotSpot turns null checks in compiled code into SIGSEGV traps; with UCX's
   * error handler in place such a trap kills the JVM.
   */
  @Test
  void jvmKeepsItsOwnSegvHandlingWithUcxLoaded() throws NativeException {
    long ctx = Jni.ctxCreate0("TLS=tcp");
    try {
      int npes = 0;
      for (int i = 0; i < 400_000; i++) {
        npes += implicitNullCheck(i % 4 == 0 ? null : "x");
      }
      assertEquals(100_000, npes);
    } finally {
      Jni.ctxDestroy0(ctx);
    }
  }

  private static int implicitNullCheck(String s) {
    try {
      return s.length() - 1;
    } catch (NullPointerException e) {
      return 1;
    }
  }

  @Test
  void ucxInfoNamesTheTransports() throws NativeException {
    String info = HrdmaNative.ucxInfo("TLS=tcp");
    assertTrue(info.contains("tcp"), info);
  }
}
