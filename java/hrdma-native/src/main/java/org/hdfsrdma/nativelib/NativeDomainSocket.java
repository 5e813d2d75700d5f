package org.hdfsrdma.nativelib;

import java.io.EOFException;
import java.util.concurrent.TimeUnit;

/**
 * A Unix domain socket client (libhrdma's native/src/uds) for a short exchange with a process on
 * this host, the DataNode's plugin: connect to a path, send bytes, receive bytes and the open file
 * descriptors passed with them (SCM_RIGHTS). Every call runs on the caller's thread and waits at
 * most the timeout it is given, signals included, so a peer that never answers costs the caller
 * that much and no more; there is no event loop and no thread. A {@link #read} that timed out has
 * taken nothing (it may be called again); a write that timed out, or any call that failed
 * otherwise, may have sent or taken part of a message: the caller closes the socket then. The socket is
 * close-on-exec and counted in {@link #openSockets()} until it is closed (leak checks; apart
 * from {@link NativeFiles#fdsHeld()}, which counts what outlives an exchange).
 *
 * <p>Thread-safety: the methods are synchronized on the socket, so calls from several threads take
 * turns and {@link #close()} waits for a call in progress (at most that call's timeout). Once
 * closed (idempotent), calls fail with {@link NativeException#ERR_CLOSED}: the descriptor's number,
 * which the process may have given to another file or socket by then, is never used again.
 *
 * <p>Received descriptors are the caller's from the moment {@link #read} returns them: it takes
 * each over ({@link NativeFiles#adopt}, counted from then on) or closes it
 * ({@link #closeReceived}). A read that refuses its message's descriptors (more than asked for,
 * or control data the kernel cut short: {@link NativeException#ERR_TRUNCATED}) has closed every
 * one of them.
 */
public final class NativeDomainSocket implements AutoCloseable {
  /** Most descriptors one {@link #read} takes (HRDMA_UDS_MAX_FDS). */
  public static final int MAX_FDS = 8;

  private final int fd;
  private final String path;
  private boolean closed; // guarded by this

  private NativeDomainSocket(int fd, String path) {
    this.fd = fd;
    this.path = path;
  }

  /**
   * A stream socket connected to {@code path}. {@link NativeException#ERR_UNREACHABLE}: nothing
   * listens there (no such path, refused); {@link NativeException#ERR_TIMEOUT}: the listener's
   * backlog stayed full for {@code timeoutMs}. The message carries the system's reason.
   */
  public static NativeDomainSocket connect(String path, long timeoutMs) throws NativeException {
    HrdmaNative.ensureAvailable();
    checkTimeout(timeoutMs);
    return new NativeDomainSocket(Jni.udsConnect0(path, timeoutMs), path);
  }

  /**
   * A connected pair of sockets, both ends in this process (a peer for tests, or for passing
   * descriptors between parts of a process).
   */
  public static NativeDomainSocket[] pair() throws NativeException {
    HrdmaNative.ensureAvailable();
    int[] fds = new int[2];
    int st = Jni.udsPair0(fds);
    if (st < 0) {
      throw new NativeException("socketpair: " + HrdmaNative.statusString(st), st);
    }
    return new NativeDomainSocket[] {new NativeDomainSocket(fds[0], "pair end 0"),
        new NativeDomainSocket(fds[1], "pair end 1")};
  }

  /** Sends {@code [off, off + len)} of {@code b}, all of it within {@code timeoutMs} (0: no waiting). */
  public void write(byte[] b, int off, int len, long timeoutMs) throws NativeException {
    write(b, off, len, null, timeoutMs);
  }

  /**
   * As {@link #write(byte[], int, int, long)}, passing the descriptors {@code fds} (null: none;
   * at most {@link #MAX_FDS}; {@code len} at least 1 then) with the first bytes. The caller keeps
   * its descriptors (the peer gets copies).
   */
  public synchronized void write(byte[] b, int off, int len, int[] fds, long timeoutMs) throws NativeException {
    java.util.Objects.checkFromIndexSize(off, len, b.length);
    if (fds != null && (fds.length > MAX_FDS || (fds.length > 0 && len == 0))) {
      throw new IllegalArgumentException(fds.length + " descriptors with " + len + " bytes: at most " + MAX_FDS
          + ", with at least 1 byte");
    }
    checkTimeout(timeoutMs);
    checkOpen();
    int st = Jni.udsSend0(fd, b, off, len, fds, timeoutMs);
    if (st < 0) {
      throw failed("send " + len + " bytes to", st);
    }
  }

