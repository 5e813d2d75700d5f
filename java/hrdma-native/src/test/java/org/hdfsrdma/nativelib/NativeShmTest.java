package org.hdfsrdma.nativelib;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The JNI side of native/src/shm, with segment files in this machine's /dev/shm. */
class NativeShmTest {
  private static final Path SHM = Path.of("/dev/shm");
  private static final int MB = 1 << 20;

  private final List<Path> paths = new ArrayList<>();
  private long start;

  @BeforeEach
  void mappedBytesAtStart() {
    assumeTrue(Files.isDirectory(SHM), "no /dev/shm here");
    start = NativeShm.mappedBytes();
  }

  @AfterEach
  void removeFiles() throws Exception {
    for (Path p : paths) {
      Files.deleteIfExists(p);
    }
  }

  private Path segmentPath(String name) {
    Path p = SHM.resolve("hrdma-NativeShmTest-" + ProcessHandle.current().pid() + "-" + name);
    paths.add(p);
    return p;
  }

  @Test
  void writerAndReaderSeeTheSameBytes() throws Exception {
    Path p = segmentPath("seg");
    byte[] data = new byte[MB];
    new Random(11).nextBytes(data);
    NativeShm.Segment w = NativeShm.create(p, MB);
    NativeShm.Segment r = NativeShm.open(p, MB);
    try {
      assertEquals(MB, Files.size(p));
      assertEquals(start + 2L * MB, NativeShm.mappedBytes());
      assertEquals(p, r.path());
      assertEquals(MB, r.bytes());
      assertNotEquals(w.address(), r.address(), "two mappings");
      assertEquals(0, w.address() % 4096, "page aligned");
      assertEquals(0, r.address() % 4096, "page aligned");

      ByteBuffer wb = w.buffer();
      assertFalse(wb.isReadOnly());
      assertEquals(w.address(), DirectAddress.of(wb));
      wb.put(data);
      assertEquals(0, w.buffer().position(), "a fresh buffer each call");

      ByteBuffer rb = r.buffer();
      assertTrue(rb.isReadOnly());
      assertTrue(rb.isDirect());
      assertEquals(0, rb.position());
      assertEquals(MB, rb.limit());
      assertEquals(MB, rb.capacity());
      byte[] back = new byte[MB];
      rb.get(back);
      assertArrayEquals(data, back);
      assertThrows(ReadOnlyBufferException.class, () -> r.buffer().put(0, (byte) 1));

      wb.put(17, (byte) (data[17] ^ 0x5a));
      assertEquals((byte) (data[17] ^ 0x5a), r.buffer().get(17), "later stores are seen too");
    } finally {
      w.close();
      r.close();
    }
    assertEquals(start, NativeShm.mappedBytes());
    assertThrows(IllegalStateException.class, w::buffer);
    assertThrows(IllegalStateException.class, r::address);
    w.close();
    r.close();
    assertEquals(start, NativeShm.mappedBytes(), "a second close unmaps nothing");
  }

  @Test
  void errorsAreNativeExceptionsThatSayWhy() throws Exception {
    Path p = segmentPath("seg");
    try (NativeShm.Segment w = NativeShm.create(p, 64 << 10)) {
      w.buffer().put(0, (byte) 42);

      NativeException e = assertThrows(NativeException.class, () -> NativeShm.create(p, MB));
      assertEquals(NativeException.ERR_BUSY, e.status());
      assertMessage(e, "create shared memory segment " + p + " (1048576 bytes): resource busy");
      assertEquals(64 << 10, Files.size(p), "the existing file is left alone");
      assertEquals(42, w.buffer().get(0));

      e = assertThrows(NativeException.class, () -> NativeShm.open(p, MB));
      assertEquals(NativeException.ERR_INVALID, e.status(), "longer than the file");
      assertTrue(e.getMessage().startsWith("open shared memory segment " + p
          + " (1048576 bytes): invalid argument or configuration ("), e.getMessage());
      assertTrue(e.getMessage().endsWith("): the file has 65536 bytes"), e.getMessage());

      e = assertThrows(NativeException.class, () -> NativeShm.open(SHM, 4096));
      assertEquals(NativeException.ERR_INVALID, e.status(), "a directory");
      assertTrue(e.getMessage().endsWith(": not a regular file"), e.getMessage());

      Path missing = segmentPath("missing");
      e = assertThrows(NativeException.class, () -> NativeShm.open(missing, MB));
      assertEquals(NativeException.ERR_IO, e.status());
      assertMessage(e, "open shared memory segment " + missing);

      Path bad = segmentPath("bad");
      for (long bytes : new long[] {0, -4096, 4097}) {
        e = assertThrows(NativeException.class, () -> NativeShm.create(bad, bytes));
        assertEquals(NativeException.ERR_INVALID, e.status(), bytes + " bytes");
        assertMessage(e, "create shared memory segment " + bad);
      }
      e = assertThrows(NativeException.class, () -> NativeShm.create(bad, 1L << 31));
      assertEquals(NativeException.ERR_INVALID, e.status());
      assertTrue(e.getMessage().contains("larger than a ByteBuffer"), e.getMessage());
      assertFalse(Files.exists(bad));

      long total = Files.getFileStore(SHM).getTotalSpace();
      if (total > 0 && total < Integer.MAX_VALUE - MB) {
        long tooBig = (total / 4096 + 1) * 4096;
        Path full = segmentPath("full");
        e = assertThrows(NativeException.class, () -> NativeShm.create(full, tooBig));
        assertEquals(NativeException.ERR_NOMEM, e.status());
        assertMessage(e, "create shared memory segment " + full);
        assertFalse(Files.exists(full), "the file made for it is removed");
      }
      assertEquals(start + (64 << 10), NativeShm.mappedBytes());
    }
    assertEquals(start, NativeShm.mappedBytes());
  }

  /** The message names the operation and path, and ends with the system's reason. */
  private static void assertMessage(NativeException e, String prefix) {
    String m = e.getMessage();
    assertTrue(m.startsWith(prefix), m);
    assertTrue(m.matches(".*: [a-z /]+ \\([^()]+\\)"), "status text and errno text: " + m);
  }

  @Test
  void concurrentClosesUnmapOnce() throws Exception {
    Path p = segmentPath("seg");
    NativeShm.Segment w = NativeShm.create(p, MB);
    NativeShm.Segment r = NativeShm.open(p, MB);
    assertEquals(start + 2L * MB, NativeShm.mappedBytes());
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    List<Throwable> failures = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      NativeShm.Segment s = i % 2 == 0 ? w : r;
      Thread t = new Thread(() -> {
        try {
          go.await();
          s.close();
        } catch (Throwable x) {
          synchronized (failures) {
            failures.add(x);
          }
        }
      });
      t.start();
      threads.add(t);
    }
    go.countDown();
    for (Thread t : threads) {
      t.join();
    }
    assertEquals(List.of(), failures);
    assertEquals(start, NativeShm.mappedBytes());
  }
}
