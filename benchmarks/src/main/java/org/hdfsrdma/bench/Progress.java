package org.hdfsrdma.bench;

import java.io.PrintStream;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * A status line for long runs: a bar, steps done of all, the phase, the time spent and
 * the ETA (the mean time of the steps done so far times the steps left). On a terminal
 * the line is redrawn in place every second; otherwise (a log, CI) a line is printed
 * when the phase changes and every 30 s. Thread-safe.
 */
public final class Progress implements AutoCloseable {
  private static final int BAR = 20;

  private final PrintStream out;
  private final boolean tty;
  private final int total;
  private final LongSupplier clock; // nanoseconds
  private final long t0;
  private final Thread ticker;
  private int done;
  private double stepSecondsSum;
  private long stepStart;
  private String phase = "starting";
  private long lastPrinted;
  private int lastWidth;
  private boolean closed;

  /** {@code total} steps; {@code tty}: redraw one line in place. */
  public Progress(PrintStream out, int total, boolean tty) {
    this(out, total, tty, System::nanoTime);
  }

  /** With the clock given (nanoseconds), for tests. */
  Progress(PrintStream out, int total, boolean tty, LongSupplier clock) {
    this.clock = clock;
    this.t0 = clock.getAsLong();
    this.stepStart = t0;
    this.out = out;
    this.tty = tty;
    this.total = Math.max(1, total);
    this.ticker = new Thread(this::tick, "hrdma-progress");
    this.ticker.setDaemon(true);
    this.ticker.start();
  }

  /** A new phase of the current step (e.g. "dfsio ours run 2/3: write"). */
  public synchronized void phase(String p) {
    phase = p;
    print(true);
  }

  /** One step finished. */
  public synchronized void stepDone() {
    long now = clock.getAsLong();
    stepSecondsSum += (now - stepStart) / 1e9;
    stepStart = now;
    done = Math.min(total, done + 1);
    print(true);
  }

  /** The time spent outside steps (a cluster start) does not count into the step mean. */
  public synchronized void restartStepClock() {
    stepStart = clock.getAsLong();
  }

  /** The status line as shown now. */
  public synchronized String line() {
    double elapsed = (clock.getAsLong() - t0) / 1e9;
    int filled = (int) Math.round(BAR * done / (double) total);
    String eta;
    if (done == 0) {
      eta = "ETA --:--";
    } else {
      double inStep = (clock.getAsLong() - stepStart) / 1e9;
      double mean = stepSecondsSum / done;
      eta = "ETA " + clock(Math.max(0, mean * (total - done) - Math.min(inStep, mean)));
    }
    return String.format(Locale.ROOT, "[%s%s] %d/%d %s | %s elapsed, %s", "#".repeat(filled),
        "-".repeat(BAR - filled), done, total, phase, clock(elapsed), eta);
  }

  public static String clock(double seconds) {
    long s = Math.round(seconds);
    return s >= 3600 ? String.format(Locale.ROOT, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60)
        : String.format(Locale.ROOT, "%d:%02d", s / 60, s % 60);
  }

  private void tick() {
    while (true) {
      try {
        Thread.sleep(1000);
      } catch (InterruptedException e) {
        return;
      }
      synchronized (this) {
        if (closed) {
          return;
        }
        print(false);
      }
    }
  }

  private void print(boolean changed) {
    long now = clock.getAsLong();
    if (!tty && !changed && now - lastPrinted < TimeUnit.SECONDS.toNanos(30)) {
      return;
    }
    lastPrinted = now;
    String l = line();
    if (tty) {
      out.print("\r" + l + " ".repeat(Math.max(0, lastWidth - l.length())));
      lastWidth = l.length();
    } else {
      out.println(l);
    }
    out.flush();
  }

  /** Ends the line (on a terminal) and stops the ticker. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    ticker.interrupt();
    if (tty) {
      out.println();
    }
  }
}
