package org.hdfsrdma.tools.fs;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.hdfsrdma.tools.Sizes;
import org.hdfsrdma.tools.UsageException;

/**
 * Options of {@code hrdma demo} and {@code hrdma bench fs}. Immutable.
 *
 * @param size         bytes per file (--size, default 1G)
 * @param dir          the cluster's directory (--dir; null: a temporary directory, deleted after)
 * @param runs         repetitions (--runs; demo 1, bench 3)
 * @param replications replication factors to measure (--replication; demo 3, bench 1,3)
 * @param json         --json: results as JSON lines on stdout instead of the table
 * @param resultsDir   bench only: where the CSV/JSON go (--results DIR; null: ROOT/results/DATE-COMMIT)
 * @param conf         --conf KEY=VALUE (repeatable): set in the daemons' and the clients' configuration
 */
public record FsOptions(long size, Path dir, int runs, List<Integer> replications, boolean json, Path resultsDir,
    Map<String, String> conf) {
  public static final long DEFAULT_SIZE = 1L << 30;
  /** Smallest file accepted: one 64 KiB packet (smaller files measure only the RPCs). */
  public static final long MIN_SIZE = 64 * 1024;

  public FsOptions {
    replications = List.copyOf(replications);
    conf = Collections.unmodifiableMap(new LinkedHashMap<>(conf));
  }

  public static final String DEMO_USAGE = """
      usage: hrdma demo [--size 1G] [--dir DIR] [--runs N] [--encrypt] [--conf KEY=VALUE ...]
        starts a NameNode and 3 DataNodes with the plugin in DIR (default: a temporary
        directory, removed afterwards), writes a --size file through our client and one
        through the stock client (replication 3), reads each back through both, verifies
        the content (CRC32C of the stream) and getFileChecksum, prints one table, stops
        the cluster. Exit 0 when every check passes, 1 when one fails, 2 on bad arguments.
        --conf sets a key in the DataNodes' and the clients' configuration (e.g.
        hrdma.transport.order=tcp, hrdma.ucx.spin-count=0).
      """;

  public static final String BENCH_USAGE = """
      usage: hrdma bench fs [--size 1G] [--replication 1,3] [--runs 3] [--dir DIR] [--json] [--results DIR]
                      [--encrypt] [--conf KEY=VALUE ...]
        write and read of --size files through our client and the stock client on one
        local cluster (NameNode + 3 DataNodes with the plugin), alternating ours, stock,
        ours, stock...; reads with a warm page cache (each file read once before timing).
        Medians/min/max per metric, CPU s per GiB (client, DataNodes), ratios ours/stock.
        Results also go to results/DATE-COMMIT/ (fs-bench.csv, fs-bench.json, machine.txt).
        --encrypt: dfs.encrypt.data.transfer with AES/CTR cipher suites and block tokens on
        the whole cluster (both clients then encrypt every byte on the wire).
      """;

  /** {@code hrdma demo} options. */
  public static FsOptions parseDemo(String[] args) {
    return parse(args, false);
  }

  /** {@code hrdma bench fs} options. */
  public static FsOptions parseBench(String[] args) {
    return parse(args, true);
  }

  private static FsOptions parse(String[] args, boolean bench) {
    long size = DEFAULT_SIZE;
    Path dir = null;
    int runs = bench ? 3 : 1;
    List<Integer> repl = bench ? List.of(1, 3) : List.of(3);
    boolean json = false;
    Path results = null;
    Map<String, String> conf = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      String[] av = splitOption(args[i]);
      String a = av[0];
      String v = av[1];
      if (a.equals("--json") && bench) {
        if (v != null) {
          throw new UsageException("--json takes no value");
        }
        json = true;
        continue;
      }
      if (a.equals("--encrypt")) {
        if (v != null) {
          throw new UsageException("--encrypt takes no value");
        }
        putEncrypt(conf);
        continue;
      }
      if (!a.startsWith("--")) {
        throw new UsageException("unexpected argument '" + a + "'");
      }
      if (!List.of("--size", "--dir", "--runs", "--conf").contains(a)
          && !(bench && List.of("--replication", "--results").contains(a))) {
        throw new UsageException("unknown option " + a + (a.equals("--json") || a.equals("--replication")
            ? " (an option of 'hrdma bench fs')" : ""));
      }
      if (v == null) {
        if (i + 1 >= args.length) {
          throw new UsageException(a + " needs a value");
        }
        v = args[++i];
      }
      switch (a) {
        case "--size" -> {
          try {
            size = Sizes.parse(v);
          } catch (IllegalArgumentException e) {
            throw new UsageException("--size takes a size like 8M or 1G, not '" + v + "'");
          }
          if (size < MIN_SIZE) {
            throw new UsageException("--size must be at least 64K, not '" + v + "'");
          }
        }
        case "--dir" -> {
          if (v.isBlank()) {
            throw new UsageException("--dir needs a directory");
          }
          dir = Path.of(v).toAbsolutePath();
        }
        case "--runs" -> {
          runs = positive("--runs", v);
          if (runs > 100) {
            throw new UsageException("--runs must be 1..100, not " + v);
          }
        }
        case "--replication" -> {
          List<Integer> r = new ArrayList<>();
          for (String p : v.split(",", -1)) {
            int n = positive("--replication", p);
            if (n > 3) {
              throw new UsageException("--replication values must be 1..3 (the cluster has 3 DataNodes), not " + n);
            }
            if (r.contains(n)) {
              throw new UsageException("--replication lists " + n + " twice");
            }
            r.add(n);
          }
          repl = r;
        }
        case "--results" -> results = Path.of(v).toAbsolutePath();
        case "--conf" -> putConf(conf, v);
        default -> throw new AssertionError(a);
      }
    }
    return new FsOptions(size, dir, runs, repl, json, results, conf);
  }

  /** {@code --key=value} as {"--key", "value"}; anything else as {arg, null}. */
  public static String[] splitOption(String arg) {
    int eq = arg.indexOf('=');
    return arg.startsWith("--") && eq > 0 ? new String[] {arg.substring(0, eq), arg.substring(eq + 1)}
        : new String[] {arg, null};
  }

  /**
   * {@code --encrypt} of the benchmarks: a cluster as secure sites run it without Kerberos.
   * Stock encrypts with AES/CTR after SASL, ours with AES-GCM after the same SASL
   * (docs/security.md). {@code --conf} given before it may not override these.
   */
  public static void putEncrypt(Map<String, String> conf) {
    conf.put("dfs.encrypt.data.transfer", "true");
    conf.put("dfs.encrypt.data.transfer.cipher.suites", "AES/CTR/NoPadding");
    conf.put("dfs.block.access.token.enable", "true");
    // with tokens on, short-circuit sockets in /tmp are refused; a secure site points
    // dfs.domain.socket.path at a safe directory, which reads the same: this single-user
    // benchmark host accepts its /tmp sockets instead
    conf.put("hrdma.domain-socket.allow-sticky-dirs", "true");
  }

  /** One {@code --conf KEY=VALUE} into {@code conf}. */
  public static void putConf(Map<String, String> conf, String v) {
    int e = v.indexOf('=');
    if (e <= 0) {
      throw new UsageException("--conf takes KEY=VALUE, not '" + v + "'");
    }
    conf.put(v.substring(0, e).trim(), v.substring(e + 1).trim());
  }

  private static int positive(String name, String v) {
    int n;
    try {
      n = Integer.parseInt(v.trim());
    } catch (NumberFormatException e) {
      throw new UsageException(name + " takes a whole number, not '" + v + "'");
    }
    if (n < 1) {
      throw new UsageException(name + " must be at least 1, not " + v);
    }
    return n;
  }
}
