package org.hdfsrdma.bench.fs;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.hdfsrdma.tools.UsageException;
import org.hdfsrdma.tools.fs.FsMain;
import org.hdfsrdma.tools.fs.LocalCluster;
import org.hdfsrdma.tools.fs.Measure;

/**
 * {@code hrdma bench pread}: positional reads of small sizes at random offsets of one
 * file, from 1..N threads sharing one stream (as HBase reads an HFile), our client and
 * the stock one alternating on one local cluster; IOPS and p50/p99 latency.
 */
public final class PreadBench {
  private PreadBench() {}

  static final Path FILE = new Path("/hrdma-bench/pread/file");
  /** Untimed preads per client before the warm runs (connections, kept replicas, JIT). */
  private static final long WARMUP_NANOS = 1_000_000_000L;
  /** Offsets whose bytes both clients must read alike before anything is timed. */
  private static final int CHECKS = 64;

  public static void main(String[] args) {
    FsMain.quietLogging();
    System.exit(run(args, System.out, System.err));
  }

  public static int run(String[] args, PrintStream out, PrintStream err) {
    if (args.length > 0 && List.of("-h", "--help", "help").contains(args[0])) {
      out.print(PreadOptions.USAGE);
      return 0;
    }
    PreadOptions o;
    try {
      o = PreadOptions.parse(args);
    } catch (UsageException e) {
      err.println("hrdma bench pread: " + e.getMessage());
      err.print(PreadOptions.USAGE);
      return 2;
    }
    PrintStream log = o.json() ? err : out;
    List<PreadTable.Run> runs = new ArrayList<>();
    LocalDateTime started = LocalDateTime.now();
    String loadBefore = loadAverage();
    int cells = o.ioSizes().size() * o.threads().size() * (o.cold() ? 2 : 1);
    try (org.hdfsrdma.bench.Progress progress = new org.hdfsrdma.bench.Progress(err, cells * o.runs(),
        err == System.err && System.console() != null);
        LocalCluster c = LocalCluster.start(o.dir(), o.conf(), log)) {
      progress.phase("bench pread: writing the " + org.hdfsrdma.tools.Sizes.format(o.size()) + " file");
      try (FileSystem stock = c.newClient(false)) {
        new Measure(c.dataNodePids()).write("stock", stock, FILE, o.size(), 1);
      }
      progress.restartStepClock();
      try (FileSystem ours = c.newClient(true); FileSystem stock = c.newClient(false)) {
        sameBytes(ours, stock, o.size());
        warm(ours, stock, o);
        for (int io : o.ioSizes()) {
          for (int t : o.threads()) {
            for (int run = 1; run <= o.runs(); run++) {
              progress.phase(String.format("bench pread: %s x %d threads, warm, run %d/%d",
                  org.hdfsrdma.tools.Sizes.format(io), t, run, o.runs()));
              runs.add(measure("ours", ours, o, io, t, false, run));
              runs.add(measure("stock", stock, o, io, t, false, run));
              progress.stepDone();
            }
          }
        }
      }
      if (o.cold()) {
        List<java.nio.file.Path> files = blockFiles(c.dir());
        for (int io : o.ioSizes()) {
          for (int t : o.threads()) {
            for (int run = 1; run <= o.runs(); run++) {
              progress.phase(String.format("bench pread: %s x %d threads, cold, run %d/%d",
                  org.hdfsrdma.tools.Sizes.format(io), t, run, o.runs()));
              for (boolean isOurs : new boolean[] {true, false}) {
                dropFromPageCache(files);
                try (FileSystem fs = c.newClient(isOurs)) {
                  runs.add(measure(isOurs ? "ours" : "stock", fs, o, io, t, true, run));
                }
              }
              progress.stepDone();
            }
          }
        }
      }
    } catch (Exception e) {
      err.println("hrdma bench pread: " + e);
      for (Throwable t = e.getCause(); t != null; t = t.getCause()) {
        err.println("  caused by: " + t);
      }
      return 1;
    }
    List<PreadTable.Cell> sum = PreadTable.summarize(runs);
    String machine = Machine.describe();
    String title = PreadTable.title(o) + "\n# load average (1, 5, 15 min) at the start: " + loadBefore
        + ", at the end: " + loadAverage() + " (" + Runtime.getRuntime().availableProcessors() + " CPUs)";
    String table = PreadTable.render(sum);
    List<String> json = PreadTable.jsonLines(o, machine, runs, sum);
    if (o.json()) {
      json.forEach(out::println);
    } else {
      out.println();
      out.println(title);
      out.print(table);
      out.println(PreadTable.FOOTER);
    }
    try {
      java.nio.file.Path dir = o.resultsDir() != null ? o.resultsDir() : Machine.defaultResultsDir(started);
      Files.createDirectories(dir);
      String stamp = started.format(DateTimeFormatter.ofPattern("HHmmss"));
      Files.writeString(dir.resolve("pread-bench-" + stamp + ".json"), String.join("\n", json) + "\n");
      Files.writeString(dir.resolve("pread-bench-" + stamp + ".txt"), title + "\n" + table + PreadTable.FOOTER
          + "\n");
      Files.writeString(dir.resolve("machine.txt"), machine + "\n");
      log.println("bench pread: results in " + dir);
    } catch (IOException e) {
      err.println("hrdma bench pread: could not write results: " + e.getMessage());
      return 1;
    }
    return 0;
  }

