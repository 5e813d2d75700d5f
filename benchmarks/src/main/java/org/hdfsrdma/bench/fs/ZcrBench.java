package org.hdfsrdma.bench.fs;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.ReadOption;
import org.apache.hadoop.io.ElasticByteBufferPool;
import org.hdfsrdma.tools.Sizes;
import org.hdfsrdma.tools.UsageException;
import org.hdfsrdma.client.RdmaDistributedFileSystem;
import org.hdfsrdma.tools.fs.FsMain;
import org.hdfsrdma.tools.fs.FsOptions;
import org.hdfsrdma.tools.fs.LocalCluster;

/**
 * {@code hrdma bench zcr}: zero-copy reads ({@code read(ByteBufferPool, ...)}) against
 * plain reads into an array, through our client and the stock one, on one local
 * cluster, interleaved run by run; every read takes the CRC32C of what it got (the
 * application's work on the bytes, and the check that all read the same). Warm page
 * cache. Stock's zero-copy reads map only with its own short-circuit reads (libhadoop's
 * domain sockets); without them they copy, and the table says which happened.
 */
public final class ZcrBench {
  private ZcrBench() {}

  static final String USAGE = """
      usage: hrdma bench zcr [--size 1G] [--replication 1,3] [--runs 3] [--dir DIR] [--conf KEY=VALUE ...]
        one --size file (written by the stock client) read on a local cluster (NameNode +
        3 DataNodes with the plugin), warm page cache, in this order each run: ours zero-copy
        (checksums verified), ours zero-copy SKIP_CHECKSUMS, ours read(byte[]), stock
        zero-copy, stock read(byte[]); 1 MiB per call; medians, client CPU s per GiB, and
        the zero-copy bytes each stream's ReadStatistics counted.
      """;
  private static final int CALL = 1 << 20;
  private static final EnumSet<ReadOption> VERIFY = EnumSet.noneOf(ReadOption.class);
  private static final EnumSet<ReadOption> SKIP = EnumSet.of(ReadOption.SKIP_CHECKSUMS);

  public static void main(String[] args) {
    FsMain.quietLogging();
    System.exit(run(args, System.out, System.err));
  }

  /** One timed read: MB/s, client CPU seconds, zero-copy bytes the stream counted, CRC32C. */
  record Result(double mbps, double cpu, long zeroCopy, long crc, long bytes) {}

  static int run(String[] args, PrintStream out, PrintStream err) {
    if (args.length > 0 && List.of("-h", "--help", "help").contains(args[0])) {
      out.print(USAGE);
      return 0;
    }
    FsOptions o;
    try {
      o = FsOptions.parseBench(args);
    } catch (UsageException e) {
      err.println("hrdma bench zcr: " + e.getMessage());
      err.print(USAGE);
      return 2;
    }
    var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    ElasticByteBufferPool pool = new ElasticByteBufferPool();
    List<String> failures = new ArrayList<>();
    StringBuilder table = new StringBuilder();
    table.append(String.format("%n# hrdma bench zcr  size=%s  runs=%d  1 MiB per call, warm page cache, "
        + "CRC32C of every byte read (MB = 10^6 bytes; medians)%n", Sizes.format(o.size()), o.runs()));
    table.append(String.format("%-5s %-34s %10s %12s %14s %10s%n", "repl", "read", "MB/s", "cpu s/GiB",
        "zero-copy %", "vs stock"));
    try (LocalCluster c = LocalCluster.start(o.dir(), o.conf(), err);
        FileSystem ours = c.newClient(true);
        FileSystem stock = c.newClient(false)) {
      for (int repl : o.replications()) {
        Path p = new Path("/hrdma-bench-zcr/r" + repl);
        long crc = write(stock, p, o.size(), repl);
        Map<String, List<Result>> rows = new LinkedHashMap<>();
        for (String k : List.of("ours zero-copy", "ours zero-copy SKIP_CHECKSUMS", "ours read(byte[])",
            "stock zero-copy", "stock read(byte[])")) {
          rows.put(k, new ArrayList<>());
        }
        readArray(ours, p, os); // warm both paths once, untimed
        readArray(stock, p, os);
        for (int run = 0; run < o.runs(); run++) {
          rows.get("ours zero-copy").add(readZeroCopy(ours, p, pool, VERIFY, os));
          rows.get("ours zero-copy SKIP_CHECKSUMS").add(readZeroCopy(ours, p, pool, SKIP, os));
          rows.get("ours read(byte[])").add(readArray(ours, p, os));
          rows.get("stock zero-copy").add(readZeroCopy(stock, p, pool, VERIFY, os));
          rows.get("stock read(byte[])").add(readArray(stock, p, os));
        }
        double stockZc = median(rows.get("stock zero-copy").stream().mapToDouble(Result::mbps).toArray());
        for (Map.Entry<String, List<Result>> e : rows.entrySet()) {
          for (Result r : e.getValue()) {
            if (r.crc() != crc || r.bytes() != o.size()) {
              failures.add(String.format("%s, replication %d: %d bytes, CRC32C %08x, written %08x", e.getKey(), repl,
                  r.bytes(), r.crc(), crc));
            }
          }
          double mbps = median(e.getValue().stream().mapToDouble(Result::mbps).toArray());
          double cpu = median(e.getValue().stream().mapToDouble(Result::cpu).toArray()) * (1L << 30) / o.size();
          double zc = 100.0 * median(e.getValue().stream().mapToDouble(Result::zeroCopy).toArray()) / o.size();
          table.append(String.format("%-5d %-34s %10.0f %12.2f %13.0f%% %9.2fx%n", repl, e.getKey(), mbps, cpu, zc,
              mbps / stockZc));
        }
        stock.delete(p.getParent(), true);
      }
      if (ours instanceof RdmaDistributedFileSystem r) {
        table.append(String.format("ours: zero-copy fallbacks %d, short-circuit bytes unverified %d%n",
            r.zeroCopyFallbacks(), r.localBytesUnverified()));
      }
    } catch (Exception e) {
      err.println("hrdma bench zcr: " + e);
      return 1;
    }
    out.print(table);
    for (String f : failures) {
      err.println("FAIL: " + f);
    }
    return failures.isEmpty() ? 0 : 1;
  }

