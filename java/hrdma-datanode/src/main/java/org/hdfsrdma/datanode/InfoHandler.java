package org.hdfsrdma.datanode;

import java.net.ProtocolException;
import org.hdfsrdma.datanode.PluginMessages.Info;
import org.hdfsrdma.datanode.compat.DataNodeAccess;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Answers INFO requests with the DataNode's UUID, xfer port and block pools;
 * anything else gets an error reply. Runs on the transport's I/O thread: every
 * answer is computed from in-memory DataNode state without blocking.
 */
final class InfoHandler implements EndpointHandler {
  private static final Logger LOG = LoggerFactory.getLogger(InfoHandler.class);

  private final DataNodeAccess dn;

  InfoHandler(DataNodeAccess dn) {
    this.dn = dn;
  }

  @Override
  public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
    RegisteredBuffer reply;
    try {
      try {
        PluginMessages.requestOp(message.nio());
        reply = PluginMessages.infoReply(endpoint.transport().allocator(),
            new Info(dn.datanodeUuid(), dn.xferPort(), dn.blockPoolIds()));
      } catch (ProtocolException e) {
        LOG.debug("hrdma datanode: bad request from {}: {}", endpoint.remoteAddress(), e.getMessage());
        reply = PluginMessages.errorReply(endpoint.transport().allocator(), 0, e.getMessage());
      } finally {
        message.release();
      }
    } catch (TransportException | RuntimeException e) {
      LOG.warn("hrdma datanode: cannot answer {}, closing the connection: {}", endpoint.remoteAddress(),
          e.toString());
      endpoint.close();
      return;
    }
    endpoint.send(reply);
  }
}
