package org.hdfsrdma.protocol;

import java.io.EOFException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.nativelib.NativeFiles;

/**
 * Fetches a granted write segment's descriptor from the receiving DataNode's Unix domain
 * socket ({@link ShortCircuitSocket}): the request carries the one-time grant id of the
 * WRITE_SHM_GRANT in {@link ShortCircuitSocket#GRANT_FIELD}, the DataNode answers SUCCESS, the
 * sender its go-ahead, the DataNode the descriptor (SCM_RIGHTS), which is adopted
 * ({@link NativeFiles#adopt}). The descriptor crosses users: a sender running as another user
 * than the DataNode maps it without any permission on a file. One connection per fetch, on the
 * caller's thread ({@link ShortCircuitExchange}), within the request's timeout; the socket is
 * closed before the fetch returns.
 */
public final class SegmentFetch {
  private SegmentFetch() {}

  /** Where to ask and with what: the socket, its path check, the block and token of the grant's request. */
  public record Request(String socketPath, boolean allowSticky, ExtendedBlock block,
      Token<BlockTokenIdentifier> token, long timeoutMs) {}

  /** Why fetching descriptors cannot work in this process at all, or null. */
  public static String unavailable() {
    if (!HrdmaNative.isAvailable()) {
      return "the native library is not loaded: " + HrdmaNative.unavailabilityCause();
    }
    return null;
  }

  /**
   * The segment granted as {@code grant}, adopted; the caller closes it.
   *
   * @throws IOException refused, no socket, or no answer within the timeout
   */
  public static NativeFiles.Fd fetch(Request r, byte[] grant) throws IOException {
    String why = unavailable();
    if (why != null) {
      throw new IOException(why);
    }
    Path p = Path.of(r.socketPath());
    if (!Files.exists(p)) {
      throw new IOException("no DataNode socket at " + p);
    }
    boolean tokenPresent = r.token() != null && r.token().getIdentifier().length > 0;
    // with tokens the grant id goes only to a socket no other local user could have created first
    SocketPaths.checkForClient(p, !tokenPresent || r.allowSticky());
    byte[] req = ShortCircuitSocket.segmentRequest(r.block(), r.token(), grant).toByteArray();
    if (Thread.currentThread().isInterrupted()) {
      throw new java.io.InterruptedIOException("interrupted waiting for " + r.socketPath());
    }
    ShortCircuitExchange x;
    try {
      x = ShortCircuitExchange.connect(r.socketPath(), r.timeoutMs());
    } catch (NativeException e) {
      throw new IOException("cannot connect to " + r.socketPath() + ": " + e.getMessage());
    }
    try (x) {
      BlockOpResponseProto reply = x.call(req);
      if (reply.getStatus() != Status.SUCCESS) {
        throw new IOException("write segment refused by " + r.socketPath() + ": " + reply.getStatus() + ": "
            + reply.getMessage());
      }
      x.goAhead();
      return x.receiveFiles(1)[0];
    } catch (ShortCircuitExchange.BadDescriptor e) {
      throw new IOException("bad descriptor from " + r.socketPath() + ": " + e.getMessage(), e.getCause());
    } catch (NativeException e) {
      if (e.status() == NativeException.ERR_TIMEOUT) {
        throw new IOException("no answer from " + r.socketPath() + " within " + r.timeoutMs() + " ms");
      }
      throw new IOException("write segment exchange on " + r.socketPath() + " failed: " + e, e);
    } catch (EOFException e) {
      throw new IOException("the DataNode closed " + r.socketPath() + " before handing over the write segment");
    }
  }
}
