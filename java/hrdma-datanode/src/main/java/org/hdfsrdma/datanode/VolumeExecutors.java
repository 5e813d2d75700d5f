package org.hdfsrdma.datanode;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One read executor per volume: a block read runs on the threads of the volume that holds
 * its replica, so a slow or hung volume holds up only its own reads, never another volume's
 * (stock gives each DataXceiver its own thread, with the same effect). Each has
 * {@code threads} daemon threads, made on demand and gone when idle, and a bounded queue (a
 * full one refuses the read with an error). Thread-safe.
 */
final class VolumeExecutors implements AutoCloseable {
  private final int threads;
  private final String prefix;
  private final ConcurrentHashMap<String, ThreadPoolExecutor> byVolume = new ConcurrentHashMap<>();
  private volatile boolean closed;

  VolumeExecutors(int threads, String prefix) {
    this.threads = threads;
    this.prefix = prefix;
  }

  /** The executor of volume {@code storageId}, made on first use; refuses work once closed. */
  ExecutorService of(String storageId) {
    if (closed) {
      throw new RejectedExecutionException("the plugin is stopping");
    }
    ThreadPoolExecutor e = byVolume.computeIfAbsent(storageId, id -> {
      AtomicInteger n = new AtomicInteger();
      ThreadPoolExecutor x = new ThreadPoolExecutor(threads, threads, 30, TimeUnit.SECONDS,
          new ArrayBlockingQueue<>(1024), r -> {
            Thread t = new Thread(r, prefix + id + "-" + n.incrementAndGet());
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

  /** Volumes with an executor so far (tests). */
  int volumes() {
    return byVolume.size();
  }

  /** Stops every volume's threads and waits up to {@code timeoutMs} in all for them. */
  void shutdown(long timeoutMs) throws InterruptedException {
    closed = true;
    for (ThreadPoolExecutor e : byVolume.values()) {
      e.shutdownNow();
    }
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    for (ThreadPoolExecutor e : byVolume.values()) {
      e.awaitTermination(Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS);
    }
  }

  @Override
  public void close() {
    closed = true;
    for (ThreadPoolExecutor e : byVolume.values()) {
      e.shutdownNow();
    }
  }
}
