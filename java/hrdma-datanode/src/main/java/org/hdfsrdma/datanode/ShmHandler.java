package org.hdfsrdma.datanode;

import java.net.ProtocolException;
import java.util.concurrent.RejectedExecutionException;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.SameHost;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.transport.BufferAllocator;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads by reference for a same-host client: SHM_REQUEST grants the connection a
 * shared-memory segment (made on the read executor: it makes a file), SHM_MAPPED /
 * SHM_DECLINED answer the grant (SHM_MAPPED takes effect on the I/O thread, before the
 * connection's next request is dispatched), SHM_RELEASE gives a packet's slot back. Kept apart from the
 * other handlers so that gating this operation stays local. Thread-safe.
 */
final class ShmHandler implements OpHandler {
  private static final Logger LOG = LoggerFactory.getLogger(ShmHandler.class);

  private final OpContext ctx;

  ShmHandler(OpContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public void handle(Connection c, Message m) {
    switch (m.kind()) {
      case SHM_REQUEST -> {
        try {
          ctx.readExecutor().execute(() -> grant(c, m)); // makes a file: not on the I/O thread
        } catch (RejectedExecutionException e) {
          m.release();
          Replies.error(c.endpoint(), m.requestId(), Status.ERROR, ctx.who() + " is stopping");
        }
      }
      case SHM_MAPPED -> {
        m.release();
        if (c.isClosed()) {
          return; // its segment went with it
        }
        // mapped at once, here: the client's next request (its first read) is behind this one, and
        // its packets must find the segment mapped whichever thread serves it
        ShmSegment s = c.segmentMapped(m.requestId());
        if (s == null) {
          return;
        }
        try { // removes the segment's file: not on the I/O thread
          ctx.readExecutor().execute(() -> c.removeSegmentFile(s));
        } catch (RejectedExecutionException e) {
          c.endpoint().close(); // stopping: the segment and its file go with the connection
        }
      }
      case SHM_DECLINED -> {
        m.release();
        try { // removes the segment's file: not on the I/O thread
          ctx.readExecutor().execute(() -> {
            if (!c.isClosed()) { // else its segment went with it
              c.segmentDeclined(m.requestId());
            }
          });
        } catch (RejectedExecutionException e) {
          c.endpoint().close(); // stopping: the segment goes with the connection
        }
      }
      case SHM_RELEASE -> {
        long offset;
        try {
          offset = m.shmRelease().getOffset();
        } catch (ProtocolException e) {
          throw new AssertionError(e); // the kind was checked
        } finally {
          m.release();
        }
        if (!c.isClosed()) { // else every slot came back with it
          c.segmentReleased(m.requestId(), offset);
        }
      }
      default -> throw new AssertionError(m.kind());
    }
  }

  /**
   * SHM_REQUEST (read executor): a segment for this connection's read packets, for a client on
   * this host (SHM_GRANT); else an ERROR saying why (ERROR_UNSUPPORTED), after which the client
   * goes on reading by value.
   */
  private void grant(Connection c, Message m) {
    Endpoint ep = c.endpoint();
    long id = m.requestId();
    try {
      HrdmaProtos.ShmRequest req = m.shmRequest();
      if (c.isClosed()) {
        return; // closed while the request waited: nothing to answer
      }
      if (c.segment() != null) {
        Replies.error(ep, id, Status.ERROR_INVALID, "this connection already has a shared-memory segment");
        return;
      }
      if (!SameHost.isLocal(ep.remoteAddress())) {
        throw new ShmGrants.Refused("the client " + ep.remoteAddress() + " is not on this DataNode's host");
      }
      String client = ctx.shm().authorize(ctx.dn(), req, ep.remoteAddress()); // the block token, as for a read
      BufferAllocator alloc = ep.transport().allocator();
      ShmSegment s = ctx.shm().grant(req.getHost(), client, alloc, (int) alloc.footprint(ctx.settings().packetBytes()));
      if (!c.segment(s)) { // the connection closed meanwhile, or a second request raced this one
        s.close();
        Replies.error(ep, id, Status.ERROR_INVALID, "this connection already has a shared-memory segment, or closed");
        return;
      }
      ep.send(MessageCodec.encode(alloc, MessageKind.SHM_GRANT, id, HrdmaProtos.ShmGrant.newBuilder()
          .setPath(s.path().toString()).setBytes(s.bytes()).build()));
    } catch (ShmGrants.Refused e) {
      Replies.error(ep, id, e.status(), ctx.who() + ": " + e.getMessage());
    } catch (ProtocolException e) {
      throw new AssertionError(e); // the kind was checked
    } catch (TransportException | RuntimeException e) {
      LOG.warn("hrdma datanode: cannot answer the shared-memory request of {}: {}", ep.remoteAddress(),
          e.toString());
      Replies.error(ep, id, Status.ERROR, ctx.who() + ": " + e);
    } finally {
      m.release();
    }
  }
}
