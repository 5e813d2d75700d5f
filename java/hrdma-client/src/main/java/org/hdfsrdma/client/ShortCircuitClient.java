package org.hdfsrdma.client;

import java.io.EOFException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.security.token.block.InvalidBlockTokenException;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeDomainSocket;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.nativelib.NativeFiles;
import org.hdfsrdma.protocol.ShortCircuitExchange;
import org.hdfsrdma.protocol.ShortCircuitSocket;
import org.hdfsrdma.protocol.SocketPaths;

/**
 * Asks a DataNode's plugin on this host for a finalized replica's files over
 * its Unix domain socket ({@link ShortCircuitSocket}: request with the
 * block's token, reply, go-ahead, two descriptors) and takes the received
 * descriptors over ({@link NativeFiles#adopt}). One connection per request,
 * on the caller's thread ({@link ShortCircuitExchange} over libhrdma's
 * {@link NativeDomainSocket}), within the timeout; the socket is closed
 * before the request returns, by the thread that used it, so nothing reads
 * from its descriptor's number afterwards. Thread-safe.
 */
final class ShortCircuitClient implements AutoCloseable {
  private final long timeoutMs;
  /** {@link SocketPaths#ALLOW_STICKY_KEY}: a socket in /tmp is used even when blocks carry tokens. */
  private final boolean allowSticky;
  private boolean closed; // guarded by this
  /** Tests: sees each exchange's socket as soon as it is connected, on the requesting thread. */
  private volatile java.util.function.Consumer<NativeDomainSocket> channelHook;

  /**
   * The replica's block and .meta files, open read-only; the caller closes
   * them. {@code cached}: the DataNode caches the replica (mlocked, verified
   * when cached), so reading it needs no checksum work, as stock's anchored
   * short-circuit replicas. {@code resident}: bytes of the range the request asked about that
   * are in the page cache, -1 when not asked or not said (an older DataNode).
   */
  record Fds(NativeFiles.Fd data, NativeFiles.Fd meta, boolean cached, long resident) implements AutoCloseable {
    Fds(NativeFiles.Fd data, NativeFiles.Fd meta, boolean cached) {
      this(data, meta, cached, -1);
    }

    @Override
    public void close() {
      data.close();
      meta.close();
    }
  }

  ShortCircuitClient(long timeoutMs, boolean allowSticky) {
    this.timeoutMs = timeoutMs;
    this.allowSticky = allowSticky;
  }

  /** Why short-circuit reads cannot work in this process at all, or null. */
  static String unavailable() {
    if (!HrdmaNative.isAvailable()) {
      return "the native library is not loaded: " + HrdmaNative.unavailabilityCause();
    }
    return null;
  }

  /**
   * The files of {@code block}'s finalized replica (of {@code block}'s length)
   * from the DataNode listening at {@code socketPath}.
   *
   * @throws InvalidBlockTokenException the DataNode refused the token
   * @throws RdmaBlockClient.LocalReadsRefused nothing listens there, or it does not serve this client at all
   * @throws IOException refused for this replica (not finalized, another length), or the exchange failed
   */
  Fds request(String socketPath, ExtendedBlock block, Token<BlockTokenIdentifier> token) throws IOException {
    return request(socketPath, block, token, 0, -1);
  }

  /**
   * As {@link #request(String, ExtendedBlock, Token)}; with {@code probeLength} &gt;= 0 the
   * DataNode is asked too how much of {@code [probeOffset, probeOffset + probeLength)} of the
   * block is in its page cache ({@link Fds#resident}).
   */
  Fds request(String socketPath, ExtendedBlock block, Token<BlockTokenIdentifier> token, long probeOffset,
      long probeLength) throws IOException {
    String why = unavailable();
    if (why != null) {
      throw new RdmaBlockClient.LocalReadsRefused(why);
    }
    if (!Files.exists(Path.of(socketPath))) {
      throw new RdmaBlockClient.LocalReadsRefused("no short-circuit socket at " + socketPath);
    }
    // with tokens the cluster authenticates: the token goes only to a socket no other local user
    // could have created first (as stock's DataNode binds only there)
    boolean tokenPresent = token != null && token.getIdentifier().length > 0;
    try {
      SocketPaths.checkForClient(Path.of(socketPath), !tokenPresent || allowSticky);
    } catch (IOException e) {
      throw new RdmaBlockClient.LocalReadsRefused(e.getMessage());
    }
    OpRequestShortCircuitAccessProto op = probeLength < 0 ? ShortCircuitSocket.request(block, token)
        : ShortCircuitSocket.request(block, token, probeOffset, probeLength);
    if (isClosed()) {
      throw new IOException("the short-circuit client is closed");
    }
    if (Thread.currentThread().isInterrupted()) {
      throw new java.io.InterruptedIOException("interrupted waiting for " + socketPath);
    }
    ShortCircuitExchange x;
    try {
      x = ShortCircuitExchange.connect(socketPath, timeoutMs, this::isClosed);
    } catch (NativeException e) {
      throw new RdmaBlockClient.LocalReadsRefused("cannot connect to " + socketPath + ": " + e.getMessage());
    }
    try (x) {
      java.util.function.Consumer<NativeDomainSocket> hook = channelHook;
      if (hook != null) {
        hook.accept(x.socket());
      }
      BlockOpResponseProto r = x.call(op.toByteArray());
      if (r.getStatus() != Status.SUCCESS) {
        throw switch (r.getStatus()) {
          case ERROR_ACCESS_TOKEN -> new InvalidBlockTokenException(r.getMessage());
          case ERROR_UNSUPPORTED -> new RdmaBlockClient.LocalReadsRefused(r.getMessage());
          default -> new IOException("short-circuit read of " + block + " refused: " + r.getStatus() + ": "
              + r.getMessage());
        };
      }
      boolean cached = ShortCircuitSocket.cached(r);
      long resident = ShortCircuitSocket.resident(r);
      x.goAhead();
      NativeFiles.Fd[] f = x.receiveFiles(2);
      return new Fds(f[0], f[1], cached, resident);
    } catch (ShortCircuitExchange.BadDescriptor e) {
      throw new IOException("bad descriptor from " + socketPath + ": " + e.getMessage(), e.getCause());
    } catch (NativeException e) {
      if (e.status() == NativeException.ERR_TIMEOUT) {
        throw new IOException("no short-circuit answer from " + socketPath + " within " + timeoutMs + " ms");
      }
      throw new IOException("short-circuit exchange on " + socketPath + " failed: " + e, e);
    } catch (EOFException e) {
      throw new IOException("the DataNode closed " + socketPath + " before handing over the files of " + block);
    } catch (ShortCircuitExchange.Abandoned e) {
      throw new IOException("the short-circuit client is closed");
    }
  }

  private synchronized boolean isClosed() {
    return closed;
  }

  /** Tests: {@code hook} sees the socket of every later exchange as soon as it is connected. */
  void channelHook(java.util.function.Consumer<NativeDomainSocket> hook) {
    this.channelHook = hook;
  }

  /**
   * Later requests fail, and those waiting for a DataNode stop soon (the requesting thread closes
   * its socket).
   */
  @Override
  public synchronized void close() {
    closed = true;
  }
}
