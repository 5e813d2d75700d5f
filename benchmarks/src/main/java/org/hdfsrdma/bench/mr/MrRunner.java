package org.hdfsrdma.bench.mr;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.TestDFSIO;
import org.apache.hadoop.mapred.SortValidator;
import org.apache.hadoop.mapreduce.RandomWriter;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;
import org.hdfsrdma.tools.fs.ProcStat;
import org.hdfsrdma.client.RdmaDistributedFileSystem;

/**
 * Runs Hadoop's own programs for one {@link JobSpec} in this JVM through ToolRunner:
 * TestDFSIO (-write, then -read of what it wrote), RandomWriter, or Sort of a
 * RandomWriter output (and SortValidator). With the local job runner the map and
 * reduce tasks run in this JVM, so the Configuration's {@code fs.hdfs.impl} is the
 * client every task uses.
 *
 * <p>FileSystem cache: the tasks call {@code FileSystem.get(conf)}; the cache is cleared
 * before and after every program, so each program gets one client of the configured
 * class and that client's transport counters can be read when it ends (they say how
 * many bytes went over our transport). Not thread-safe: one program at a time, and
 * System.out and System.err are captured (to WORK/NAME-PATH-RUN.out) while a program runs.
 */
public final class MrRunner {
  static final String STAGING = "/hrdma-bench/staging";

