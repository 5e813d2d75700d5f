package org.hdfsrdma.datanode;

import org.hdfsrdma.protocol.Message;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Block writes (stock: DataXceiver#writeBlock, BlockReceiver, PacketResponder): WRITE_REQUEST
 * opens a {@link BlockWriteTask} on its connection (its set-up runs on the write executor);
 * the DATA_PACKETs that follow with its request id go to that task's packet receiver
 * (packets of writes that ended are dropped: their error ack told the client). Thread-safe.
 */
final class WriteHandler implements OpHandler {
  private static final Logger LOG = LoggerFactory.getLogger(WriteHandler.class);

  private final OpContext ctx;

  WriteHandler(OpContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public void handle(Connection c, Message m) {
    switch (m.kind()) {
      case WRITE_REQUEST -> {
        ctx.prepareConnector();
        c.startWrite(new BlockWriteTask(ctx, c, m));
      }
      case DATA_PACKET -> {
        BlockWriteTask w = c.write(m.requestId());
        if (w == null) {
          m.release(); // a write that ended (its error ack told the client)
          LOG.debug("hrdma datanode: DATA_PACKET for no open write (request {}) from {}", m.requestId(),
              c.endpoint().remoteAddress());
        } else {
          w.onPacket(m);
        }
      }
      default -> throw new AssertionError(m.kind());
    }
  }
}
