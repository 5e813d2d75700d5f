package org.hdfsrdma.bench;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.RemoteRegion;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.tools.PerfProtocol;

/**
 * The active side of one perf test over one new connection (see
 * {@link PerfProtocol}). {@link #run} is called from one thread; the handler
 * methods run on the transport's I/O thread.
 */
final class PerfClient implements EndpointHandler {
  /** Stands for "the endpoint closed" in the control queue. */
  private static final byte[] CLOSED = new byte[0];
  private static final long CONTROL_TIMEOUT_S = 30;
  private static final long RUN_TIMEOUT_S = 600;

  private final BlockingQueue<byte[]> control = new LinkedBlockingQueue<>();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private volatile LatLoop lat;

  /**
   * Opens one connection whose events go to the given handler: a transport's
   * own connect (same-process loopback) or a negotiated one (HrdmaConnector).
   */
  @FunctionalInterface
  interface Dialer {
    Endpoint connect(EndpointHandler handler) throws IOException, InterruptedException;
  }

  /** A transport's own connect, without negotiation (same-process loopback). */
  static Endpoint connect(Transport t, InetSocketAddress server, EndpointHandler handler)
      throws IOException, InterruptedException {
    try {
      return t.connect(server, handler).get(CONTROL_TIMEOUT_S, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw new IOException("connect to " + server + " over " + t.name() + " failed: "
          + e.getCause().getMessage(), e.getCause());
    } catch (TimeoutException e) {
      throw new IOException("connect to " + server + " over " + t.name() + " timed out");
    }
  }

  /** Runs {@code test} once over a new connection from {@code dialer}. */
  static Object run(Dialer dialer, String test, int size, long warmup, long iters, int window,
      String ucxTls) throws IOException, InterruptedException {
    PerfClient c = new PerfClient();
    Endpoint ep = dialer.connect(c);
    try {
      send(ep, new PerfProtocol.Setup(test, size, warmup, iters).encode()
          .getBytes(StandardCharsets.UTF_8));
      byte[] reply = c.awaitControl(CONTROL_TIMEOUT_S, "setup reply");
      if (reply[0] == PerfProtocol.ERROR) {
        throw new IOException("server refused " + test + ": "
            + new String(reply, 1, reply.length - 1, StandardCharsets.UTF_8));
      }
      return switch (test) {
        case "send_lat" -> new LatResult(test, ep.transport().name(), ucxTls, size,
            LatencyStats.of(c.latency(ep, size, warmup, iters)));
        case "send_bw" -> c.bandwidth(ep, test, size, warmup, iters, window, null, ucxTls);
        default -> c.bandwidth(ep, test, size, warmup, iters, window,
            RemoteRegion.fromBytes(Arrays.copyOfRange(reply, 1, reply.length)), ucxTls);
      };
    } finally {
      ep.close();
      try {
        ep.closeFuture().get(5, TimeUnit.SECONDS);
      } catch (ExecutionException | TimeoutException e) {
        // Closing is best effort: the result, or the failure, is already known.
      }
    }
  }

  private static void send(Endpoint ep, byte[] payload) throws IOException {
    RegisteredBuffer b = ep.transport().allocator().allocate(payload.length);
    b.nio().clear();
    b.nio().put(payload).flip();
    ep.send(b);
  }

  private byte[] awaitControl(long seconds, String what) throws IOException, InterruptedException {
    byte[] m = control.poll(seconds, TimeUnit.SECONDS);
    if (m == null) {
      throw new IOException("no " + what + " from the server in " + seconds + " s");
    }
    if (m == CLOSED || m.length == 0) {
      Throwable f = failure.get();
      throw new IOException("connection lost waiting for " + what
          + (f != null ? ": " + f.getMessage() : ""), f);
    }
    return m;
  }

  private void expect(byte code, long seconds, String what)
      throws IOException, InterruptedException {
    byte[] m = awaitControl(seconds, what);
    if (m[0] != code) {
      throw new IOException("expected " + what + " ('" + (char) code + "'), got '" + (char) m[0]
          + "'");
    }
  }

  // ---- latency: ping-pong, the next send from the I/O thread that saw the echo ----

  private double[] latency(Endpoint ep, int size, long warmup, long iters)
      throws IOException, InterruptedException {
    if (warmup + iters > 50_000_000L) {
      throw new IOException("send_lat: warmup + iters must stay below 50M");
    }
    LatLoop l = new LatLoop(ep, size, (int) (warmup + iters));
    lat = l;
    try {
      l.start();
      l.done.get(RUN_TIMEOUT_S, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw new IOException("send_lat failed: " + e.getCause().getMessage(), e.getCause());
    } catch (TimeoutException e) {
      throw new IOException("send_lat did not finish in " + RUN_TIMEOUT_S + " s");
    } finally {
      l.buf.release();
    }
    double[] us = new double[(int) iters];
    for (int i = 0; i < us.length; i++) {
      // One-way latency is half the round trip, as perftest and ucx_perftest report it.
      us[i] = l.rtt[(int) warmup + i] / 2000.0;
    }
    return us;
  }

  private static final class LatLoop {
    final Endpoint ep;
    final int size;
    final long[] rtt;
    final RegisteredBuffer buf;
    final CompletableFuture<Void> done = new CompletableFuture<>();
    int i;
    long sentAt;

    LatLoop(Endpoint ep, int size, int total) throws IOException {
      this.ep = ep;
      this.size = size;
      this.rtt = new long[total];
      this.buf = ep.transport().allocator().allocate(size);
    }

    void start() {
      sentAt = System.nanoTime();
      post();
    }

    /** Only after the echo arrived: the previous send of {@link #buf} is over. */
    void post() {
      buf.nio().clear().limit(size);
      buf.retain();
      ep.send(buf).whenComplete((v, e) -> {
        if (e != null) {
          done.completeExceptionally(e);
        }
      });
    }

    void onEcho(RegisteredBuffer m) {
      long now = System.nanoTime();
      m.release();
      rtt[i++] = now - sentAt;
      if (i == rtt.length) {
        done.complete(null);
        return;
      }
      sentAt = System.nanoTime();
      post();
    }
  }

  // ---- bandwidth: a window of outstanding sends, writes or reads ----

  private BwResult bandwidth(Endpoint ep, String test, int size, long warmup, long iters,
      int window, RemoteRegion region, String ucxTls) throws IOException, InterruptedException {
    BlockingQueue<RegisteredBuffer> free = new ArrayBlockingQueue<>(window);
    List<RegisteredBuffer> all = new ArrayList<>();
    try {
      for (int i = 0; i < window; i++) {
        RegisteredBuffer b = ep.transport().allocator().allocate(size);
        all.add(b);
        free.add(b);
      }
      long[] done = new long[(int) Math.min(iters, 50_000_000L)];
      AtomicInteger doneCount = new AtomicInteger();
      post(ep, test, size, warmup, region, free, null, null);
      if (test.equals("send_bw")) {
        if (warmup > 0) {
          expect(PerfProtocol.WARM, RUN_TIMEOUT_S, "warm-up acknowledgement");
        }
        drain(free, window, all); // the whole window starts the timed run
      } else {
        drain(free, window, all);
        await(ep.flush(), "flush");
      }
      long t0 = System.nanoTime();
      post(ep, test, size, iters, region, free, done, doneCount);
      if (test.equals("send_bw")) {
        expect(PerfProtocol.DONE, RUN_TIMEOUT_S, "completion acknowledgement");
      } else {
        drain(free, window, all);
        await(ep.flush(), "flush");
      }
      long t1 = System.nanoTime();
      drain(free, window, all);
      long[] times = Arrays.copyOf(done, Math.min(doneCount.get(), done.length));
      double ns = t1 - t0;
      return new BwResult(test, ep.transport().name(), ucxTls, size, iters,
          peakMBps(t0, times, window, size), iters * (double) size / ns * 1e3,
          iters / ns * 1e3);
    } finally {
      for (RegisteredBuffer b : all) {
        b.release();
      }
    }
  }

  /**
   * Keeps the window full: each buffer is re-posted from its own completion,
   * which runs on the transport's I/O thread (as perftest drives its loop),
   * so the posting thread never sits between two operations. Operations that
   * complete at once are re-posted in a loop, not by recursion.
   */
  private void post(Endpoint ep, String test, int size, long count, RemoteRegion region,
      BlockingQueue<RegisteredBuffer> free, long[] done, AtomicInteger doneCount)
      throws IOException, InterruptedException {
    java.util.concurrent.atomic.AtomicLong left = new java.util.concurrent.atomic.AtomicLong(count);
    List<RegisteredBuffer> window = new ArrayList<>();
    free.drainTo(window);
    for (RegisteredBuffer b : window) {
      cycle(ep, test, size, region, b, left, free, done, doneCount);
    }
    checkFailure();
  }

  private void cycle(Endpoint ep, String test, int size, RemoteRegion region, RegisteredBuffer b,
      java.util.concurrent.atomic.AtomicLong left, BlockingQueue<RegisteredBuffer> free,
      long[] done, AtomicInteger doneCount) {
    while (true) {
      if (left.getAndDecrement() <= 0 || failure.get() != null) {
        free.add(b);
        return;
      }
      b.nio().clear().limit(size);
      CompletableFuture<Void> f;
      switch (test) {
        case "send_bw" -> {
          // each operation takes one reference; the window keeps its own
          f = ep.send(b.retain());
        }
        case "write_bw" -> f = ep.write(b.retain(), region, 0);
        default -> f = ep.read(b.retain(), region, 0);
      }
      if (!f.isDone()) {
        f.whenComplete((v, e) -> {
          if (completed(e, done, doneCount)) {
            cycle(ep, test, size, region, b, left, free, done, doneCount);
          } else {
            free.add(b);
          }
        });
        return;
      }
      Throwable e = f.isCompletedExceptionally() ? f.handle((v, t) -> t).join() : null;
      if (!completed(e, done, doneCount)) {
        free.add(b);
        return;
      }
    }
  }

  private boolean completed(Throwable e, long[] done, AtomicInteger doneCount) {
    if (e != null) {
      fail(e);
      return false;
    }
    if (done != null) {
      int i = doneCount.getAndIncrement();
      if (i < done.length) {
        done[i] = System.nanoTime();
      }
    }
    return true;
  }

  /** Waits until every buffer of the window is back, i.e. every operation completed. */
  private void drain(BlockingQueue<RegisteredBuffer> free, int window, List<RegisteredBuffer> all)
      throws IOException, InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(RUN_TIMEOUT_S);
    while (free.size() < window) {
      checkFailure();
      if (System.nanoTime() > deadline) {
        throw new IOException("operations did not complete in " + RUN_TIMEOUT_S + " s");
      }
      Thread.sleep(0, 200_000);
    }
  }

  private void await(CompletableFuture<Void> f, String what) throws IOException {
    try {
      f.get(RUN_TIMEOUT_S, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw new IOException(what + " failed: " + e.getCause().getMessage(), e.getCause());
    } catch (TimeoutException | InterruptedException e) {
      throw new IOException(what + " did not complete", e);
    }
  }

  private void checkFailure() throws IOException {
    Throwable f = failure.get();
    if (f != null) {
      throw new IOException("operation failed: " + f.getMessage(), f);
    }
  }

  private void fail(Throwable e) {
    failure.compareAndSet(null, e);
    control.add(CLOSED);
  }

  /**
   * The best rate over any run of consecutive completions, counting from
   * {@code t0}. The first {@code window} completions are left out (they only
   * fill the pipe: a send completes when its bytes left the buffer, not when
   * they arrived), and a run is max(window, n / 10) completions long so that
   * socket buffering cannot pass for link speed. Falls back to the whole run
   * when it is too short.
   */
  static double peakMBps(long t0, long[] completions, int window, int size) {
    int n = completions.length;
    if (n == 0) {
      return Double.NaN;
    }
    long[] c = new long[n + 1];
    c[0] = t0;
    System.arraycopy(completions, 0, c, 1, n);
    Arrays.sort(c, 1, c.length);
    int skip = n > 2 * window ? window : 0;
    int k = Math.min(n - skip, Math.max(window, n / 10));
    double best = 0;
    for (int j = skip + k; j <= n; j++) {
      long dt = c[j] - c[j - k];
      if (dt > 0) {
        best = Math.max(best, k * (double) size / dt * 1e3);
      }
    }
    return best;
  }

  // ---- handler ----

  @Override
  public void onMessage(Endpoint ep, RegisteredBuffer message) {
    LatLoop l = lat;
    if (l != null) {
      l.onEcho(message);
      return;
    }
    try {
      byte[] b = PerfProtocol.bytes(message);
      control.add(b.length == 0 ? new byte[] {'?'} : b);
    } finally {
      message.release();
    }
  }

  @Override
  public void onClosed(Endpoint ep, Throwable cause) {
    if (cause != null) {
      failure.compareAndSet(null, cause);
    }
    LatLoop l = lat;
    if (l != null) {
      // No-op after a finished run; otherwise the loop can never finish.
      l.done.completeExceptionally(cause != null ? cause : new IOException("endpoint closed"));
    }
    control.add(CLOSED);
  }
}
