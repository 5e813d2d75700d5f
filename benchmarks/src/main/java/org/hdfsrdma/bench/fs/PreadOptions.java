package org.hdfsrdma.bench.fs;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.hdfsrdma.tools.Sizes;
import org.hdfsrdma.tools.UsageException;
import org.hdfsrdma.tools.fs.FsOptions;

/**
 * Options of {@code hrdma bench pread}. Immutable.
 *
 * @param size       bytes of the file read (--size, default 1G)
 * @param ioSizes    bytes per positional read (--sizes, default 4K,64K,1M)
 * @param threads    reading threads, all on one shared stream (--threads, default 1,16)
 * @param seconds    seconds each run reads (--seconds, default 3)
 * @param runs       runs per client and cell, interleaved ours, stock, ours... (--runs, default 3)
 * @param cold       --cold: also cold rows (the block files dropped from the page cache before each run)
 * @param json       --json: results as JSON lines on stdout instead of the table
 * @param dir        the cluster's directory (--dir; null: a temporary directory, deleted after)
 * @param resultsDir where the JSON/text go (--results DIR; null: ROOT/results/DATE-COMMIT)
 * @param conf       --conf KEY=VALUE (repeatable): set in the daemons' and the clients' configuration
 */
public record PreadOptions(long size, List<Integer> ioSizes, List<Integer> threads, int seconds, int runs,
    boolean cold, boolean json, Path dir, Path resultsDir, Map<String, String> conf) {
  public static final long DEFAULT_SIZE = 1L << 30;
  /** The largest read: a positional read is into one array. */
  public static final long MAX_IO = 64L << 20;
  public static final int MAX_THREADS = 256;

  public PreadOptions {
    ioSizes = List.copyOf(ioSizes);
    threads = List.copyOf(threads);
    conf = Collections.unmodifiableMap(new LinkedHashMap<>(conf));
  }

  public static final String USAGE = """
      usage: hrdma bench pread [--size 1G] [--sizes 4K,64K,1M] [--threads 1,16] [--seconds 3] [--runs 3]
                         [--cold] [--json] [--dir DIR] [--results DIR] [--conf KEY=VALUE ...]
        small random reads, the HBase pattern: positional reads (readFully(position, buf)) of each
        --sizes at uniformly random offsets of one --size file (replication 1) on a local cluster
        (NameNode + 3 DataNodes with the plugin), from each --threads count of threads sharing one
        open stream, for --seconds a run; our client and the stock one alternate (ours, stock,
        ours, stock...), --runs each. Stock anchor: Hadoop's DistributedFileSystem over TCP to the
        DataNodes, without its own short-circuit reads (as in 'bench fs'); ours with its defaults
        (short-circuit reads on). Warm rows: the file read whole and preads run untimed through
        each client first. --cold adds cold rows: before each run the block and .meta files are
        dropped from the page cache (posix_fadvise DONTNEED, through GNU dd iflag=nocache) and
        both clients are new (no connection, no kept replica). Prints IOPS and p50/p99 latency
        per (size, threads, warm/cold), medians over the runs, and ours/stock.
      """;

  public static PreadOptions parse(String[] args) {
    long size = DEFAULT_SIZE;
    List<Integer> sizes = List.of(4096, 65536, 1 << 20);
    List<Integer> threads = List.of(1, 16);
    int seconds = 3;
    int runs = 3;
    boolean cold = false;
    boolean json = false;
    Path dir = null;
    Path results = null;
    Map<String, String> conf = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      String[] av = FsOptions.splitOption(args[i]);
      String a = av[0];
      String v = av[1];
      if (a.equals("--cold") || a.equals("--json")) {
        if (v != null) {
          throw new UsageException(a + " takes no value");
        }
        if (a.equals("--cold")) {
          cold = true;
        } else {
          json = true;
        }
        continue;
      }
      if (!a.startsWith("--")) {
        throw new UsageException("unexpected argument '" + a + "'");
      }
      if (!List.of("--size", "--sizes", "--threads", "--seconds", "--runs", "--dir", "--results", "--conf")
          .contains(a)) {
        throw new UsageException("unknown option " + a);
      }
      if (v == null) {
        if (i + 1 >= args.length) {
          throw new UsageException(a + " needs a value");
        }
        v = args[++i];
      }
      switch (a) {
        case "--size" -> size = size("--size", v);
        case "--sizes" -> {
          List<Integer> l = new ArrayList<>();
          for (String p : v.split(",", -1)) {
            long s = size("--sizes", p.trim());
            if (s > MAX_IO) {
              throw new UsageException("--sizes values must be at most 64M, not '" + p + "'");
            }
            if (l.contains((int) s)) {
              throw new UsageException("--sizes lists " + p + " twice");
            }
            l.add((int) s);
          }
          sizes = l;
        }
        case "--threads" -> {
          List<Integer> l = new ArrayList<>();
          for (String p : v.split(",", -1)) {
            int n = positive("--threads", p);
            if (n > MAX_THREADS) {
              throw new UsageException("--threads values must be 1.." + MAX_THREADS + ", not " + n);
            }
            if (l.contains(n)) {
              throw new UsageException("--threads lists " + n + " twice");
            }
            l.add(n);
          }
          threads = l;
        }
        case "--seconds" -> {
          seconds = positive("--seconds", v);
          if (seconds > 3600) {
            throw new UsageException("--seconds must be 1..3600, not " + v);
          }
        }
        case "--runs" -> {
          runs = positive("--runs", v);
          if (runs > 100) {
            throw new UsageException("--runs must be 1..100, not " + v);
          }
        }
        case "--dir" -> {
          if (v.isBlank()) {
            throw new UsageException("--dir needs a directory");
          }
          dir = Path.of(v).toAbsolutePath();
        }
        case "--results" -> results = Path.of(v).toAbsolutePath();
        case "--conf" -> FsOptions.putConf(conf, v);
        default -> throw new AssertionError(a);
      }
    }
    for (int s : sizes) {
      if (s > size) {
        throw new UsageException("--sizes value " + Sizes.format(s) + " is larger than the file (--size "
            + Sizes.format(size) + ")");
      }
    }
    return new PreadOptions(size, sizes, threads, seconds, runs, cold, json, dir, results, conf);
  }

  private static long size(String name, String v) {
    long s;
    try {
      s = Sizes.parse(v);
    } catch (IllegalArgumentException e) {
      throw new UsageException(name + " takes sizes like 4K or 1G, not '" + v + "'");
    }
    if (s < 1) {
      throw new UsageException(name + " must be at least 1 byte, not '" + v + "'");
    }
    return s;
  }

  private static int positive(String name, String v) {
    int n;
    try {
      n = Integer.parseInt(v.trim());
    } catch (NumberFormatException e) {
      throw new UsageException(name + " takes whole numbers, not '" + v + "'");
    }
    if (n < 1) {
      throw new UsageException(name + " must be at least 1, not " + v);
    }
    return n;
  }
}