  /**
   * Receives 1 to {@code len} bytes into {@code [off, off + len)} of {@code b}, what has arrived
   * or the first that arrive within {@code timeoutMs}, and the descriptors passed with them: up to
   * {@code fds.length} ({@code fds} null: none; at most {@link #MAX_FDS}), stored at the start of
   * {@code fds}, -1 after them; they are the caller's (see the class comment).
   *
   * @return the bytes received, or -1 when the peer closed its end
   * @throws NativeException {@link NativeException#ERR_TIMEOUT}; {@link NativeException#ERR_TRUNCATED}
   *     when more descriptors came than {@code fds} holds (all of them closed)
   */
  public synchronized int read(byte[] b, int off, int len, int[] fds, long timeoutMs) throws NativeException {
    java.util.Objects.checkFromIndexSize(off, len, b.length);
    if (len == 0 || (fds != null && fds.length > MAX_FDS)) {
      throw new IllegalArgumentException("a read of " + len + " bytes and " + (fds == null ? 0 : fds.length)
          + " descriptors: at least 1 byte, at most " + MAX_FDS + " descriptors");
    }
    checkTimeout(timeoutMs);
    checkOpen();
    int n = Jni.udsRecv0(fd, b, off, len, fds, timeoutMs);
    if (n < 0) {
      throw failed("receive from", n);
    }
    return n == 0 ? -1 : n;
  }

  /**
   * Receives exactly {@code len} bytes within {@code timeoutMs} in all; descriptors passed with
   * them are refused ({@link NativeException#ERR_TRUNCATED}, closed).
   *
   * @throws EOFException the peer closed its end first
   */
  public void readFully(byte[] b, int off, int len, long timeoutMs) throws NativeException, EOFException {
    java.util.Objects.checkFromIndexSize(off, len, b.length);
    checkTimeout(timeoutMs);
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    int done = 0;
    while (done < len) {
      int n = read(b, off + done, len - done, null, msLeft(deadline));
      if (n < 0) {
        throw new EOFException(path + " closed after " + done + " of " + len + " bytes");
      }
      done += n;
    }
  }

  /** Milliseconds to {@code deadline} ({@link System#nanoTime()}), rounded up, at least 0. */
  public static long msLeft(long deadline) {
    long ns = deadline - System.nanoTime();
    return ns <= 0 ? 0 : (ns + 999_999) / 1_000_000;
  }

  /** Sockets connected or paired and not closed yet, process-wide; 0 without the library. */
  public static long openSockets() {
    return HrdmaNative.isAvailable() ? Jni.udsSockets0() : 0;
  }

  /** Closes a received descriptor the caller does not take over (negative: nothing to close). */
  public static void closeReceived(int fd) {
    if (fd >= 0) {
      Jni.udsCloseReceived0(fd); // the descriptor is gone whatever close says
    }
  }

  public synchronized boolean isClosed() {
    return closed;
  }

  /** Closes the socket, once; waits for a call in progress. */
  @Override
  public synchronized void close() {
    if (!closed) {
      closed = true;
      Jni.udsClose0(fd); // the descriptor is gone whatever close says
    }
  }

  @Override
  public String toString() {
    return "domain socket to " + path;
  }

  private void checkOpen() throws NativeException {
    if (closed) {
      throw new NativeException("the domain socket to " + path + " is closed", NativeException.ERR_CLOSED);
    }
  }

  private static void checkTimeout(long timeoutMs) {
    if (timeoutMs < 0) {
      throw new IllegalArgumentException("negative timeout " + timeoutMs + " ms");
    }
  }

  private NativeException failed(String what, int st) {
    return new NativeException(what + " " + path + ": " + HrdmaNative.statusString(st), st);
  }
}
