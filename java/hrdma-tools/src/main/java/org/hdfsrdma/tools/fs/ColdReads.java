package org.hdfsrdma.tools.fs;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.hdfsrdma.nativelib.NativeDisk;

/**
 * The cold-read case of {@code bench fs} and {@code demo}: the page cache of a local
 * cluster's files dropped before a read, and fio reading the same block files as the
 * disk's own figure beside it.
 */
public final class ColdReads {
  private ColdReads() {}

  /** fio's request size and depth: sequential 1 MiB reads, 4 in flight, O_DIRECT (the device's best here). */
  static final int FIO_BS = 1 << 20;
  static final int FIO_DEPTH = 4;
  static final String FIO_DESCRIPTION = "fio --rw=read --direct=1 --ioengine=io_uring --iodepth=" + FIO_DEPTH
      + " --bs=1M over the file's block files of at least 1 MiB (one replica)";

  /**
   * Drops the page cache of every file of the cluster's DataNodes (block and .meta files of
   * every replica): written back first (fdatasync), then POSIX_FADV_DONTNEED, file by file.
   * Per file rather than /proc/sys/vm/drop_caches: the same for our files, and it neither needs
   * root nor empties the cache of everything else on the machine.
   */
  public static void dropCache(LocalCluster c) throws IOException {
    List<Path> files;
    try (Stream<Path> s = Files.walk(c.dir())) {
      files = s.filter(p -> p.getFileName().toString().startsWith("blk_") && Files.isRegularFile(p)).toList();
    }
    for (Path f : files) {
      try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ)) {
        ch.force(false);
      } catch (java.nio.file.NoSuchFileException gone) {
        continue; // deleted meanwhile (an overwritten file's old blocks)
      }
      try (NativeDisk.File nf = NativeDisk.File.open(f, 0)) {
        nf.dropCache(0, 0, false); // len 0: to the end of the file
      } catch (org.hdfsrdma.nativelib.NativeException e) {
        if (Files.exists(f)) {
          throw new IOException("dropping the page cache of " + f + ": " + e.getMessage(), e);
        }
      }
    }
  }

  /** The block files of one replica of each block of {@code p} (the first location's), in block order. */
  public static List<Path> blockFiles(LocalCluster c, FileSystem stock, org.apache.hadoop.fs.Path p) throws IOException {
    Map<String, List<Path>> byName = new HashMap<>();
    try (Stream<Path> s = Files.walk(c.dir())) {
      s.filter(x -> x.getFileName().toString().matches("blk_-?[0-9]+")).forEach(x -> byName.computeIfAbsent(
          x.getFileName().toString(), k -> new ArrayList<>()).add(x));
    }
    List<Path> out = new ArrayList<>();
    for (LocatedBlock b : ((DistributedFileSystem) stock).getClient().getLocatedBlocks(p.toString(), 0)
        .getLocatedBlocks()) {
      List<Path> f = byName.get("blk_" + b.getBlock().getBlockId());
      if (f == null || f.isEmpty()) {
        throw new IOException("no block file for " + b.getBlock());
      }
      out.add(f.get(0));
    }
    return out;
  }

  /**
   * The block files fio can read with its 1 MiB requests: those of at least {@link #FIO_BS}
   * bytes (fio refuses a file smaller than its request, and a short last block would fail the
   * whole run). Empty when the file is smaller than one request: then there is no fio anchor.
   */
  public static List<Path> fioFiles(List<Path> blocks) throws IOException {
    List<Path> out = new ArrayList<>();
    for (Path b : blocks) {
      if (Files.size(b) >= FIO_BS) {
        out.add(b);
      }
    }
    return out;
  }

  /** Whether fio is on the PATH. */
  public static boolean fioAvailable() {
    try {
      Process p = new ProcessBuilder("fio", "--version").redirectErrorStream(true).start();
      p.getInputStream().readAllBytes();
      return p.waitFor() == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** fio reading {@code blocks} once, in order ({@link #FIO_DESCRIPTION}); MB/s (10^6). */
  public static double fio(List<Path> blocks) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of("fio", "--name=anchor", "--rw=read", "--direct=1",
        "--ioengine=io_uring", "--iodepth=" + FIO_DEPTH, "--bs=" + FIO_BS, "--readonly", "--output-format=json",
        "--filename=" + String.join(":", blocks.stream().map(Path::toString).toList()),
        "--file_service_type=sequential"));
    Process proc = new ProcessBuilder(cmd).start();
    byte[] outb = proc.getInputStream().readAllBytes();
    String errs = new String(proc.getErrorStream().readAllBytes());
    if (proc.waitFor() != 0) {
      throw new IOException("fio failed: " + errs.trim());
    }
    JsonNode j = new ObjectMapper().readTree(outb);
    return j.path("jobs").get(0).path("read").path("bw_bytes").asDouble() / 1e6;
  }
}
