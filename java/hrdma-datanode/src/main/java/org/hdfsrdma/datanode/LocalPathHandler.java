package org.hdfsrdma.datanode;

import java.io.IOException;
import java.util.concurrent.RejectedExecutionException;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpReadBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier.AccessMode;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.hdfsrdma.datanode.compat.DataNodeAccess;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.SameHost;
import org.hdfsrdma.transport.Endpoint;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * LOCAL_PATH_REQUEST (short-circuit reads by path): the files of a finalized replica, for a
 * client on this host with a valid READ token; else an ERROR saying why, after which the
 * client reads the block over the connection. Runs on the read executor (it looks up files).
 * Kept apart from the other handlers so that replacing this operation stays local.
 * Thread-safe.
 */
final class LocalPathHandler implements OpHandler {
  private static final Logger LOG = LoggerFactory.getLogger(LocalPathHandler.class);

  private final OpContext ctx;

  LocalPathHandler(OpContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public void handle(Connection c, Message m) {
    try {
      ctx.readExecutor().execute(() -> answer(c.endpoint(), m));
    } catch (RejectedExecutionException e) {
      m.release();
      Replies.error(c.endpoint(), m.requestId(), Status.ERROR, ctx.who() + " is stopping");
    }
  }

  private void answer(Endpoint ep, Message m) {
    long id = m.requestId();
    DataNodeAccess dn = ctx.dn();
    try {
      OpReadBlockProto op = m.localPathRequest();
      ExtendedBlock block = BlockOps.block(op);
      if (!ctx.settings().localReads()) {
        Replies.error(ep, id, Status.ERROR_UNSUPPORTED, "local reads are off on " + ctx.who() + " ("
            + ReadSettings.LOCAL_READS_KEY + ")");
        return;
      }
      if (!SameHost.isLocal(ep.remoteAddress())) {
        Replies.error(ep, id, Status.ERROR_UNSUPPORTED, "local reads are for clients on " + ctx.who()
            + "'s host, not " + ep.remoteAddress());
        return;
      }
      try {
        dn.checkBlockToken(BlockOps.token(op), block, AccessMode.READ);
      } catch (InvalidToken e) {
        Replies.error(ep, id, Status.ERROR_ACCESS_TOKEN, "Block token verification failed: op=LOCAL_PATH,"
            + " remoteAddress=" + ep.remoteAddress() + ", message=" + e.getMessage());
        return;
      }
      DataNodeAccess.LocalPaths p = dn.localPaths(block);
      ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.LOCAL_PATH_REPLY, id,
          BlockOps.localPathReply(p.block(), p.data(), p.meta()), null));
    } catch (IOException e) {
      Replies.error(ep, id, Status.ERROR, ctx.who() + ": " + e.getMessage());
    } catch (RuntimeException e) {
      LOG.warn("hrdma datanode: local path request from {} failed", ep.remoteAddress(), e);
      Replies.error(ep, id, Status.ERROR, ctx.who() + ": " + e);
    } finally {
      m.release();
    }
  }
}
