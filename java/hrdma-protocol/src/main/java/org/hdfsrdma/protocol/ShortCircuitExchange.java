package org.hdfsrdma.protocol;

import java.io.EOFException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.hdfsrdma.nativelib.NativeDomainSocket;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.nativelib.NativeFiles;

/**
 * The client's side of one exchange on a DataNode's short-circuit socket ({@link
 * ShortCircuitSocket}): framed messages out and in, the go-ahead, then the descriptors, blocking
 * on the caller's thread over a {@link NativeDomainSocket}, every step within one deadline set at
 * {@link #connect}. The bytes are those the DataNode's plugin expects: each message one write of a
 * 4-byte big-endian length and the body, the go-ahead an empty message. Failures are a
 * {@link NativeException} ({@link NativeException#ERR_TIMEOUT} once the deadline passed), an
 * {@link EOFException} when the DataNode closed first, an {@link InterruptedIOException} when the
 * waiting thread is interrupted, or an IOException for what the DataNode should not have sent;
 * the caller words them. One thread; close it.
 */
public final class ShortCircuitExchange implements AutoCloseable {
  /**
   * Longest wait in one native call: between them an interrupt of the waiting thread, or its
   * owner's giving up, ends the exchange (a native wait does not see either).
   */
  private static final long SLICE_MS = 100;

  private final NativeDomainSocket socket;
  private final String path;
  private final long deadline; // System.nanoTime()
  private final BooleanSupplier abandoned;

  private ShortCircuitExchange(NativeDomainSocket socket, String path, long deadline, BooleanSupplier abandoned) {
    this.socket = socket;
    this.path = path;
    this.deadline = deadline;
    this.abandoned = abandoned;
  }

  /** Connects to {@code path}; the whole exchange must be done within {@code timeoutMs} from now. */
  public static ShortCircuitExchange connect(String path, long timeoutMs) throws NativeException {
    return connect(path, timeoutMs, () -> false);
  }

  /**
   * As {@link #connect(String, long)}; a wait for the DataNode ends soon (an {@link
   * Abandoned}) once {@code abandoned} says so (its owner closed), as it does when the waiting
   * thread is interrupted (an {@link InterruptedIOException}).
   */
  public static ShortCircuitExchange connect(String path, long timeoutMs, BooleanSupplier abandoned)
      throws NativeException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    return new ShortCircuitExchange(NativeDomainSocket.connect(path, timeoutMs), path, deadline, abandoned);
  }

  /** The exchange's socket (tests). */
  public NativeDomainSocket socket() {
    return socket;
  }

  /** Sends {@code body} as one message. */
  private void send(byte[] body) throws NativeException {
    byte[] frame = java.nio.ByteBuffer.allocate(4 + body.length).putInt(body.length).put(body).array();
    socket.write(frame, 0, frame.length, NativeDomainSocket.msLeft(deadline));
  }

  /**
   * A read of {@link NativeDomainSocket#read}, within the deadline, waiting in slices of at most
   * {@link #SLICE_MS} (a read that timed out has taken nothing).
   */
  private int read(byte[] b, int off, int len, int[] fds) throws IOException {
    for (;;) {
      long left = NativeDomainSocket.msLeft(deadline);
      try {
        return socket.read(b, off, len, fds, Math.min(left, SLICE_MS));
      } catch (NativeException e) {
        if (e.status() != NativeException.ERR_TIMEOUT || left <= SLICE_MS) {
          throw e;
        }
      }
      if (Thread.currentThread().isInterrupted()) {
        throw new InterruptedIOException("interrupted waiting for " + path);
      }
      if (abandoned.getAsBoolean()) {
        throw new Abandoned("gave up waiting for " + path);
      }
    }
  }

  private void readFully(byte[] b, int len) throws IOException {
    for (int done = 0; done < len; ) {
      int n = read(b, done, len - done, null);
      if (n < 0) {
        throw new EOFException(path + " closed after " + done + " of " + len + " bytes");
      }
      done += n;
    }
  }

  /** The next message's body; descriptors sent with it are refused. */
  private byte[] receive() throws IOException {
    byte[] len = new byte[4];
    readFully(len, 4);
    int n = java.nio.ByteBuffer.wrap(len).getInt();
    // the frame, length field included, within the limit (as the DataNode's frame decoder counts)
    if (n < 0 || n > ShortCircuitSocket.MAX_MESSAGE_BYTES - 4) {
      throw new IOException("a message of " + Integer.toUnsignedString(n) + " bytes from " + path + ": at most "
          + (ShortCircuitSocket.MAX_MESSAGE_BYTES - 4));
    }
    byte[] body = new byte[n];
    readFully(body, n);
    return body;
  }

  /** Sends {@code op} (a request proto's bytes) and returns the DataNode's response to it. */
  public org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto call(byte[] op)
      throws IOException {
    send(op);
    byte[] reply = receive();
    try {
      return org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto.parseFrom(reply);
    } catch (org.apache.hadoop.thirdparty.protobuf.InvalidProtocolBufferException e) {
      throw new IOException("bad reply from " + path + ": " + e.getMessage(), e);
    }
  }

  /** The empty message after a SUCCESS: the DataNode sends the descriptors then. */
  public void goAhead() throws NativeException {
    send(new byte[0]);
  }

  /**
   * The next {@code n} descriptors, each passed with one byte, taken over ({@link
   * NativeFiles#adopt}); the caller closes them. More than {@code n} at once are refused
   * ({@link NativeException#ERR_TRUNCATED}). On any failure nothing received stays open.
   *
   * @throws BadDescriptor one was not a regular file (adopt refused it)
   */
  public NativeFiles.Fd[] receiveFiles(int n) throws IOException {
    int[] raw = new int[n];
    java.util.Arrays.fill(raw, -1);
    NativeFiles.Fd[] files = new NativeFiles.Fd[n];
    int have = 0;
    int adopted = 0;
    boolean done = false;
    try {
      byte[] one = new byte[1];
      while (have < n) {
        int[] fds = new int[n - have];
        // one byte at a time: no read reaches into the next descriptor's message
        int got = read(one, 0, 1, fds);
        for (int fd : fds) {
          if (fd >= 0) {
            raw[have++] = fd;
          }
        }
        if (got < 0) {
          throw new EOFException(path + " closed after " + have + " of " + n + " descriptors");
        }
        if (fds[0] < 0) {
          throw new IOException("unexpected message from " + path);
        }
      }
      for (; adopted < n; adopted++) {
        int fd = raw[adopted];
        raw[adopted] = -1; // adopt's from here: it closes what it refuses
        try {
          files[adopted] = NativeFiles.adopt(fd);
        } catch (NativeException | RuntimeException e) {
          throw new BadDescriptor(e.getMessage(), e);
        }
      }
      done = true;
      return files;
    } finally {
      if (!done) {
        for (int fd : raw) {
          NativeDomainSocket.closeReceived(fd);
        }
        for (int i = 0; i < adopted; i++) {
          files[i].close();
        }
      }
    }
  }

  @Override
  public void close() {
    socket.close();
  }

  /** The exchange's owner gave up while it waited for the DataNode. */
  public static final class Abandoned extends IOException {
    Abandoned(String message) {
      super(message);
    }
  }

  /** A descriptor received that is not a regular file (it is closed). */
  public static final class BadDescriptor extends IOException {
    BadDescriptor(String message, Throwable cause) {
      super(message, cause);
    }
  }
}
