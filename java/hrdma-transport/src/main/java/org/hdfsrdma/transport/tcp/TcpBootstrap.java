package org.hdfsrdma.transport.tcp;

import com.google.protobuf.InvalidProtocolBufferException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.hdfsrdma.proto.HrdmaProtos.Hello;
import org.hdfsrdma.proto.HrdmaProtos.HelloReply;
import org.hdfsrdma.transport.Protocol;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connecting side of a tcp service port's hello on a blocking JDK socket, without Netty: how
 * {@code HrdmaConnector} learns a server's offers, so that a client whose connections go over
 * another transport never starts Netty. The bytes are a {@link TcpEndpoint}'s (frames as in
 * {@link TcpFrames}: HELLO with this side's transport order, HELLO_REPLY), and so are the
 * checks and the failures: the reply's length bounded by {@link Protocol#MAX_CONTROL_MESSAGE}
 * before anything is allocated, the reply's status, version, credits and largest message
 * checked; an unreachable port is a {@link TransportException.Unreachable}, a refused or
 * malformed reply a {@link TransportException.Protocol} (a refusal because the server is still
 * starting its {@link TransportException.Starting}), a connect or hello past its timeout
 * (or past the caller's deadline) a {@link TransportException.Timeout}, a connection that ends
 * or breaks during the hello a {@link TransportException.PeerFailed}. To the server this is an
 * ordinary tcp connection (its hello timeout and pending-hello bound apply as to any).
 *
 * <p>After the reply nothing is sent on it: {@link #close} ends it with CLOSE, as a
 * {@link TcpEndpoint} ends an endpoint, so the server sees an orderly close.
 *
 * <p>Not thread-safe: one thread connects, reads the reply and closes. Blocks that thread
 * (interruptibly) for at most the connect timeout, the hello timeout and the caller's deadline.
 */
public final class TcpBootstrap implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(TcpBootstrap.class);

  /**
   * Most bytes received after the hello reply that {@link #close} drops before its CLOSE; an
   * honest server sends none (at most a CLOSE frame of its own).
   */
  static final int CLOSE_DRAIN_BYTES = 4096;

  private final SocketChannel channel;
  private final InetSocketAddress remote;
  private HelloReply reply;
  private long dropped; // by close()

  private TcpBootstrap(SocketChannel channel, InetSocketAddress remote) {
    this.channel = channel;
    this.remote = remote;
  }

  /**
   * Connects to {@code remote}, says HELLO with {@code transports} (the client's order) and
   * this side's {@code conf} (credits, largest message), and returns once the server's OK reply
   * is read, with the connection open. Bounded by the connect timeout for the connection, the
   * hello timeout for the reply, and {@code deadlineNanos} ({@link System#nanoTime}) for both.
   *
   * @throws TransportException as listed above; the connection is closed then
   */
  public static TcpBootstrap connect(InetSocketAddress remote, List<String> transports, TransportConf conf,
      long deadlineNanos) throws TransportException {
    int connectMs = conf.getPositiveInt(TransportConf.CONNECT_TIMEOUT_KEY, TransportConf.CONNECT_TIMEOUT_DEFAULT);
    int helloMs = conf.getPositiveInt(TransportConf.HELLO_TIMEOUT_KEY, TransportConf.HELLO_TIMEOUT_DEFAULT);
    Hello hello = Hello.newBuilder()
        .setVersion(Protocol.VERSION)
        .setMaxMessageSize(conf.getPositiveInt(TransportConf.MAX_MESSAGE_KEY, TransportConf.MAX_MESSAGE_DEFAULT))
        .setCredits(conf.getPositiveInt(TransportConf.CREDITS_KEY, TransportConf.CREDITS_DEFAULT))
        .setClientId("pid-" + ProcessHandle.current().pid())
        .addAllTransports(transports)
        .build();
    long budgetMs = msUntil(deadlineNanos);
    SocketChannel ch;
    try {
      ch = SocketChannel.open();
    } catch (IOException e) {
      throw new TransportException("tcp: cannot open a socket: " + e.getMessage(), 0, e);
    }
    TcpBootstrap b = new TcpBootstrap(ch, remote);
    boolean ok = false;
    try {
      b.exchange(hello, connectMs, helloMs, deadlineNanos, budgetMs);
      ok = true;
      return b;
    } catch (TransportException e) {
      LOG.debug("tcp: connecting to {} failed: {}", remote, e.getMessage());
      throw e;
    } finally {
      if (!ok) {
        b.abort();
      }
    }
  }

  private void exchange(Hello hello, int connectMs, int helloMs, long deadline, long budgetMs)
      throws TransportException {
    Socket s = channel.socket();
    // connect
    long connectWait = Math.min(connectMs, budgetMs);
    if (connectWait <= 0) {
      throw deadlinePassed(budgetMs);
    }
    try {
      s.setTcpNoDelay(true);
      s.connect(remote, (int) connectWait);
    } catch (SocketTimeoutException e) {
      throw connectWait < connectMs ? deadlinePassed(budgetMs)
          : new TransportException.Timeout("tcp: connecting to " + remote + " timed out after " + connectMs + " ms");
    } catch (ClosedByInterruptException e) {
      throw interrupted(e);
    } catch (IOException e) {
      throw new TransportException.Unreachable("tcp: cannot connect to " + remote + ": " + e.getMessage(), 0, e);
    }
    // hello: as long as the server waits for ours (TcpEndpoint's client waits the same)
    long helloEnd = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(helloMs);
    boolean byDeadline = deadline - helloEnd < 0;
    long end = byDeadline ? deadline : helloEnd;
    try {
      byte[] payload = hello.toByteArray();
      byte[] helloFrame = ByteBuffer.allocate(TcpWire.HEADER_BYTES + payload.length)
          .putInt(payload.length + 1).put(TcpWire.HELLO).put(payload).array();
      OutputStream out = s.getOutputStream();
      out.write(helloFrame);
      InputStream in = s.getInputStream();
      byte[] length = new byte[TcpWire.LENGTH_BYTES];
      readFully(s, in, length, end);
      long n = Integer.toUnsignedLong(ByteBuffer.wrap(length).getInt());
      if (n == 0) {
        throw new TransportException.Protocol("empty frame (length 0, no type byte)");
      }
      if (n > Protocol.MAX_CONTROL_MESSAGE) { // before anything of its size is allocated
        throw new TransportException.Protocol("frame length " + n + " exceeds the limit of "
            + Protocol.MAX_CONTROL_MESSAGE + " before the hello is done");
      }
      byte[] frame = new byte[(int) n]; // type, payload
      readFully(s, in, frame, end);
      int type = frame[0] & 0xff;
      if (type != TcpWire.HELLO_REPLY) {
        throw new TransportException.Protocol("expected HELLO_REPLY from " + remote + ", got "
            + TcpWire.typeName(type));
      }
      HelloReply r;
      try {
        r = HelloReply.parseFrom(ByteBuffer.wrap(frame, 1, frame.length - 1));
      } catch (InvalidProtocolBufferException e) {
        throw new TransportException.Protocol("malformed HELLO_REPLY from " + remote + ": " + e.getMessage());
      }
      check(r);
      reply = r;
    } catch (SocketTimeoutException e) {
      throw byDeadline ? deadlinePassed(budgetMs)
          : new TransportException.Timeout("tcp: no hello reply from " + remote + " within " + helloMs + " ms ("
              + TransportConf.HELLO_TIMEOUT_KEY + ")");
    } catch (ClosedByInterruptException e) {
      throw interrupted(e);
    } catch (TransportException e) {
      throw e;
    } catch (IOException e) {
      throw new TransportException.PeerFailed("tcp: connection to " + remote + " broke: " + e.getMessage(), 0, e);
    }
  }

  /** TcpEndpoint's checks of a client's HELLO_REPLY, with its messages. */
  private void check(HelloReply r) throws TransportException {
    if (r.getStatus() != HelloReply.Status.OK) {
      throw Protocol.notOk(r, "tcp: " + remote + " refused the hello (" + r.getStatus() + "): " + r.getError());
    }
    if (r.getVersion() != Protocol.VERSION) {
      throw new TransportException.Protocol("tcp: " + remote + " speaks protocol version " + r.getVersion()
          + ", this side " + Protocol.VERSION);
    }
    if (r.getCredits() == 0 || r.getMaxMessageSize() == 0) {
      throw new TransportException.Protocol("tcp: " + remote + " advertised credits " + r.getCredits()
          + " and max message size " + r.getMaxMessageSize());
    }
  }

  /** Reads {@code b} whole by {@code end} ({@link System#nanoTime}): SocketTimeoutException past it. */
  private void readFully(Socket s, InputStream in, byte[] b, long end) throws IOException {
    int off = 0;
    while (off < b.length) {
      long left = end - System.nanoTime();
      if (left <= 0) {
        throw new SocketTimeoutException();
      }
      s.setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(left))));
      int got = in.read(b, off, b.length - off);
      if (got < 0) {
        throw new TransportException.PeerFailed("tcp: connection to " + remote + " closed during the hello", 0,
            null);
      }
      off += got;
    }
  }

  /** The server's reply (status OK), with its offers. */
  public HelloReply helloReply() {
    return reply;
  }

  public InetSocketAddress remoteAddress() {
    return remote;
  }

  /**
   * Ends the connection: CLOSE and the end of this side's stream, as a {@link TcpEndpoint}
   * closes; the server answers CLOSE and closes its side. Not waited for: nothing is left
   * to receive, and bytes the server sent meanwhile (ours send nothing after the reply) are
   * dropped first so that the close is an orderly one, not a reset; at most
   * {@link #CLOSE_DRAIN_BYTES} of them: a server that sent more is reset, so that one
   * streaming bytes after its reply cannot keep this thread dropping them. Never throws.
   */
  @Override
  public void close() {
    if (!channel.isOpen()) {
      return;
    }
    try {
      Socket s = channel.socket();
      InputStream in = s.getInputStream();
      for (int n = in.available(); n > 0; n = in.available()) {
        if (dropped + n > CLOSE_DRAIN_BYTES) {
          LOG.debug("tcp: {} sent more than {} bytes after its hello reply: the bootstrap connection is reset",
              remote, CLOSE_DRAIN_BYTES);
          return; // abort() below: closed with bytes unread, a reset
        }
        long k = in.skip(n);
        if (k <= 0) {
          break;
        }
        dropped += k;
      }
      s.getOutputStream().write(ByteBuffer.allocate(TcpWire.HEADER_BYTES).putInt(1).put(TcpWire.CLOSE).array());
      s.shutdownOutput();
    } catch (IOException e) {
      LOG.debug("tcp: closing the bootstrap connection to {}: {}", remote, e.toString());
    } finally {
      abort();
    }
  }

  private void abort() {
    try {
      channel.close();
    } catch (IOException e) {
      LOG.debug("tcp: closing the bootstrap connection to {}: {}", remote, e.toString());
    }
  }

  /** Bytes received after the hello reply that {@link #close} dropped (tests). */
  long droppedAtClose() {
    return dropped;
  }

  /** True once closed (the connection is never used after the reply). */
  public boolean isClosed() {
    return !channel.isOpen();
  }

  private TransportException deadlinePassed(long budgetMs) {
    return new TransportException.Timeout("tcp: connecting to " + remote + " did not finish within " + budgetMs
        + " ms (the connect's deadline)");
  }

  private TransportException interrupted(IOException e) {
    Thread.currentThread().interrupt(); // set already; kept for the caller, as a blocking JDK call leaves it
    return new TransportException("interrupted while connecting to " + remote, 0, e);
  }

  private static long msUntil(long deadlineNanos) {
    return Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime()));
  }
}
