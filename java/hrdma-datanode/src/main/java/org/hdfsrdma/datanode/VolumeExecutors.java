package org.hdfsrdma.datanode;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One read executor and one write executor per volume: a block read runs on the threads of
 * the volume that holds its replica, and a block write's packets on the threads of the volume
 * its replica was created on, so a slow or hung volume holds up only its own reads and writes,
 * never another volume's (stock gives each DataXceiver its own thread, with the same effect).
 * The opens of a short-circuit request run on the read executor of its replica's volume too
 * ({@link ShortCircuitServer}).
 * Each has its own number of daemon threads, made on demand and gone when idle, and a bounded
 * queue (a full one refuses the operation with an error). Thread-safe.
 */
final class VolumeExecutors implements AutoCloseable {
  private final int readThreads;
  private final int writeThreads;
  private final String prefix;
  private final ConcurrentHashMap<String, ThreadPoolExecutor> reads = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, ThreadPoolExecutor> writes = new ConcurrentHashMap<>();
  private volatile boolean closed;

  /** Threads are named "hrdma-dn-read-" or "hrdma-dn-write-" + {@code port} + "-" + volume + "-" + n. */
  VolumeExecutors(int readThreads, int writeThreads, int port) {
    this.readThreads = readThreads;
    this.writeThreads = writeThreads;
    this.prefix = "-" + port + "-";
  }

  /** The read executor of volume {@code storageId}, made on first use; refuses work once closed. */
  ExecutorService of(String storageId) {
    return get(reads, readThreads, "hrdma-dn-read", storageId);
  }

  /** The write executor of volume {@code storageId}, made on first use; refuses work once closed. */
  ExecutorService writesOf(String storageId) {
    return get(writes, writeThreads, "hrdma-dn-write", storageId);
  }

  private ExecutorService get(ConcurrentHashMap<String, ThreadPoolExecutor> byVolume, int threads, String kind,
      String storageId) {
    if (closed) {
      throw new RejectedExecutionException("the plugin is stopping");
    }
    ThreadPoolExecutor e = byVolume.computeIfAbsent(storageId, id -> {
      AtomicInteger n = new AtomicInteger();
      ThreadPoolExecutor x = new ThreadPoolExecutor(threads, threads, 30, TimeUnit.SECONDS,
          new ArrayBlockingQueue<>(1024), r -> {
            Thread t = new Thread(r, kind + prefix + id + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
          });
      x.allowCoreThreadTimeOut(true);
      return x;
    });
    if (closed) { // closed while this one was made
      e.shutdownNow();
    }
    return e;
  }

  /** Volumes with a read executor so far (tests). */
  int volumes() {
    return reads.size();
  }

  /** Volumes with a write executor so far (tests). */
  int writeVolumes() {
    return writes.size();
  }

  private List<ThreadPoolExecutor> all() {
    List<ThreadPoolExecutor> l = new ArrayList<>(reads.values());
    l.addAll(writes.values());
    return l;
  }

  /**
   * Stops every volume's threads and waits up to {@code timeoutMs} in all for them: first
   * without interrupting them, for half of that (a write's packet runs its disk write on its
   * executor's thread, and an interrupt there would close the replica's FileChannel mid-packet;
   * the writes, their connections closed, end at their next packet), then interrupting those
   * still running.
   */
  void shutdown(long timeoutMs) throws InterruptedException {
    closed = true;
    List<ThreadPoolExecutor> all = all();
    for (ThreadPoolExecutor e : all) {
      e.shutdown();
    }
    long start = System.nanoTime();
    long end = start + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    long gentle = start + TimeUnit.MILLISECONDS.toNanos(timeoutMs / 2);
    for (ThreadPoolExecutor e : all) {
      e.awaitTermination(Math.max(0, gentle - System.nanoTime()), TimeUnit.NANOSECONDS);
    }
    for (ThreadPoolExecutor e : all) {
      e.shutdownNow();
    }
    for (ThreadPoolExecutor e : all) {
      e.awaitTermination(Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS);
    }
  }

  @Override
  public void close() {
    closed = true;
    for (ThreadPoolExecutor e : all()) {
      e.shutdownNow();
    }
  }
}
