package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.server.datanode.BlockMetadataHeader;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeFiles;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A replica truncated in place (as the DataNode's truncate recovery of a finalized block does)
 * while a same-host reader has it mapped: the read fails with an IOException, the JVM lives.
 * Touching a mapping past a file's new end is a SIGBUS; each case runs in a child JVM so a
 * crash fails the test instead of killing the test runner.
 */
class LocalTruncateTest {
  static final int BLOCK = 32 << 20;
  static final int BPC = 512;
  static final int WINDOW = 512 * 1024;
  static final int AHEAD = 8;
  /** What the DataNode truncates the replica to: a chunk boundary in the first window. */
  static final int NEW_LENGTH = 64 * 1024;

  @ParameterizedTest
  @ValueSource(strings = {"sequential", "sequential-meta", "sequential-direct", "positional", "zero-copy"})
  void truncateUnderReadIsAnIOException(String mode, @TempDir Path dir) throws Exception {
    assumeTrue(HrdmaNative.isAvailable(), "libhrdma maps the replica");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> cmd = new ArrayList<>(List.of(java, "-Xmx256m", "-XX:ErrorFile=" + dir.resolve("hs_err.log"),
        "-XX:-CreateCoredumpOnCrash", "-cp", System.getProperty("java.class.path"), Child.class.getName(), mode,
        dir.toString()));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    byte[] out;
    try (var in = p.getInputStream()) {
      out = in.readAllBytes();
    }
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "child did not finish");
    String text = new String(out, StandardCharsets.UTF_8);
    assertEquals(0, p.exitValue(), "child JVM died (" + p.exitValue() + "):\n" + text);
    if (mode.endsWith("meta")) {
      // the reader has its range's sums (read when it opened): the block file is whole, so it may
      // read on to the end, or fail; what it must not do is fault on the truncated .meta file
      assertTrue(text.contains("RESULT IOException") || text.contains("RESULT none"), text);
    } else {
      assertTrue(text.contains("RESULT IOException"), text);
    }
    assertTrue(text.contains("LEAKS 0 0"), text);
  }

  /** Writes a replica, reads it, truncates it in place mid-read, keeps reading; prints what happened. */
  public static final class Child {
    public static void main(String[] args) throws Exception {
      String mode = args[0];
      Path dir = Path.of(args[1]);
      Path data = dir.resolve("blk_1");
      Path meta = dir.resolve("blk_1_1001.meta");
      writeReplica(data, meta);
      ExtendedBlock block = new ExtendedBlock("BP-truncate", 1, BLOCK, 1001);
      ExecutorService verifier = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "verifier");
        t.setDaemon(true);
        return t;
      });
      String result;
      try {
        switch (mode) {
          case "sequential", "sequential-meta" -> sequential(block, data, meta, verifier, mode.endsWith("meta"));
          case "sequential-direct" -> sequentialDirect(block, data, meta, verifier);
          case "positional" -> positional(block, data, meta);
          case "zero-copy" -> zeroCopy(block, data, meta, verifier);
          default -> throw new IllegalArgumentException(mode);
        }
        result = "RESULT none: the whole replica was read";
      } catch (IOException e) {
        result = "RESULT IOException " + e;
      }
      verifier.shutdown();
      verifier.awaitTermination(30, TimeUnit.SECONDS);
      System.out.println(result);
      System.out.println("LEAKS " + NativeFiles.fdsHeld() + " " + NativeFiles.mappedBytes());
      System.out.flush();
    }

    static void sequential(ExtendedBlock block, Path data, Path meta, ExecutorService verifier, boolean metaOnly)
        throws IOException {
      byte[] b = new byte[64 * 1024];
      try (LocalBlockReader r = new LocalBlockReader(block, open(data), open(meta), BLOCK, 0, BLOCK, WINDOW,
          verifier, AHEAD, true, 0)) {
        r.readFully(b, 0, b.length);
        truncate(data, meta, metaOnly);
        while (r.read(b, 0, b.length) >= 0) {
          // reads on until the truncated part fails
        }
      }
    }

    /**
     * Reads of 1 MiB straight into the caller's array (pinned while libhrdma preads and verifies
     * a piece into it), pieces shared with the verifier; the replica truncated between two reads.
     */
    static void sequentialDirect(ExtendedBlock block, Path data, Path meta, ExecutorService verifier)
        throws IOException {
      byte[] b = new byte[1 << 20];
      long direct0 = LocalBlockReader.directBytes();
      try (LocalBlockReader r = new LocalBlockReader(block, open(data), open(meta), BLOCK, 0, BLOCK, WINDOW,
          verifier, AHEAD, true, 0, true)) {
        r.readFully(b, 0, b.length);
        if (LocalBlockReader.directBytes() - direct0 != b.length) {
          throw new AssertionError("not read straight into the array: " + (LocalBlockReader.directBytes() - direct0));
        }
        truncate(data, meta, false);
        while (r.read(b, 0, b.length) >= 0) {
          // reads on until the truncated part fails
        }
      }
    }

    static void positional(ExtendedBlock block, Path data, Path meta) throws IOException {
      byte[] b = new byte[256 * 1024];
      try (LocalReplicas cache = new LocalReplicas(4, 60_000)) {
        LocalReplicas.Key key = LocalReplicas.Key.of("dn-1", block, BLOCK);
        LocalReplicas.Opener opener = () -> new ShortCircuitClient.Fds(open(data), open(meta), false);
        String socket = data.getParent().toString();
        try (BlockReader r = cache.new Range(key, block, socket, opener, 0, b.length)) {
          r.readFully(b, 0, b.length);
        }
        truncate(data, meta, false);
        for (long at = b.length; at < BLOCK; at += b.length) {
          try (BlockReader r = cache.new Range(key, block, socket, opener, at, b.length)) {
            r.readFully(b, 0, b.length);
          }
        }
      }
    }

    static void zeroCopy(ExtendedBlock block, Path data, Path meta, ExecutorService verifier) throws IOException {
      MappedReplica m = MappedReplica.map(block, null, new ShortCircuitClient.Fds(open(data), open(meta), false), BLOCK,
          0).verifyAhead(verifier, WINDOW, AHEAD);
      try {
        m.slice(0, 64 * 1024, true);
        m.release();
        truncate(data, meta, false);
        for (long at = 64 * 1024; at < BLOCK; at += WINDOW) {
          m.slice(at, WINDOW, true);
          m.release();
        }
      } finally {
        m.detach();
      }
    }

    static NativeFiles.Fd open(Path p) throws IOException {
      return NativeFiles.adopt(NativeFiles.openForPassing(p.toString()));
    }

    /** In place, as FsDatasetImpl#truncateBlock: the block file to its new length, the .meta file to its sums. */
    static void truncate(Path data, Path meta, boolean metaOnly) throws IOException {
      if (!metaOnly) {
        try (RandomAccessFile f = new RandomAccessFile(data.toFile(), "rw")) {
          f.setLength(NEW_LENGTH);
        }
      }
      try (RandomAccessFile f = new RandomAccessFile(meta.toFile(), "rw")) {
        f.setLength(BlockMetadataHeader.getHeaderSize() + (long) NEW_LENGTH / BPC * 4);
      }
    }

    static void writeReplica(Path data, Path meta) throws IOException {
      byte[] bytes = new byte[BLOCK];
      new Random(7).nextBytes(bytes);
      Files.write(data, bytes);
      DataChecksum c = DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, BPC);
      try (OutputStream os = Files.newOutputStream(meta); DataOutputStream out = new DataOutputStream(os)) {
        BlockMetadataHeader.writeHeader(out, c);
        CRC32C crc = new CRC32C();
        for (int at = 0; at < BLOCK; at += BPC) {
          crc.reset();
          crc.update(ByteBuffer.wrap(bytes, at, BPC));
          out.writeInt((int) crc.getValue());
        }
      }
    }
  }
}