  private static long write(FileSystem fs, Path p, long size, int repl) throws IOException {
    byte[] chunk = new byte[CALL];
    new java.util.Random(0x5eedL).nextBytes(chunk);
    CRC32C crc = new CRC32C();
    try (FSDataOutputStream out = fs.create(p, true, 1 << 16, (short) repl, fs.getDefaultBlockSize(p))) {
      for (long off = 0; off < size; off += CALL) {
        int n = (int) Math.min(CALL, size - off);
        out.write(chunk, 0, n);
        crc.update(chunk, 0, n);
      }
    }
    return crc.getValue();
  }

  private static Result readArray(FileSystem fs, Path p, com.sun.management.OperatingSystemMXBean os)
      throws IOException {
    byte[] buf = new byte[CALL];
    CRC32C crc = new CRC32C();
    long cpu0 = os.getProcessCpuTime();
    long t0 = System.nanoTime();
    long total = 0;
    long zc;
    try (FSDataInputStream in = fs.open(p, 1 << 16)) {
      int n;
      while ((n = in.read(buf, 0, buf.length)) > 0) {
        crc.update(buf, 0, n);
        total += n;
      }
      zc = zeroCopyBytes(in);
    }
    return result(t0, cpu0, os, zc, crc, total);
  }

  private static Result readZeroCopy(FileSystem fs, Path p, ElasticByteBufferPool pool, EnumSet<ReadOption> opts,
      com.sun.management.OperatingSystemMXBean os) throws IOException {
    CRC32C crc = new CRC32C();
    long cpu0 = os.getProcessCpuTime();
    long t0 = System.nanoTime();
    long total = 0;
    long zc;
    try (FSDataInputStream in = fs.open(p, 1 << 16)) {
      ByteBuffer b;
      while ((b = in.read(pool, CALL, opts)) != null) {
        total += b.remaining();
        crc.update(b);
        in.releaseBuffer(b);
      }
      zc = zeroCopyBytes(in);
    }
    return result(t0, cpu0, os, zc, crc, total);
  }

  private static long zeroCopyBytes(FSDataInputStream in) {
    return in instanceof org.apache.hadoop.hdfs.client.HdfsDataInputStream h
        ? h.getReadStatistics().getTotalZeroCopyBytesRead() : 0;
  }

  private static Result result(long t0, long cpu0, com.sun.management.OperatingSystemMXBean os, long zc, CRC32C crc,
      long total) {
    double secs = (System.nanoTime() - t0) / 1e9;
    double cpu = (os.getProcessCpuTime() - cpu0) / 1e9;
    return new Result(total / 1e6 / secs, cpu, zc, crc.getValue(), total);
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    java.util.Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }
}