  private final Configuration base;
  private final List<Long> dataNodePids;
  /** The DataNodes run in this JVM (a MiniDFSCluster): their CPU is in the process's, counted as the client's. */
  private final boolean dataNodesInProcess;
  private final com.sun.management.OperatingSystemMXBean os =
      (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

  /** {@code base}: the cluster's client configuration with fs.hdfs.impl chosen. */
  public MrRunner(Configuration base, List<Long> dataNodePids) {
    this(base, dataNodePids, false);
  }

  /** {@code dataNodesInProcess}: the DataNodes run in this JVM; their CPU is then in the client's, theirs is 0. */
  MrRunner(Configuration base, List<Long> dataNodePids, boolean dataNodesInProcess) {
    this.base = base;
    this.dataNodePids = List.copyOf(dataNodePids);
    this.dataNodesInProcess = dataNodesInProcess;
  }

  /** The Configuration the programs of {@code s} run with. */
  public static Configuration jobConf(Configuration base, JobSpec s) {
    Configuration c = new Configuration(base);
    c.setBoolean("fs.hdfs.impl.disable.cache", false);
    if (s.yarnRm() == null) {
      c.set("mapreduce.framework.name", "local");
      c.setInt("mapreduce.local.map.tasks.maximum", s.clients());
      c.setInt("mapreduce.local.reduce.tasks.maximum", s.clients());
    } else {
      c.set("mapreduce.framework.name", "yarn");
      c.set("yarn.resourcemanager.address", s.yarnRm());
    }
    c.set("hadoop.tmp.dir", Path.of(s.workDir(), "tmp").toString());
    c.set("mapreduce.cluster.local.dir", Path.of(s.workDir(), "local").toString());
    c.set("mapreduce.jobtracker.staging.root.dir", STAGING);
    c.set("yarn.app.mapreduce.am.staging-dir", STAGING);
    c.setLong("dfs.blocksize", s.blockBytes());
    c.setInt("dfs.replication", s.replication());
    c.set("test.build.data", s.hdfsDir());
    // RandomWriter: files maps of fileBytes each
    c.setLong("mapreduce.randomwriter.bytespermap", s.fileBytes());
    c.setLong("mapreduce.randomwriter.totalbytes", s.totalBytes());
    c.setInt("mapreduce.job.maps", s.files());
    c.setInt("mapreduce.job.reduces", s.clients());
    return c;
  }

  /** Runs {@code s}; its samples carry no DataNode CPU when the DataNode pids are unknown. */
  public List<MrSample> run(JobSpec s) throws Exception {
    Configuration conf = jobConf(base, s);
    Files.createDirectories(Path.of(s.workDir()));
    FileSystem.closeAll();
    try (FileSystem admin = FileSystem.newInstance(URI.create(conf.get("fs.defaultFS")), conf)) {
      admin.delete(new org.apache.hadoop.fs.Path(s.hdfsDir()), true);
    }
    List<MrSample> out = new ArrayList<>();
    switch (s.job()) {
      case "dfsio" -> {
        out.add(dfsio(s, conf, "write"));
        out.add(dfsio(s, conf, "read"));
      }
      case "randomwriter" -> out.add(randomWriter(s, conf, s.hdfsDir() + "/out"));
      case "sort" -> out.add(sort(s, conf));
      default -> throw new IllegalArgumentException("unknown job " + s.job());
    }
    try (FileSystem admin = FileSystem.newInstance(URI.create(conf.get("fs.defaultFS")), conf)) {
      admin.delete(new org.apache.hadoop.fs.Path(s.hdfsDir()), true);
    }
    return out;
  }

  private MrSample dfsio(JobSpec s, Configuration conf, String op) throws Exception {
    Path resFile = Path.of(s.workDir(), "dfsio-" + s.path() + "-" + s.run() + "-" + op + ".log");
    Files.deleteIfExists(resFile);
    long mib = Math.max(1, s.fileBytes() >> 20);
    Timed t = timed(s, op, new TestDFSIO(), conf, "-" + op, "-nrFiles", Integer.toString(s.files()), "-size",
        mib + "MB", "-resFile", resFile.toString());
    DfsioResult r = DfsioResult.parseLast(Files.readString(resFile));
    return new MrSample("dfsio", op, s.path(), s.run(), r.bytes(), t.seconds, r.throughputMBs(), t.clientCpu,
        t.dnCpu, t.oursBytes(op), String.format("TestDFSIO %s: files=%d MiB=%.0f throughput=%.2f MiB/s "
            + "avg-io-rate=%.2f MiB/s std-dev=%.2f exec=%.2f s", r.op(), r.files(), r.totalMiB(),
            r.throughputMiBs(), r.avgIoRateMiBs(), r.ioRateStdDev(), r.execSeconds()));
  }

  private MrSample randomWriter(JobSpec s, Configuration conf, String outDir) throws Exception {
    Timed t = timed(s, "randomwriter", new RandomWriter(), conf, outDir);
    long bytes = length(conf, outDir);
    return new MrSample("randomwriter", "write", s.path(), s.run(), bytes, t.seconds, bytes / 1e6 / t.seconds,
        t.clientCpu, t.dnCpu, t.oursBytes("write"), tookLine(t.stdout));
  }

  /** RandomWriter's output (untimed, on this path) sorted by Sort (timed), then validated. */
  private MrSample sort(JobSpec s, Configuration conf) throws Exception {
    String in = s.hdfsDir() + "/in";
    String sorted = s.hdfsDir() + "/sorted";
    timed(s, "sort-input", new RandomWriter(), conf, in);
    Timed t = timed(s, "sort", new org.apache.hadoop.examples.Sort<>(), conf, "-r", Integer.toString(s.clients()),
        in, sorted);
    long bytes = length(conf, sorted);
    String detail = tookLine(t.stdout);
    if (s.validate()) {
      Timed v = timed(s, "sortvalidate", new SortValidator(), conf, "-sortInput", in, "-sortOutput", sorted);
      if (!JobOutput.sortValidated(v.stdout)) {
        throw new IOException("SortValidator did not validate the sort of " + in + " (output in " + s.workDir()
            + "):\n" + tail(v.stdout, 20));
      }
      detail += "; SortValidator: SUCCESS";
    }
    return new MrSample("sort", "sort", s.path(), s.run(), bytes, t.seconds, bytes / 1e6 / t.seconds, t.clientCpu,
        t.dnCpu, t.oursBytes("write"), detail);
  }

  private static String tookLine(String stdout) {
    return JobOutput.jobSeconds(stdout).stream().mapToObj(x -> String.format("the job took %.0f s", x))
        .findFirst().orElse("no 'The job took' line");
  }

  private static long length(Configuration conf, String dir) throws IOException {
    try (FileSystem fs = FileSystem.newInstance(URI.create(conf.get("fs.defaultFS")), conf)) {
      return fs.getContentSummary(new org.apache.hadoop.fs.Path(dir)).getLength();
    }
  }

  /** A program's run: wall time, CPU, captured output, the client's counters. */
  private static final class Timed {
    double seconds;
    double clientCpu;
    double dnCpu;
    String stdout;
    long rdmaRead = -1;
    long rdmaWritten = -1;

    long oursBytes(String op) {
      return op.equals("read") ? rdmaRead : rdmaWritten;
    }
  }

  private Timed timed(JobSpec s, String name, Tool tool, Configuration conf, String... args) throws Exception {
    Path log = Path.of(s.workDir(), name + "-" + s.path() + "-" + s.run() + ".out");
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    PrintStream orig = System.out;
    PrintStream origErr = System.err;
    FileSystem.closeAll();
    Timed t = new Timed();
    double dn0 = dataNodeCpu();
    long cpu0 = os.getProcessCpuTime();
    long t0 = System.nanoTime();
    int rc;
    PrintStream capture = new PrintStream(buf, true, StandardCharsets.UTF_8);
    System.setOut(capture);
    System.setErr(capture);
    try {
      rc = ToolRunner.run(new Configuration(conf), tool, args);
    } finally {
      capture.flush();
      System.setOut(orig);
      System.setErr(origErr);
      t.seconds = (System.nanoTime() - t0) / 1e9;
      t.clientCpu = (os.getProcessCpuTime() - cpu0) / 1e9;
      t.dnCpu = dataNodeCpu() - dn0;
      t.stdout = buf.toString(StandardCharsets.UTF_8);
      Files.writeString(log, t.stdout);
      FileSystem used = FileSystem.get(URI.create(conf.get("fs.defaultFS")), conf);
      if (used instanceof RdmaDistributedFileSystem r) {
        t.rdmaRead = r.rdmaBytesRead() + r.localBytesRead(); // over our transports or our short-circuit reader
        t.rdmaWritten = r.rdmaBytesWritten();
      }
      FileSystem.closeAll();
    }
    if (rc != 0) {
      throw new IOException(tool.getClass().getSimpleName() + " " + String.join(" ", args) + " exited with " + rc
          + " (output in " + log + "):\n" + tail(t.stdout, 20));
    }
    return t;
  }

  /** The DataNodes' CPU seconds so far; NaN when they do not run on this machine (--cluster). */
  private double dataNodeCpu() throws IOException {
    if (dataNodesInProcess) {
      return 0;
    }
    return dataNodePids.isEmpty() ? Double.NaN : ProcStat.cpuSeconds(dataNodePids);
  }

  /** The last {@code n} lines of {@code s}. */
  static String tail(String s, int n) {
    String[] l = s.split("\n");
    return String.join("\n", java.util.Arrays.asList(l).subList(Math.max(0, l.length - n), l.length));
  }
}
