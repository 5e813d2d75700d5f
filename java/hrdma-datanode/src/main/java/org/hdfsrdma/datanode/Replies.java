package org.hdfsrdma.datanode;

import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Answers every handler sends the same way. Stateless, thread-safe. */
final class Replies {
  private static final Logger LOG = LoggerFactory.getLogger(Replies.class);

  private Replies() {}

  /** Sends an ERROR; never blocks. A failure to allocate closes the connection. */
  static void error(Endpoint ep, long requestId, Status status, String message) {
    BlockOpResponseProto h = BlockOps.error(status, message);
    try {
      ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.ERROR, requestId, h, null));
    } catch (TransportException | RuntimeException e) {
      LOG.warn("hrdma datanode: cannot send an error to {}, closing the connection: {}", ep.remoteAddress(),
          e.toString());
      ep.close();
    }
  }
}
