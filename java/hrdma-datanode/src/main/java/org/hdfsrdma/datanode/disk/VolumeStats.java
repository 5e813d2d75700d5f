package org.hdfsrdma.datanode.disk;

import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.metrics2.util.Quantile;
import org.apache.hadoop.metrics2.util.SampleQuantiles;

/**
 * What one volume's scheduler has done, for metrics2/JMX, {@code hrdma
 * cluster status} and the tests. Written by the scheduler (under its lock)
 * and by the block-file code; read from any thread.
 */
public final class VolumeStats {
  private static final Quantile[] QUANTILES = {
    new Quantile(0.50, 0.050), new Quantile(0.90, 0.010), new Quantile(0.99, 0.001)};

  private final AtomicLong queued = new AtomicLong();
  private final AtomicLong inFlight = new AtomicLong();
  private final AtomicLong maxQueued = new AtomicLong();
  private final LongAdder requests = new LongAdder();
  private final LongAdder bytesRead = new LongAdder();
  private final LongAdder bytesWritten = new LongAdder();
  private final LongAdder busyNanos = new LongAdder();
  private final LongAdder runs = new LongAdder();
  private final LongAdder runBytes = new LongAdder();
  private final LongAdder finalizedBlocks = new LongAdder();
  private final LongAdder finalizedExtents = new LongAdder();
  private final AtomicLong maxExtents = new AtomicLong();
  private final LongAdder raises = new LongAdder();
  private final LongAdder lowers = new LongAdder();
  private final LongAdder starvationGuards = new LongAdder();
  private final LongAdder fallbacks = new LongAdder();
  private final LongAdder preallocated = new LongAdder();
  private final LongAdder trimmed = new LongAdder();
  private final LongAdder directBytes = new LongAdder();
  private final LongAdder directRequests = new LongAdder();
  private final LongAdder directPacketBytes = new LongAdder();
  private final LongAdder directWrittenBytes = new LongAdder();
  private final LongAdder directStagedBytes = new LongAdder();
  private final AtomicLong depth = new AtomicLong();
  private final AtomicLong requestBytes = new AtomicLong();
  private final SampleQuantiles latencyUs = new SampleQuantiles(QUANTILES);
  private long busySince = -1; // under the scheduler's lock

  void queued(int q, int f) {
    queued.set(q);
    inFlight.set(f);
    maxQueued.accumulateAndGet(q, Math::max);
  }

  void dispatched(int q, int f, long now) {
    queued.set(q);
    inFlight.set(f);
    if (f == 1 && busySince < 0) {
      busySince = now;
    }
  }

  void completed(boolean write, long bytes, long latencyNanos, long serviceNanos, int f, long now) {
    requests.increment();
    (write ? bytesWritten : bytesRead).add(bytes);
    inFlight.set(f);
    latencyUs.insert(latencyNanos / 1000);
    if (f == 0 && busySince >= 0) {
      busyNanos.add(now - busySince);
      busySince = -1;
    }
  }

  void run(long bytes) {
    runs.increment();
    runBytes.add(bytes);
  }

  void starvationGuard() {
    starvationGuards.increment();
  }

  void adapted(boolean raised, int newDepth, int newRequestBytes) {
    (raised ? raises : lowers).increment();
    setShape(newDepth, newRequestBytes);
  }

  void setShape(int d, int bytes) {
    depth.set(d);
    requestBytes.set(bytes);
  }

  /** A finalized block file had {@code extents} extents (FIEMAP). */
  public void finalizedBlock(int extents) {
    finalizedBlocks.increment();
    finalizedExtents.add(extents);
    maxExtents.accumulateAndGet(extents, Math::max);
  }

  /** fallocate or O_DIRECT was not supported and the plain path is used instead. */
  public void fallback() {
    fallbacks.increment();
  }

  public void preallocated() {
    preallocated.increment();
  }

  public void trimmed() {
    trimmed.increment();
  }

  /**
   * Direct (O_DIRECT, io_uring) reads: {@code requests} requests brought {@code bytes}, into
   * the packets sent as they are, or into a read-ahead window copied from.
   */
  void direct(int requests, long bytes, boolean intoPackets) {
    directRequests.add(requests);
    directBytes.add(bytes);
    if (intoPackets) {
      directPacketBytes.add(bytes);
    }
  }

  /**
   * {@code bytes} of block data went to the device with O_DIRECT writes; {@code staged}: copied
   * through an aligned buffer first (the data's address was not aligned), else written straight
   * from the buffer they came in.
   */
  void directWritten(long bytes, boolean staged) {
    directWrittenBytes.add(bytes);
    if (staged) {
      directStagedBytes.add(bytes);
    }
  }

  /** A consistent-enough copy of the counters. */
  public Snapshot snapshot() {
    Map<Quantile, Long> q = latencyUs.snapshot();
    long p50 = q == null ? 0 : q.get(QUANTILES[0]);
    long p90 = q == null ? 0 : q.get(QUANTILES[1]);
    long p99 = q == null ? 0 : q.get(QUANTILES[2]);
    long r = runs.sum();
    long fb = finalizedBlocks.sum();
    long busy = busyNanos.sum();
    long bytes = bytesRead.sum() + bytesWritten.sum();
    return new Snapshot(queued.get(), inFlight.get(), maxQueued.get(), requests.sum(), bytesRead.sum(),
        bytesWritten.sum(), busy == 0 ? 0 : bytes * 1e9 / busy, p50, p90, p99,
        r == 0 ? 0 : (double) runBytes.sum() / r, r, runBytes.sum(), fb, fb == 0 ? 0 : (double) finalizedExtents.sum() / fb,
        maxExtents.get(), raises.sum(), lowers.sum(), starvationGuards.sum(), fallbacks.sum(),
        preallocated.sum(), trimmed.sum(), (int) depth.get(), (int) requestBytes.get(), directRequests.sum(),
        directBytes.sum(), directPacketBytes.sum(), directWrittenBytes.sum(), directStagedBytes.sum());
  }

  /**
   * The counters at one moment. {@code busyBytesPerSec}: bytes moved per
   * second of time with at least one request in flight (the device's
   * throughput while it worked). Latencies: queue plus device, microseconds.
   * {@code directRequests}/{@code directBytes}: O_DIRECT io_uring reads under the read-ahead,
   * {@code directPacketBytes} of them straight into the packets (no copy);
   * {@code directWrittenBytes}: block data written with O_DIRECT, {@code directStagedBytes} of
   * them copied through an aligned staging buffer (the rest went straight from the received
   * packet, placed page-aligned by the transport).
   */
  public record Snapshot(long queued, long inFlight, long maxQueued, long requests, long bytesRead,
      long bytesWritten, double busyBytesPerSec, long latencyP50Us, long latencyP90Us, long latencyP99Us,
      double avgRunBytes, long runs, long runBytes, long finalizedBlocks, double avgExtentsPerBlock, long maxExtentsPerBlock,
      long depthRaises, long depthLowers, long starvationGuards, long fallbacks, long preallocated,
      long trimmed, int depth, int requestBytes, long directRequests, long directBytes, long directPacketBytes,
      long directWrittenBytes, long directStagedBytes) {}
}
