package org.hdfsrdma.datanode;

import org.hdfsrdma.protocol.InfoReply;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** INFO_REQUEST: answered in place from memory (the I/O thread). Thread-safe. */
final class InfoHandler implements OpHandler {
  private static final Logger LOG = LoggerFactory.getLogger(InfoHandler.class);

  private final OpContext ctx;

  InfoHandler(OpContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public void handle(Connection c, Message m) {
    m.release();
    Endpoint ep = c.endpoint();
    try {
      ep.send(MessageCodec.encodeInfoReply(ep.transport().allocator(), m.requestId(),
          new InfoReply(ctx.dn().datanodeUuid(), ctx.dn().xferPort(), ctx.dn().blockPoolIds())));
    } catch (TransportException | RuntimeException e) {
      LOG.warn("hrdma datanode: cannot answer {}, closing the connection: {}", ep.remoteAddress(), e.toString());
      ep.close();
    }
  }
}
