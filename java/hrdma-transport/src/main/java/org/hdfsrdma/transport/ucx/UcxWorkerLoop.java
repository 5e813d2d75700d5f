package org.hdfsrdma.transport.ucx;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import org.hdfsrdma.nativelib.Jni;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.nativelib.WorkerCallbacks;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The I/O thread of a UCX transport: it owns one UCX worker, progresses it,
 * runs tasks submitted from other threads, and dispatches the worker's
 * upcalls. Like a Netty event loop: work for an endpoint runs on this thread;
 * other threads queue tasks and wake it with {@code ucp_worker_signal}.
 *
 * <p>Completions and endpoint errors reported by UCX callbacks are queued and
 * run after {@code ucp_worker_progress} returns: code that reacts to a
 * completion usually posts the next operation, and a send posted from inside
 * UCX's progress can overtake older sends still in UCX's pending queue (seen
 * with UCP streams over tcp in UCX 1.13: a frame header passed the previous
 * payload).
 *
 * <p>Idle policy: busy-poll {@code spinCount} rounds (latency), then sleep on
 * the worker's event fd (CPU).
 */
final class UcxWorkerLoop implements WorkerCallbacks, Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(UcxWorkerLoop.class);

  /** A native operation's completion, run on the loop thread. */
  interface Completion {
    void done(int status, long length);
  }

  /** Receives the upcalls for one endpoint. */
  interface EndpointSink {
    /** See {@link WorkerCallbacks#onAm}; the receive's completion is {@link #track}ed. */
    int onAm(int amId, long length, int pageOffset, long[] out);

    void onError(int status);
  }

  /** Receives connection requests for one listener. */
  interface ListenerSink {
    void onConnRequest(long request, String peer);
  }

  final long worker;
  private final Thread thread;
  private final int spinCount;
  private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
  private final java.util.ArrayDeque<Runnable> deferred = new java.util.ArrayDeque<>(); // loop only
  private volatile boolean sleeping;
  private volatile boolean running = true;
  private final Object signalLock = new Object();
  private boolean destroyed; // under signalLock
  private final Map<Long, EndpointSink> endpoints = new HashMap<>();
  private final Map<Long, ListenerSink> listeners = new HashMap<>();
  private final Map<Long, Completion> ops = new HashMap<>();
  private long nextToken = 1;
  private long nextCookie = 1;

  UcxWorkerLoop(long ctx, String name, int spinCount) throws NativeException {
    this.worker = Jni.workerCreate0(ctx, this);
    this.spinCount = spinCount;
    this.thread = new Thread(this, name);
    thread.setDaemon(true);
    thread.start();
  }

  boolean inLoop() {
    return Thread.currentThread() == thread;
  }

  /**
   * Queues {@code task} for the loop thread. A task is either run, at the latest by
   * {@link #shutdown} before the worker goes, or refused with {@link RejectedExecutionException}
   * (the caller fails what it stands for): queued first, then {@code running} read, against
   * shutdown's write of {@code running} then its last poll of the queue, so no task is accepted
   * and dropped.
   */
  void execute(Runnable task) {
    tasks.add(task);
    if (!running) {
      if (tasks.remove(task)) {
        throw new RejectedExecutionException("ucx worker loop stopped");
      }
      return; // taken by the stopping loop or by shutdown, which run it
    }
    if (sleeping) {
      signal();
    }
  }

  /** Wakes the loop; never after the worker is destroyed (a caller may still be here then). */
  private void signal() {
    synchronized (signalLock) {
      if (!destroyed) {
        Jni.workerSignal0(worker);
      }
    }
  }

  long newToken() {
    return nextToken++;
  }

  void register(long token, EndpointSink sink) {
    endpoints.put(token, sink);
  }

  void unregister(long token) {
    endpoints.remove(token);
  }

  void registerListener(long token, ListenerSink sink) {
    listeners.put(token, sink);
  }

  void unregisterListener(long token) {
    listeners.remove(token);
  }

  int endpointCount() {
    return endpoints.size();
  }

  /** A cookie for an operation whose completion is {@code c}; call {@link #track} if in progress. */
  long newCookie() {
    return nextCookie++;
  }

  void track(long cookie, Completion c) {
    ops.put(cookie, c);
  }

  @Override
  public void run() {
    int idle = 0;
    while (running) {
      boolean worked = runTasks() | runDeferred();
      int n = Jni.workerProgress0(worker);
      worked |= runDeferred();
      if (n > 0 || worked) {
        idle = 0;
        continue;
      }
      if (++idle < spinCount) {
        Thread.onSpinWait();
        continue;
      }
      sleeping = true;
      if (tasks.isEmpty() && running) {
        Jni.workerWait0(worker, 100);
      }
      sleeping = false;
      idle = 0;
    }
    runTasks();
    runDeferred();
  }

  private boolean runDeferred() {
    boolean any = false;
    Runnable r;
    while ((r = deferred.pollFirst()) != null) {
      any = true;
      try {
        r.run();
      } catch (Throwable t) {
        LOG.error("ucx completion failed: {}", t.toString(), t);
      }
    }
    return any;
  }

  private boolean runTasks() {
    boolean any = false;
    Runnable r;
    while ((r = tasks.poll()) != null) {
      any = true;
      try {
        r.run();
      } catch (Throwable t) {
        LOG.error("ucx loop task failed: {}", t.toString(), t);
      }
    }
    return any;
  }

  /**
   * Runs {@code step} on the loop until it returns true or {@code timeoutMs}
   * passes, progressing the worker (used by shutdown).
   */
  boolean drain(java.util.function.BooleanSupplier step, long timeoutMs) {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
    while (!step.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      runTasks();
      runDeferred();
      Jni.workerProgress0(worker);
      runDeferred();
    }
    return true;
  }

  /** Stops the thread (call from another thread), then destroys the worker. */
  void shutdown() throws InterruptedException {
    running = false;
    signal();
    thread.join(10_000);
    if (thread.isAlive()) {
      LOG.warn("ucx I/O thread {} did not stop within 10 s", thread.getName());
    } else {
      runTasks(); // queued by callers that saw the loop running after its own last poll
    }
    runDeferred();
    List<Completion> left = new ArrayList<>(ops.values());
    ops.clear();
    for (Completion c : left) {
      c.done(NativeException.ERR_CLOSED, 0);
    }
    int st;
    synchronized (signalLock) {
      destroyed = true;
      st = Jni.workerDestroy0(worker);
    }
    if (st < 0) {
      LOG.warn("ucx worker destroy: {}", Jni.statusString0(st));
    }
  }

  // ---------------------------------------------------------------- upcalls

  @Override
  public void onConnRequest(long listenerToken, long request, String peer) {
    ListenerSink l = listeners.get(listenerToken);
    if (l == null) {
      Jni.connReject0(worker, listenerToken, request);
      return;
    }
    l.onConnRequest(request, peer);
  }

  @Override
  public int onAm(long epToken, int amId, long length, int pageOffset, long[] out) {
    EndpointSink e = endpoints.get(epToken);
    if (e == null) {
      return NativeException.ERR_CLOSED;
    }
    try {
      return e.onAm(amId, length, pageOffset, out);
    } catch (RuntimeException ex) {
      LOG.error("ucx receive failed: {}", ex.toString(), ex);
      return NativeException.ERR_IO;
    }
  }

  @Override
  public void onRecvDone(long epToken, long cookie, int status, long length) {
    onOpDone(epToken, cookie, status, length);
  }

  @Override
  public void onOpDone(long epToken, long cookie, int status, long length) {
    Completion c = ops.remove(cookie);
    if (c != null) {
      deferred.addLast(() -> c.done(status, length));
    }
  }

  @Override
  public void onEpError(long epToken, int status) {
    EndpointSink e = endpoints.get(epToken);
    if (e != null) {
      deferred.addLast(() -> e.onError(status));
    }
  }
}
