package org.hdfsrdma.bench.fs;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.hdfsrdma.tools.Sizes;
import org.hdfsrdma.tools.UsageException;
import org.hdfsrdma.cluster.ClusterConfig;
import org.hdfsrdma.datanode.disk.DiskSettings;
import org.hdfsrdma.datanode.disk.DiskStatus;
import org.hdfsrdma.nativelib.NativeDisk;
import org.hdfsrdma.tools.fs.FsMain;
import org.hdfsrdma.tools.fs.LocalCluster;
import org.hdfsrdma.tools.fs.Stats;

/**
 * {@code hrdma bench disk}: the concurrent-streams experiments on this machine's disk. One DataNode
 * with one volume, 128 MB blocks, replication 1. For 1..4 concurrent writers, then
 * readers: aggregate bandwidth (writes include the sync that puts them on disk; reads
 * start with the files dropped from the page cache), extents per block (FIEMAP),
 * sequential run length (the volume's scheduler) for our write path with the
 * scheduler on and off, and the stock client and DataNode. Then the ssd policy at
 * fixed queue depths on an [SSD] volume, reading through our client (O_DIRECT,
 * io_uring) beside fio reading the same block files at the same depth.
 */
public final class DiskBench {
  private DiskBench() {}

  static final String USAGE = """
      usage: hrdma bench disk [--size 512M] [--streams 1,2,4] [--depths 1,4,16] [--request 1M] [--rounds 5]
                              [--dir DIR] [--conf KEY=VALUE]... [--part all|streams|ssd]
        --size      bytes each writer writes / reader reads (default 512M: 4 blocks of 128 MB)
        --streams   concurrent writers and readers to run (default 1,2,4)
        --depths    queue depths of the ssd policy and fio (default 1,4,16)
        --request   request size of the ssd policy and fio's block size (default 1M)
        --rounds    ssd part: rounds of end to end, disk stage and fio in turn at each depth, after one
                    untimed warm-up pass; medians are reported (default 5)
        --dir       where the clusters live (default: a temporary directory, deleted)
        --conf      a setting for the daemons and the clients (e.g. hrdma.transport.order=tcp)
        --part      both experiments (all), only the 1..4 streams, or only the ssd policy beside fio
      """;

  private static final long BLOCK = 128L << 20;
  /** metrics2's default period, for which a source's JMX values are cached, plus a margin. */
  private static final long JMX_CACHE_MS = 10_500;

  public static void main(String[] args) {
    FsMain.quietLogging();
    System.exit(run(args, System.out, System.err));
  }

  record Options(long size, List<Integer> streams, List<Integer> depths, int request, int rounds,
      java.nio.file.Path dir, Map<String, String> conf, String part) {}

