package org.hdfsrdma.client;

import java.io.IOException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A piece of checksum work done once, by whichever thread starts it first:
 * the client's verifier (it is a {@link Runnable} handed to it) or the reader,
 * which verifies it itself when it gets there first, or takes it back
 * ({@link #withdraw()}) when it no longer needs it. The reader then waits for
 * a started one ({@link #await()}, bounded: one piece's work) and gets its
 * failure ({@link #rethrow()}), again on every later call. Used by the
 * short-circuit readers' windows ({@link LocalBlockReader}) and the zero-copy
 * reads' windows ({@link MappedReplica}).
 */
abstract class VerifyOnce implements Runnable {
  private static final int NEW = 0;
  private static final int RUNNING = 1;
  private static final int DONE = 2;
  private static final int WITHDRAWN = 3;

  private final AtomicInteger state = new AtomicInteger();
  private Throwable failure; // written before state turns DONE
  private Thread verifiedBy;

  /** The work: verifies, throws what it found. Runs on any thread. */
  protected abstract void check() throws IOException;

  @Override
  public final void run() {
    verify();
  }

  /** Does the work unless someone started it already or it was withdrawn; true if this call did. */
  final boolean verify() {
    if (!state.compareAndSet(NEW, RUNNING)) {
      return false;
    }
    Throwable f = null;
    try {
      check();
    } catch (Throwable t) {
      f = t;
    }
    failure = f;
    verifiedBy = Thread.currentThread();
    synchronized (this) {
      state.set(DONE);
      notifyAll();
    }
    return true;
  }

  /** Takes the work back if nobody started it; true then. */
  final boolean withdraw() {
    return state.compareAndSet(NEW, WITHDRAWN);
  }

  /** Waits until started work is done (bounded: one piece's work); returns at once otherwise. */
  final void await() {
    if (state.get() != RUNNING) {
      return;
    }
    boolean interrupted = false;
    synchronized (this) {
      while (state.get() == RUNNING) {
        try {
          wait();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /** Throws what the work found, if anything (call after {@link #await()}). */
  final void rethrow() throws IOException {
    Throwable f = failure;
    if (f == null) {
      return;
    }
    if (f instanceof IOException e) {
      throw e;
    }
    if (f instanceof RuntimeException e) {
      throw e;
    }
    if (f instanceof Error e) {
      throw e;
    }
    throw new IOException(f);
  }

  /** Waits until someone has done the work (tests: it must be run by someone). */
  final void awaitVerified() throws InterruptedException {
    synchronized (this) {
      while (state.get() != DONE) {
        wait();
      }
    }
  }

  /** Whether a thread is doing the work right now. */
  final boolean isRunning() {
    return state.get() == RUNNING;
  }

  /** Whether the work is done. */
  final boolean isVerified() {
    return state.get() == DONE;
  }

  /** The thread that did the work (tests); null until done. */
  final Thread verifiedBy() {
    return state.get() == DONE ? verifiedBy : null;
  }
}
