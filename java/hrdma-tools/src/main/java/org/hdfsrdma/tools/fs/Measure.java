package org.hdfsrdma.tools.fs;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32C;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.hdfsrdma.client.RdmaDistributedFileSystem;

/**
 * Times one write or read through a client and takes, around it, this JVM's CPU time,
 * the DataNodes' CPU time and the client's transport counters. The data is generated
 * (a random 1 MiB pattern with the chunk number stamped in), never held twice: the
 * CRC32C of the stream is computed while writing and again while reading.
 * Not thread-safe.
 */
public final class Measure {
  static final int CHUNK = 1 << 20;
  static final int IO_BUFFER = 1 << 16;

  private final List<Long> dataNodePids;
  private final byte[] pattern = new byte[CHUNK];
  private final byte[] readBuf = new byte[CHUNK];
  private final com.sun.management.OperatingSystemMXBean os =
      (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

  public Measure(List<Long> dataNodePids) {
    this.dataNodePids = List.copyOf(dataNodePids);
    new Random(0x5eedL).nextBytes(pattern);
  }

  /** Writes {@code size} bytes to {@code p} through {@code fs} (overwriting). */
  public Sample write(String client, FileSystem fs, Path p, long size, int replication) throws IOException {
    Counters before = Counters.of(fs);
    CRC32C crc = new CRC32C();
    double dn0 = dataNodeCpu();
    long cpu0 = os.getProcessCpuTime();
    long t0 = System.nanoTime();
    try (FSDataOutputStream out = fs.create(p, true, IO_BUFFER, (short) replication, fs.getDefaultBlockSize(p))) {
      long chunkNo = 0;
      for (long off = 0; off < size; off += CHUNK, chunkNo++) {
        int n = (int) Math.min(CHUNK, size - off);
        ByteBuffer.wrap(pattern).putLong(0, chunkNo);
        out.write(pattern, 0, n);
        crc.update(pattern, 0, n);
      }
    }
    long nanos = System.nanoTime() - t0;
    long cpu1 = os.getProcessCpuTime();
    double dn1 = dataNodeCpu();
    Counters after = Counters.of(fs);
    long[] split = after.writtenSince(before, size);
    return new Sample(client, "write", p.toString(), client, replication, size, nanos, (cpu1 - cpu0) / 1e9, dn1 - dn0,
        split[0], split[1], after.fallbacks - before.fallbacks, crc.getValue());
  }

  /** Reads {@code p} through {@code fs} to the end. */
  public Sample read(String client, FileSystem fs, Path p, String writtenBy, int replication) throws IOException {
    return read(client, fs, p, writtenBy, replication, "read");
  }

  /** Reads {@code p} through {@code fs} to the end; the sample's op is {@code op} (which case of read). */
  public Sample read(String client, FileSystem fs, Path p, String writtenBy, int replication, String op)
      throws IOException {
    Counters before = Counters.of(fs);
    CRC32C crc = new CRC32C();
    double dn0 = dataNodeCpu();
    long cpu0 = os.getProcessCpuTime();
    long t0 = System.nanoTime();
    long total = 0;
    try (FSDataInputStream in = fs.open(p, IO_BUFFER)) {
      int n;
      while ((n = in.read(readBuf, 0, readBuf.length)) > 0) {
        crc.update(readBuf, 0, n);
        total += n;
      }
    }
    long nanos = System.nanoTime() - t0;
    long cpu1 = os.getProcessCpuTime();
    double dn1 = dataNodeCpu();
    Counters after = Counters.of(fs);
    long[] split = after.readSince(before, total);
    return new Sample(client, op, p.toString(), writtenBy, replication, total, nanos, (cpu1 - cpu0) / 1e9,
        dn1 - dn0, split[0], split[1], after.fallbacks - before.fallbacks, crc.getValue());
  }

  /** Reads {@code p} once, untimed: the DataNodes' page cache holds it afterwards. */
  public void warm(FileSystem fs, Path p) throws IOException {
    try (FSDataInputStream in = fs.open(p, IO_BUFFER)) {
      while (in.read(readBuf, 0, readBuf.length) > 0) {
        // discard
      }
    }
  }

  private double dataNodeCpu() throws IOException {
    return ProcStat.cpuSeconds(dataNodePids);
  }

  /**
   * The transport counters of a client. The stock DistributedFileSystem has one path
   * only (the stock one). Our client's write counters are looked up by name: a
   * client without them whose class declares no create() writes the stock way by
   * construction; one that declares create() but no counter is reported as unknown (-1).
   */
  static final class Counters {
    final boolean ours;
    final long rdmaRead;
    final long stockRead;
    final long rdmaWritten;
    final long fallbacks;

    private Counters(boolean ours, long rdmaRead, long stockRead, long rdmaWritten, long fallbacks) {
      this.ours = ours;
      this.rdmaRead = rdmaRead;
      this.stockRead = stockRead;
      this.rdmaWritten = rdmaWritten;
      this.fallbacks = fallbacks;
    }

    static Counters of(FileSystem fs) {
      if (!(fs instanceof RdmaDistributedFileSystem r)) {
        return new Counters(false, 0, 0, 0, 0);
      }
      // reads: over our transports or by our short-circuit reader (on by default)
      return new Counters(true, r.rdmaBytesRead() + r.localBytesRead(), r.stockBytesRead(), r.rdmaBytesWritten(),
          r.stockFallbacks() + r.stockWriteFallbacks() + r.protectionFallbacks());
    }

    /** {ours, stock} bytes of a read of {@code total} bytes. */
    long[] readSince(Counters b, long total) {
      if (!ours) {
        return new long[] {0, total};
      }
      return new long[] {rdmaRead - b.rdmaRead, stockRead - b.stockRead};
    }

    /** {ours, stock} bytes of a write of {@code total} bytes (what did not go over ours went stock). */
    long[] writtenSince(Counters b, long total) {
      if (!ours) {
        return new long[] {0, total};
      }
      long o = rdmaWritten - b.rdmaWritten;
      return new long[] {o, total - o};
    }
  }
}