  static Options parse(String[] args) throws UsageException {
    long size = 512L << 20;
    List<Integer> streams = List.of(1, 2, 4);
    List<Integer> depths = List.of(1, 4, 16);
    int request = 1 << 20;
    int rounds = 5;
    java.nio.file.Path dir = null;
    Map<String, String> conf = new LinkedHashMap<>();
    String part = "all";
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (i + 1 >= args.length) {
        throw new UsageException(a.startsWith("--") ? a + " needs a value" : "unexpected argument '" + a + "'");
      }
      String v = args[++i];
      try {
        switch (a) {
          case "--size" -> size = Sizes.parse(v);
          case "--streams" -> streams = Sizes.parseList(v);
          case "--depths" -> depths = Sizes.parseList(v);
          case "--request" -> request = (int) Sizes.parse(v);
          case "--rounds" -> rounds = Integer.parseInt(v);
          case "--dir" -> dir = java.nio.file.Path.of(v);
          case "--part" -> {
            if (!List.of("all", "streams", "ssd").contains(v)) {
              throw new UsageException("--part is all, streams or ssd, not '" + v + "'");
            }
            part = v;
          }
          case "--conf" -> {
            int eq = v.indexOf('=');
            if (eq <= 0) {
              throw new UsageException("--conf takes KEY=VALUE, not '" + v + "'");
            }
            conf.put(v.substring(0, eq).trim(), v.substring(eq + 1).trim());
          }
          default -> throw new UsageException("unknown option " + a);
        }
      } catch (IllegalArgumentException e) {
        throw new UsageException(a + ": " + e.getMessage());
      }
    }
    if (size < BLOCK || streams.isEmpty() || depths.isEmpty() || request < 4096 || request > (64 << 20)
        || rounds < 1 || rounds > 50
        || streams.stream().anyMatch(n -> n < 1 || n > 16) || depths.stream().anyMatch(n -> n < 1 || n > 256)) {
      throw new UsageException("--size at least 128M, --streams 1..16, --depths 1..256, --request 4K..64M (the ssd policy's range),"
          + " --rounds 1..50");
    }
    return new Options(size, streams, depths, request, rounds, dir, conf, part);
  }

  public static int run(String[] args, PrintStream out, PrintStream err) {
    if (args.length > 0 && List.of("-h", "--help", "help").contains(args[0])) {
      out.print(USAGE);
      return 0;
    }
    Options o;
    try {
      o = parse(args);
    } catch (UsageException e) {
      err.println("hrdma bench disk: " + e.getMessage());
      err.print(USAGE);
      return 2;
    }
    try {
      java.nio.file.Path base = o.dir() != null ? o.dir() : Files.createTempDirectory("hrdma-bench-disk-");
      out.println("hrdma bench disk: " + Machine.describe());
      if (!o.part().equals("ssd")) {
        streamsPart(base, o, out);
      }
      if (!o.part().equals("streams")) {
        ssdPart(base, o, out);
      }
      out.println("note: no rotational disk here; the rotational policy's effect on seeks is shown by the"
          + " simulated device (DiskSchedulerSimTest), these runs show its cost or gain on this disk");
      if (o.dir() == null) {
        LocalCluster.deleteTree(base);
      }
      return 0;
    } catch (Exception e) {
      err.println("hrdma bench disk: " + e);
      return 1;
    }
  }

  /** The concurrent-streams experiments: 1..4 writers and readers; scheduler on, stock, scheduler off. */
  private static void streamsPart(java.nio.file.Path base, Options o, PrintStream out) throws Exception {
    {
      List<String[]> rows = new ArrayList<>();
      Map<String, Double> agg = new HashMap<>();
      // 1. the scheduler on with the rotational policy (the concurrent-streams experiment), the stock path on the same cluster
      Map<String, String> on = baseConf(o);
      on.putIfAbsent(DiskSettings.POLICY_KEY_PREFIX + "disk", "rotational");
      try (LocalCluster c = LocalCluster.start(base.resolve("sched-on"), 1, on, out)) {
        streams(c, o, "ours, scheduler on", true, rows, agg, out);
        streams(c, o, "stock", false, rows, agg, out);
      }
      // 2. the scheduler off: no queueing, no preallocation, buffered writes left in the page cache
      Map<String, String> off = baseConf(o);
      off.put(DiskSettings.SCHEDULER_KEY, "false");
      off.put(DiskSettings.PREALLOCATE_KEY, "false");
      off.put(DiskSettings.WRITE_MODE_KEY_PREFIX + "disk", DiskSettings.WriteMode.CACHE.key());
      try (LocalCluster c = LocalCluster.start(base.resolve("sched-off"), 1, off, out)) {
        streams(c, o, "ours, scheduler off", true, rows, agg, out);
      }
      out.println();
      out.printf(" %-22s %-6s %7s %12s %12s %11s%n", "path", "op", "streams", "agg[MB/s]", "extents/blk",
          "run[MB]");
      for (String[] r : rows) {
        out.printf(" %-22s %-6s %7s %12s %12s %11s%n", (Object[]) r);
      }
      int maxN = o.streams().stream().mapToInt(Integer::intValue).max().orElse(1);
      Double w1 = agg.get("ours, scheduler on/write/1");
      Double wn = agg.get("ours, scheduler on/write/" + maxN);
      if (w1 != null && wn != null && maxN > 1) {
        out.printf("target: %d writers keep >= 90%% of one writer's aggregate: %.0f%% %s%n", maxN, 100 * wn / w1,
            wn >= 0.9 * w1 ? "PASS" : "MISS");
      }
    }
  }

  /** How long the adaptive policy's disk stage reads (whole passes over the block files): time to adapt. */
  private static final long ADAPTIVE_STAGE_NANOS = 3_000_000_000L;

  /**
   * The ssd policy at each depth on an [SSD] volume, three figures from the same block files,
   * each one pass over them with the page cache dropped: end to end (our client reading the
   * file through the transport from the DataNode's O_DIRECT io_uring reads), the disk stage
   * alone (the plugin's DiskIo reading the block files into registered packet buffers that
   * are then discarded), and fio at the same depth and request size. One untimed pass of the
   * first two warms the JVMs (the JIT), then {@code --rounds} rounds run the three in turn;
   * the medians are reported. Then the disk stage with the adaptive policy at its defaults.
   */
  private static void ssdPart(java.nio.file.Path base, Options o, PrintStream out) throws Exception {
    List<String[]> rows = new ArrayList<>();
    double bestFio = 0;
    double bestOurs = 0;
    double bestDisk = 0;
    String adaptive = null;
    try (org.hdfsrdma.transport.Transport t = packetTransport(o)) {
      for (int qd : o.depths()) {
        Map<String, String> ssd = ssdConf(o, qd);
        try (LocalCluster c = LocalCluster.start(base.resolve("ssd-qd" + qd), 1, ssd, out);
            FileSystem ours = c.newClient(true);
            DistributedFileSystem stock = (DistributedFileSystem) c.newClient(false)) {
          awaitSsdReported(stock);
          Path f = new Path("/bench-disk/ssd/f");
          stock.mkdirs(f.getParent());
          stock.setStoragePolicy(f.getParent(), "ALL_SSD"); // the only volume is [SSD]
          write(ours, f, o.size());
          List<java.nio.file.Path> blocks = blockFiles(c, stock, f);
          sync(blocks);
          dropCache(blocks);
          read(ours, f); // warm-up, untimed
          diskStage(ssd, blocks, t.allocator());
          double[] e2e = new double[o.rounds()];
          double[] disk = new double[o.rounds()];
          double[] fio = new double[o.rounds()];
          for (int r = 0; r < o.rounds(); r++) {
            dropCache(blocks);
            long t0 = System.nanoTime();
            read(ours, f);
            e2e[r] = Stats.mbPerSecond(o.size(), System.nanoTime() - t0);
            disk[r] = diskStage(ssd, blocks, t.allocator());
            fio[r] = fio(blocks, qd, o.request());
            out.printf("bench disk: ssd depth %d round %d: end to end %.0f MB/s, disk stage %.0f, fio %.0f%n", qd,
                r + 1, e2e[r], disk[r], fio[r]);
          }
          Stats e = Stats.of(e2e);
          Stats d = Stats.of(disk);
          Stats fi = Stats.of(fio);
          bestFio = Math.max(bestFio, fi.median());
          bestOurs = Math.max(bestOurs, e.median());
          bestDisk = Math.max(bestDisk, d.median());
          rows.add(ssdRow(qd, e, d, fi));
          if (qd == o.depths().get(o.depths().size() - 1)) {
            Map<String, String> a = baseConf(o);
            a.put(DiskSettings.POLICY_KEY_PREFIX + "ssd", "adaptive");
            DiskSettings as = DiskSettings.of(hadoopConf(a));
            Stage ad = diskStageRun(a, blocks, t.allocator(), ADAPTIVE_STAGE_NANOS);
            adaptive = String.format("disk stage, adaptive policy at its defaults (depth %d..%d, requests %dK..%dK,"
                + " read-ahead %dK), %.0f s of passes: %.0f MB/s, %.2f of fio's best median (%.0f MB/s); ended at"
                + " depth %d x %dK (%d raises, %d lowers)", as.adaptiveMinDepth(), as.adaptiveMaxDepth(),
                as.adaptiveMinBytes() >> 10, as.adaptiveMaxBytes() >> 10, as.readAheadBytes() >> 10,
                ADAPTIVE_STAGE_NANOS / 1e9, ad.mbps(), ad.mbps() / bestFio, bestFio, ad.end().depth(),
                ad.end().requestBytes() >> 10, ad.end().depthRaises(), ad.end().depthLowers());
          }
        }
      }
    }
    out.println();
    out.printf(" each figure: one pass over the %d MB file's block files with the page cache dropped; median of %d"
        + " rounds [min-max]%n", o.size() / 1_000_000, o.rounds());
    out.println(" end-to-end: our client reading the file through the transport from the DataNode (the target's figure)");
    out.println(" disk stage: the DataNode's DiskIo alone reading the same block files into registered buffers,"
        + " bytes discarded");
    out.println(" fio:        fio --direct=1 --ioengine=io_uring on the same block files; same depth and request size");
    out.printf(" %-6s %-20s %8s %-20s %9s %-20s%n", "depth", "e2e[MB/s]", "e2e/fio", "disk[MB/s]", "disk/fio",
        "fio[MB/s]");
    for (String[] r : rows) {
      out.printf(" %-6s %-20s %8s %-20s %9s %-20s%n", (Object[]) r);
    }
    out.printf("disk stage at its best depth: %.0f MB/s vs fio's best %.0f MB/s = %.0f%%%n", bestDisk, bestFio,
        100 * bestDisk / bestFio);
    if (adaptive != null) {
      out.println(adaptive);
    }
    out.printf("target: reads >= 95%% of fio at its best depth: best ours %.0f MB/s vs fio %.0f MB/s = %.0f%% %s%n",
        bestOurs, bestFio, 100 * bestOurs / bestFio, bestOurs >= 0.95 * bestFio ? "PASS" : "MISS");
  }

  /** One line of the ssd table: depth, end to end and its ratio to fio, disk stage and its ratio, fio (medians). */
  static String[] ssdRow(int qd, Stats e2e, Stats disk, Stats fio) {
    return new String[] {Integer.toString(qd), spread(e2e), String.format("%.2f", e2e.median() / fio.median()),
      spread(disk), String.format("%.2f", disk.median() / fio.median()), spread(fio)};
  }

  /** "median [min-max]" in MB/s; the median alone for one sample. */
  static String spread(Stats s) {
    return s.count() > 1 ? String.format("%.0f [%.0f-%.0f]", s.median(), s.min(), s.max())
        : String.format("%.0f", s.median());
  }

  /**
   * The DataNode's settings for the ssd policy at depth {@code qd}: requests of --request, and
   * a read-ahead window of depth + 1 requests (depth in flight while one is copied out), 8 MB at least.
   */
  static Map<String, String> ssdConf(Options o, int qd) {
    Map<String, String> ssd = baseConf(o);
    ssd.put(ClusterConfig.STORAGE_TYPES_KEY, "SSD");
    ssd.put(DiskSettings.POLICY_KEY_PREFIX + "ssd", "ssd");
    ssd.put(DiskSettings.SSD_DEPTH_KEY, Integer.toString(qd));
    ssd.put(DiskSettings.SSD_REQUEST_BYTES_KEY, Integer.toString(o.request()));
    ssd.put(DiskSettings.READ_AHEAD_BYTES_KEY, Long.toString(Math.max(8L << 20, (qd + 1L) * o.request())));
    return ssd;
  }

  private static org.apache.hadoop.conf.Configuration hadoopConf(Map<String, String> m) {
    org.apache.hadoop.conf.Configuration c = new org.apache.hadoop.conf.Configuration(false);
    m.forEach(c::set);
    return c;
  }

  /**
   * The DataNode's disk stage alone, in this JVM: a DiskIo with the DataNode's settings
   * reading the block files as it serves a read (see {@link DiskStage}); MB/s.
   */
  static double diskStage(Map<String, String> conf, List<java.nio.file.Path> blocks,
      org.hdfsrdma.transport.BufferAllocator alloc) throws IOException {
    return diskStageRun(conf, blocks, alloc, 0).mbps(); // one pass
  }

  /** A disk-stage run: MB/s, and the volume's counters at its end (the policy's shape then). */
  record Stage(double mbps, org.hdfsrdma.datanode.disk.VolumeStats.Snapshot end) {}

  static Stage diskStageRun(Map<String, String> conf, List<java.nio.file.Path> blocks,
      org.hdfsrdma.transport.BufferAllocator alloc, long minNanos) throws IOException {
    org.apache.hadoop.conf.Configuration c = hadoopConf(conf);
    DiskSettings s = DiskSettings.of(c);
    org.hdfsrdma.datanode.compat.DataNodeAccess.Volume v = new org.hdfsrdma.datanode.compat.DataNodeAccess.Volume(
        "bench-disk-stage", org.apache.hadoop.fs.StorageType.SSD, blocks.get(0).getParent().toString());
    int packet = c.getInt(org.hdfsrdma.datanode.HrdmaDataNodeKeys.READ_PACKET_BYTES_KEY,
        org.hdfsrdma.datanode.HrdmaDataNodeKeys.READ_PACKET_BYTES_DEFAULT);
    try (org.hdfsrdma.datanode.disk.DiskIo io = new org.hdfsrdma.datanode.disk.DiskIo(s, List.of(v))) {
      double mbps = DiskStage.run(io, v, blocks, alloc, packet, minNanos, b -> {});
      return new Stage(mbps, io.schedulers().get(v.storageId()).stats().snapshot());
    }
  }

  /** A transport whose registered allocator holds the disk stage's packets: the first of the order that starts. */
  private static org.hdfsrdma.transport.Transport packetTransport(Options o) throws IOException {
    org.hdfsrdma.transport.TransportConf tc = org.hdfsrdma.transport.TransportConf.of(o.conf());
    IOException last = null;
    for (String name : tc.order()) {
      try {
        return org.hdfsrdma.transport.Transports.create(name, tc);
      } catch (IOException | RuntimeException e) {
        last = e instanceof IOException io ? io : new IOException(e);
      }
    }
    throw last != null ? last : new IOException("no transport in " + tc.order());
  }

  private static Map<String, String> baseConf(Options o) {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("dfs.blocksize", Long.toString(BLOCK));
    m.put("dfs.replication", "1");
    m.putAll(o.conf());
    return m;
  }

  /**
   * Waits (30 s at most) until the NameNode has a storage report of an SSD volume with room
   * for a block: right after start it may not, and placement then excludes the node.
   */
  private static void awaitSsdReported(DistributedFileSystem stock) throws IOException, InterruptedException {
    long end = System.nanoTime() + 30_000_000_000L;
    while (System.nanoTime() < end) {
      for (org.apache.hadoop.hdfs.server.protocol.DatanodeStorageReport r : stock.getClient()
          .getDatanodeStorageReport(org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType.LIVE)) {
        for (org.apache.hadoop.hdfs.server.protocol.StorageReport s : r.getStorageReports()) {
          if (s.getStorage().getStorageType() == org.apache.hadoop.fs.StorageType.SSD && s.getRemaining() > BLOCK) {
            return;
          }
        }
      }
      Thread.sleep(200);
    }
    throw new IOException("the NameNode has no report of an SSD volume with room after 30 s");
  }

  /** n concurrent writers, then n concurrent readers, for each n. */
  private static void streams(LocalCluster c, Options o, String name, boolean ours, List<String[]> rows,
      Map<String, Double> agg, PrintStream log) throws Exception {
    try (FileSystem fs = c.newClient(ours); DistributedFileSystem stock = (DistributedFileSystem) c.newClient(false)) {
      long[] r0 = ours ? runs(c) : null;
      for (int n : o.streams()) {
        Path dir = new Path("/bench-disk/" + name.replaceAll("[^a-z]", "") + "/" + n);
        List<Path> files = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          files.add(new Path(dir, "f" + i));
        }
        log.printf("bench disk: %s, %d writer(s)%n", name, n);
        long t0 = System.nanoTime();
        parallel(files, f -> {
          write(fs, f, o.size());
          return null;
        });
        List<java.nio.file.Path> blocks = new ArrayList<>();
        for (Path f : files) {
          blocks.addAll(blockFiles(c, stock, f));
        }
        sync(blocks);
        double w = n * o.size() / 1e6 / ((System.nanoTime() - t0) / 1e9);
        double extents = 0;
        for (java.nio.file.Path b : blocks) {
          try (NativeDisk.File nf = NativeDisk.File.open(b, 0)) {
            extents += nf.extentCount();
          }
        }
        extents /= blocks.size();
        long[] r1 = ours ? runs(c) : null;
        String run = runMb(r0, r1);
        r0 = r1;
        rows.add(new String[] {name, "write", "" + n, String.format("%.0f", w), String.format("%.2f", extents), run});
        agg.put(name + "/write/" + n, w);
        dropCache(blocks);
        log.printf("bench disk: %s, %d reader(s)%n", name, n);
        t0 = System.nanoTime();
        parallel(files, f -> {
          read(fs, f);
          return null;
        });
        double r = n * o.size() / 1e6 / ((System.nanoTime() - t0) / 1e9);
        r1 = ours ? runs(c) : null;
        rows.add(new String[] {name, "read", "" + n, String.format("%.0f", r), "", runMb(r0, r1)});
        r0 = r1;
        agg.put(name + "/read/" + n, r);
      }
    }
  }

  private interface FileTask {
    Void run(Path p) throws Exception;
  }

  private static void parallel(List<Path> files, FileTask t) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(files.size());
    try {
      List<Future<Void>> fs = new ArrayList<>();
      for (Path p : files) {
        fs.add(pool.submit((Callable<Void>) () -> t.run(p)));
      }
      for (Future<Void> f : fs) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
  }

  private static void write(FileSystem fs, Path p, long size) throws IOException {
    byte[] b = new byte[1 << 20];
    new java.util.Random(p.hashCode()).nextBytes(b);
    try (OutputStream out = fs.create(p, true)) {
      for (long n = 0; n < size; n += b.length) {
        out.write(b, 0, (int) Math.min(b.length, size - n));
      }
    }
  }

  private static void read(FileSystem fs, Path p) throws IOException {
    byte[] b = new byte[1 << 20];
    try (InputStream in = fs.open(p)) {
      while (in.read(b) >= 0) {
        // just the bytes
      }
    }
  }

  /** The DataNode's block files of {@code p}, by block id under the cluster directory. */
  private static List<java.nio.file.Path> blockFiles(LocalCluster c, DistributedFileSystem stock, Path p)
      throws IOException {
    Map<String, java.nio.file.Path> byName = new HashMap<>();
    try (Stream<java.nio.file.Path> s = Files.walk(c.dir().resolve("dn1"))) {
      s.filter(x -> x.getFileName().toString().matches("blk_-?[0-9]+")).forEach(x -> byName.put(
          x.getFileName().toString(), x));
    }
    List<java.nio.file.Path> out = new ArrayList<>();
    for (LocatedBlock b : stock.getClient().getLocatedBlocks(p.toString(), 0).getLocatedBlocks()) {
      java.nio.file.Path f = byName.get("blk_" + b.getBlock().getBlockId());
      if (f == null) {
        throw new IOException("no block file for " + b.getBlock());
      }
      out.add(f);
    }
    return out;
  }

  /** Everything written is on disk (fdatasync each block file). */
  private static void sync(List<java.nio.file.Path> files) throws IOException {
    for (java.nio.file.Path f : files) {
      try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(f,
          java.nio.file.StandardOpenOption.READ)) {
        ch.force(false);
      }
    }
  }

  private static void dropCache(List<java.nio.file.Path> files) throws IOException {
    for (java.nio.file.Path f : files) {
      try (NativeDisk.File nf = NativeDisk.File.open(f, 0)) {
        nf.dropCache(0, 0, false); // len 0: to the end of the file
      }
    }
  }

  /** The DataNode volume's sequential-run counters now: {runs, bytes}; null when unknown. */
  private static long[] runs(LocalCluster c) {
    try {
      Thread.sleep(JMX_CACHE_MS); // metrics2 refreshes a bean's JMX values at most once per period
      
      List<DiskStatus.Volume> v = c.dataNodeDiskStatus();
      return v.isEmpty() ? null : new long[] {v.get(0).runs(), v.get(0).runBytes()};
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  /** Average run (MB) between two {@link #runs} readings; empty when not measured. */
  private static String runMb(long[] before, long[] after) {
    if (before == null || after == null || after[0] == before[0]) {
      return "";
    }
    return String.format("%.2f", (after[1] - before[1]) / (double) (after[0] - before[0]) / (1 << 20));
  }

  /** fio reading the block files once, in order, at depth qd, O_DIRECT through io_uring; MB/s (10^6). */
  static double fio(List<java.nio.file.Path> blocks, int qd, int bs) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of("fio", "--name=anchor", "--rw=read", "--direct=1",
        "--ioengine=io_uring", "--iodepth=" + qd, "--bs=" + bs, "--readonly", "--output-format=json",
        "--filename=" + String.join(":", blocks.stream().map(java.nio.file.Path::toString).toList()),
        "--file_service_type=sequential"));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(false).start();
    byte[] outb = p.getInputStream().readAllBytes();
    String errs = new String(p.getErrorStream().readAllBytes());
    if (p.waitFor() != 0) {
      throw new IOException("fio failed: " + errs.trim());
    }
    JsonNode j = new ObjectMapper().readTree(outb);
    return j.path("jobs").get(0).path("read").path("bw_bytes").asDouble() / 1e6;
  }
}
