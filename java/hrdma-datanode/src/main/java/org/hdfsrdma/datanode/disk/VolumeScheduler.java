package org.hdfsrdma.datanode.disk;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The scheduler of one DataNode volume: callers (the plugin's connection
 * handlers) queue disk operations with {@link #call}; the volume's own I/O
 * workers ({@link Policy#maxDepth()} threads) run them in the order and at
 * the depth the {@link Policy} decides ({@link SchedulerCore}). Every volume
 * has its own workers, so a slow disk holds up only its own callers.
 *
 * <p>Backpressure: when the queue is full, {@link #call} waits (at most
 * {@code queueTimeoutNanos}) for room; the caller's connection stops being
 * served meanwhile and the transport's credits push back to the sender.
 *
 * <p>Thread-safe. The action runs on a worker thread and must not block on
 * anything but the disk.
 */
public final class VolumeScheduler implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(VolumeScheduler.class);

  /** A disk operation run by a worker. */
  @FunctionalInterface
  public interface IoAction<T> {
    T run() throws IOException;
  }

  private final String name;
  private final SchedulerCore core;
  private final Policy policy;
  private final VolumeStats stats;
  private final long queueTimeoutNanos;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition work = lock.newCondition();
  private final Condition space = lock.newCondition();
  private final List<Thread> workers = new ArrayList<>();
  private boolean closed; // guarded by lock

  /**
   * @param name for threads and logs (the volume's storage id or directory)
   * @param queueTimeoutNanos how long a caller waits for room in a full queue
   */
  public VolumeScheduler(String name, Policy policy, int maxQueued, int maxQueuedPerStream, long maxWaitNanos,
      long queueTimeoutNanos) {
    this.name = name;
    this.policy = policy;
    this.stats = new VolumeStats();
    this.core = new SchedulerCore(policy, maxQueued, maxQueuedPerStream, maxWaitNanos, stats);
    this.queueTimeoutNanos = queueTimeoutNanos;
    stats.setShape(policy.depth(), policy.requestBytes());
    if (!policy.inline()) {
      for (int i = 0; i < policy.maxDepth(); i++) {
        Thread t = new Thread(this::workerLoop, "hrdma-disk-" + name + "-" + i);
        t.setDaemon(true);
        workers.add(t);
        t.start();
      }
    }
  }

  public String name() {
    return name;
  }

  public Policy policy() {
    return policy;
  }

  public VolumeStats stats() {
    return stats;
  }

  /** The request size a producer that can choose (read-ahead) should use now. */
  public int requestBytes() {
    lock.lock();
    try {
      return policy.requestBytes();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Runs {@code action} (a read or write of {@code length} bytes at
   * {@code offset} of the stream's file) on this volume's device when its
   * turn comes, and returns its result. Waits for room when the queue is full.
   *
   * @throws IOException what the action threw, or the queue stayed full, or the scheduler is closed
   */
  public <T> T call(Object stream, boolean write, long offset, int length, IoAction<T> action) throws IOException {
    if (policy.inline()) {
      return inline(new DiskRequest(stream, write, offset, length), action);
    }
    CompletableFuture<T> f = submit(stream, write, offset, length, action);
    try {
      return await(f);
    } catch (InterruptedIOException e) {
      // the action writes into the caller's memory (a packet, perhaps in a shared-memory segment
      // that is unmapped once the packet is given back): it must have ended when the caller goes
      // on. It ends: it runs, or the scheduler's close fails it
      try {
        f.join();
      } catch (RuntimeException ended) {
        // failed or withdrawn: either way, no longer running
      }
      throw e;
    }
  }

  /**
   * As {@link #call}, but when the volume is idle (nothing queued, nothing in flight) the
   * action runs here, on the caller's thread, counted by the scheduler as a dispatched
   * request: no hand-off to a worker and back for a stream that has the volume to itself
   * (a write's packets, one at a time). When the volume is busy it is queued as by
   * {@link #call}. Only for callers that may wait on the disk (never a transport I/O thread).
   * An interrupt of the caller pending when the action starts is held until it ends (a
   * FileChannel would close on it mid-write) and then restored; one that lands while the action
   * runs reaches it as it would any code on that thread, so an owner stops such a thread
   * without interrupting it first (the DataNode's {@code VolumeExecutors#shutdown}).
   */
  public <T> T callHere(Object stream, boolean write, long offset, int length, IoAction<T> action)
      throws IOException {
    if (policy.inline()) {
      return call(stream, write, offset, length, action);
    }
    DiskRequest r = new DiskRequest(stream, write, offset, length);
    boolean here;
    lock.lock();
    try {
      if (closed) {
        throw new IOException("volume " + name + ": disk scheduler closed");
      }
      // callers waiting for room in the queue go first
      here = !lock.hasWaiters(space) && core.dispatchHere(r, System.nanoTime());
    } finally {
      lock.unlock();
    }
    if (!here) {
      return call(stream, write, offset, length, action);
    }
    boolean ok = false;
    boolean interrupted = Thread.interrupted();
    try {
      T v = action.run();
      ok = true;
      return v;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
      lock.lock();
      try {
        core.complete(r, ok ? r.length : 0, System.nanoTime());
        if (core.queued() > 0) {
          work.signal(); // others queued while this ran: a worker takes them now
        }
        space.signalAll();
      } finally {
        lock.unlock();
      }
    }
  }

  /**
   * Queues {@code action} as {@link #call} does, without waiting for it: the
   * future completes when it has run (read-ahead). Waits for room when the
   * queue is full. With the inline policy it runs here and now.
   */
  public <T> CompletableFuture<T> submit(Object stream, boolean write, long offset, int length, IoAction<T> action)
      throws IOException {
    DiskRequest r = new DiskRequest(stream, write, offset, length);
    if (policy.inline()) {
      try {
        return CompletableFuture.completedFuture(inline(r, action));
      } catch (IOException | RuntimeException e) {
        return CompletableFuture.failedFuture(e);
      }
    }
    Task<T> task = new Task<>(action);
    r.attachment = task;
    lock.lock();
    try {
      long left = queueTimeoutNanos;
      while (!enqueue(r)) {
        if (left <= 0) {
          throw new IOException("volume " + name + ": disk queue full for "
              + TimeUnit.NANOSECONDS.toMillis(queueTimeoutNanos) + " ms (" + core.queued() + " queued)");
        }
        left = space.awaitNanos(left);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted waiting for room in the disk queue of " + name);
    } finally {
      lock.unlock();
    }
    return task.result;
  }

  /**
   * Queues {@code action} as {@link #submit} does if the queue has room now, and never
   * waits (an I/O worker may call it: a read-ahead refilled from a completion). Null
   * when the queue is full or callers wait for room in it (they go first); with the
   * inline policy, always null (nothing is queued).
   *
   * @throws IOException the scheduler is closed
   */
  public <T> CompletableFuture<T> trySubmit(Object stream, boolean write, long offset, int length,
      IoAction<T> action) throws IOException {
    if (policy.inline()) {
      return null;
    }
    DiskRequest r = new DiskRequest(stream, write, offset, length);
    Task<T> task = new Task<>(action);
    r.attachment = task;
    lock.lock();
    try {
      if (lock.hasWaiters(space)) {
        return null; // callers wait for room: they go first
      }
      return enqueue(r) ? task.result : null;
    } finally {
      lock.unlock();
    }
  }

  /** With the lock held: queues {@code r} and wakes a worker; false when the queue is full. */
  private boolean enqueue(DiskRequest r) throws IOException {
    if (closed) {
      throw new IOException("volume " + name + ": disk scheduler closed");
    }
    if (!core.offer(r, System.nanoTime())) {
      return false;
    }
    work.signal();
    return true;
  }

  /** The result of a {@link #submit}ted request, its failure as the action threw it. */
  public <T> T await(CompletableFuture<T> f) throws IOException {
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted waiting for a disk request on " + name);
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      if (c instanceof IOException io) {
        throw io;
      }
      if (c instanceof RuntimeException re) {
        throw re;
      }
      throw new IOException("disk request on " + name + " failed", c);
    }
  }

  private <T> T inline(DiskRequest r, IoAction<T> action) throws IOException {
    long start = System.nanoTime();
    boolean ok = false;
    try {
      T v = action.run();
      ok = true;
      return v;
    } finally {
      long end = System.nanoTime();
      lock.lock();
      try {
        core.noteRun(r.stream, r.offset, r.length);
        stats.dispatched(0, 1, start);
        stats.completed(r.write, ok ? r.length : 0, end - start, end - start, 0, end);
      } finally {
        lock.unlock();
      }
    }
  }

  /** The stream sends nothing more: its state goes and no policy waits for it. */
  public void close(Object stream) {
    lock.lock();
    try {
      core.close(stream);
      work.signalAll();
    } finally {
      lock.unlock();
    }
  }

  private void workerLoop() {
    while (true) {
      DiskRequest r;
      lock.lock();
      try {
        while (true) {
          if (closed) {
            return;
          }
          long now = System.nanoTime();
          r = core.poll(now);
          if (r != null) {
            space.signalAll(); // a dispatch frees room in the queue too
            if (core.queued() > 0 && core.inFlight() < policy.depth()) {
              work.signal(); // more can go now: one more worker (it passes the signal on in turn)
            }
            break;
          }
          long wake = core.wakeNanos();
          if (wake == Long.MAX_VALUE) {
            work.await();
          } else {
            work.awaitNanos(wake - now);
          }
        }
      } catch (InterruptedException e) {
        return; // close()
      } finally {
        lock.unlock();
      }
      Task<?> task = (Task<?>) r.attachment;
      boolean ok = task.run();
      lock.lock();
      try {
        core.complete(r, ok ? r.length : 0, System.nanoTime());
        // the slot it freed is this worker's own next poll; waking every idle worker on each
        // completion costs a context switch each for nothing. A policy whose depth grew is
        // served by the chain of signals at dispatch; one whose choice changed with the
        // completion (a lingering stream) by this worker's poll.
        space.signalAll();
      } finally {
        lock.unlock();
      }
      task.publish();
    }
  }

  /** Stops the workers; queued requests and waiting callers fail. Idempotent. */
  @Override
  public void close() {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      work.signalAll();
      space.signalAll();
    } finally {
      lock.unlock();
    }
    for (Thread t : workers) {
      t.interrupt();
    }
    for (Thread t : workers) {
      try {
        t.join(TimeUnit.SECONDS.toMillis(10));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      if (t.isAlive()) {
        LOG.warn("hrdma disk: worker {} of volume {} did not end", t.getName(), name);
      }
    }
    failQueued();
  }

  private void failQueued() {
    List<Task<?>> left = new ArrayList<>();
    lock.lock();
    try {
      DiskRequest r;
      while ((r = core.drainOne()) != null) {
        left.add((Task<?>) r.attachment);
      }
    } finally {
      lock.unlock();
    }
    for (Task<?> t : left) {
      t.result.completeExceptionally(new IOException("volume " + name + ": disk scheduler closed"));
    }
  }

  @Override
  public String toString() {
    return "VolumeScheduler[" + name + ", " + policy.name() + "]";
  }

  /** A caller's action and its result. */
  private static final class Task<T> {
    final IoAction<T> action;
    final CompletableFuture<T> result = new CompletableFuture<>();
    private T value;
    private Throwable failure;

    Task(IoAction<T> action) {
      this.action = action;
    }

    boolean run() {
      try {
        value = action.run();
        return true;
      } catch (IOException | RuntimeException | Error e) {
        failure = e;
        return false;
      }
    }

    /** Completes the caller's future after the scheduler has counted the completion. */
    void publish() {
      if (failure == null) {
        result.complete(value);
      } else {
        result.completeExceptionally(failure);
      }
    }
  }
}