  /** Both clients read the same bytes at random offsets (and the file's last bytes); else nothing is timed. */
  static void sameBytes(FileSystem ours, FileSystem stock, long size) throws IOException {
    Random r = new Random(7);
    byte[] a = new byte[4096 + 17];
    byte[] b = new byte[a.length];
    try (FSDataInputStream x = ours.open(FILE); FSDataInputStream y = stock.open(FILE)) {
      for (int i = 0; i <= CHECKS; i++) {
        int n = (int) Math.min(a.length, size);
        long pos = i == CHECKS ? size - n : (long) (r.nextDouble() * (size - n + 1));
        x.readFully(pos, a, 0, n);
        y.readFully(pos, b, 0, n);
        if (!Arrays.equals(a, 0, n, b, 0, n)) {
          throw new IOException("our client and the stock one read different bytes at offset " + pos);
        }
      }
    }
  }

  /** The whole file once through each client, then a second of untimed preads by each. */
  private static void warm(FileSystem ours, FileSystem stock, PreadOptions o) throws Exception {
    Measure m = new Measure(List.of());
    m.warm(stock, FILE);
    m.warm(ours, FILE);
    int io = o.ioSizes().get(0);
    int t = o.threads().get(o.threads().size() - 1);
    for (FileSystem fs : List.of(ours, stock)) {
      time(fs, o.size(), io, t, WARMUP_NANOS, 99);
    }
  }

  private static PreadTable.Run measure(String client, FileSystem fs, PreadOptions o, int io, int threads,
      boolean cold, int run) throws Exception {
    Timed t = time(fs, o.size(), io, threads, o.seconds() * 1_000_000_000L, run);
    return PreadTable.Run.of(client, io, threads, cold, run, t.nanos, t.latencies, t.latencies.length);
  }

  /** What a timed run gives: wall time from the start to the last thread's end, and every read's latency. */
  private record Timed(long nanos, long[] latencies) {}

  /**
   * {@code threads} threads, one shared stream, each reading {@code io} bytes at uniformly
   * random offsets until {@code nanos} have passed.
   */
  static Timed time(FileSystem fs, long size, int io, int threads, long nanos, long seed) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try (FSDataInputStream in = fs.open(FILE)) {
      CountDownLatch go = new CountDownLatch(1);
      List<Future<long[]>> fs2 = new ArrayList<>();
      long[] start = new long[1];
      for (int i = 0; i < threads; i++) {
        long s = seed * 1000 + i;
        fs2.add(pool.submit(() -> {
          Random r = new Random(s);
          byte[] buf = new byte[io];
          long[] lat = new long[1024];
          int n = 0;
          go.await();
          long end = start[0] + nanos;
          long now = System.nanoTime();
          while (now < end) {
            long pos = (long) (r.nextDouble() * (size - io + 1));
            in.readFully(pos, buf, 0, io);
            long after = System.nanoTime();
            if (n == lat.length) {
              lat = Arrays.copyOf(lat, n * 2);
            }
            lat[n++] = after - now;
            now = after;
          }
          return Arrays.copyOf(lat, n);
        }));
      }
      start[0] = System.nanoTime();
      go.countDown();
      List<long[]> all = new ArrayList<>();
      for (Future<long[]> f : fs2) {
        all.add(f.get());
      }
      long wall = System.nanoTime() - start[0];
      long[] merged = all.stream().flatMapToLong(Arrays::stream).toArray();
      return new Timed(wall, merged);
    } finally {
      pool.shutdownNow();
    }
  }

  /** /proc/loadavg's first three fields: a busy machine slows the stock path's DataNode round trips most. */
  static String loadAverage() {
    try {
      String[] f = Files.readString(java.nio.file.Path.of("/proc/loadavg")).trim().split("\\s+");
      return f[0] + " " + f[1] + " " + f[2];
    } catch (IOException | RuntimeException e) {
      return "unknown";
    }
  }

  /** The replicas' block and .meta files under the cluster's directory. */
  static List<java.nio.file.Path> blockFiles(java.nio.file.Path dir) throws IOException {
    try (Stream<java.nio.file.Path> s = Files.walk(dir)) {
      List<java.nio.file.Path> l = s.filter(p -> p.getFileName().toString().startsWith("blk_")
          && Files.isRegularFile(p)).toList();
      if (l.isEmpty()) {
        throw new IOException("no block files under " + dir);
      }
      return l;
    }
  }

  /**
   * posix_fadvise(POSIX_FADV_DONTNEED) on each file, through GNU dd ({@code iflag=nocache
   * count=0} advises the whole file): only these files leave the page cache, not the
   * machine's (drop_caches would cost every other process on it). Pages a process has
   * mapped stay: the runs use new clients, which have none.
   */
  static void dropFromPageCache(List<java.nio.file.Path> files) throws IOException, InterruptedException {
    for (java.nio.file.Path f : files) {
      Process p = new ProcessBuilder("dd", "if=" + f, "iflag=nocache", "count=0", "status=none")
          .redirectErrorStream(true).start();
      String msg = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).trim();
      if (p.waitFor() != 0) {
        throw new IOException("dd iflag=nocache on " + f + " failed: " + msg);
      }
    }
  }
}
