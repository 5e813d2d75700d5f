package org.hdfsrdma.datanode;

import java.net.ProtocolException;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.hdfsrdma.protocol.Message;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Block reads (stock: DataXceiver#readBlock with a BlockSender): READ_REQUEST becomes a
 * {@link BlockReadTask} queued on its connection ({@link ReadQueue}); READ_STATUS ends a read
 * or cancels it, or abandons an open write of that request id (the client gives it up).
 * Thread-safe.
 */
final class ReadHandler implements OpHandler {
  private static final Logger LOG = LoggerFactory.getLogger(ReadHandler.class);

  private final OpContext ctx;

  ReadHandler(OpContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public void handle(Connection c, Message m) {
    switch (m.kind()) {
      case READ_REQUEST -> c.submit(new BlockReadTask(ctx, c, m));
      case READ_STATUS -> {
        Status s;
        try {
          s = m.readStatus().getStatus();
        } catch (ProtocolException e) {
          throw new AssertionError(e); // the kind was checked
        } finally {
          m.release();
        }
        status(c, m.requestId(), s);
      }
      default -> throw new AssertionError(m.kind());
    }
  }

  /**
   * SUCCESS/CHECKSUM_OK end a read normally, anything else cancels it; for an open write, a
   * non-success status abandons it.
   */
  private static void status(Connection c, long id, Status s) {
    if (s == Status.SUCCESS || s == Status.CHECKSUM_OK) {
      return;
    }
    BlockWriteTask w = c.write(id);
    if (w != null) { // the client gives up a write
      w.abort();
      return;
    }
    if (s == Status.ERROR_CHECKSUM) {
      LOG.warn("hrdma datanode: client {} reports a checksum error in request {}", c.endpoint().remoteAddress(),
          id);
    }
    c.cancelRead(id);
  }
}
