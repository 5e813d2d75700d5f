package org.hdfsrdma.datanode;

import java.net.ProtocolException;
import java.util.concurrent.RejectedExecutionException;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.SameHost;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Same-host writes by reference, the receiving side: WRITE_SHM_REQUEST grants the connection a
 * write segment (WRITE_SHM_GRANT with a one-time id for the domain socket), and
 * {@link #copyOut} turns a WRITE_REF into the DATA_PACKET it names, copied into the DataNode's
 * own memory, for the dispatcher to hand to the write as any packet. Thread-safe.
 */
final class WriteShmHandler implements OpHandler {
  private static final Logger LOG = LoggerFactory.getLogger(WriteShmHandler.class);

  private final OpContext ctx;

  WriteShmHandler(OpContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public void handle(Connection c, Message m) {
    if (m.kind() != MessageKind.WRITE_SHM_REQUEST) {
      throw new AssertionError(m.kind());
    }
    try {
      ctx.readExecutor().execute(() -> grant(c, m)); // makes a segment: not on the I/O thread
    } catch (RejectedExecutionException e) {
      m.release();
      Replies.error(c.endpoint(), m.requestId(), Status.ERROR, ctx.who() + " is stopping");
    }
  }

  private void grant(Connection c, Message m) {
    Endpoint ep = c.endpoint();
    long id = m.requestId();
    try {
      HrdmaProtos.ShmRequest req = m.writeShmRequest();
      if (c.isClosed()) {
        return;
      }
      if (c.writeSegment() != null) {
        Replies.error(ep, id, Status.ERROR_INVALID, "this connection already has a write segment");
        return;
      }
      if (!SameHost.isLocal(ep.remoteAddress())) {
        throw new ShmGrants.Refused("the sender " + ep.remoteAddress() + " is not on this DataNode's host");
      }
      WriteShmGrants g = ctx.writeShm();
      String client = g.authorize(ctx.dn(), req, ep.remoteAddress()); // the block token, as for a write
      byte[][] grantId = new byte[1][];
      WriteShmSegment s = g.grant(req.getHost(), client, grantId);
      if (!c.writeSegment(s)) { // closed meanwhile, or a second request raced this one
        s.close();
        Replies.error(ep, id, Status.ERROR_INVALID, "this connection already has a write segment, or closed");
        return;
      }
      ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.WRITE_SHM_GRANT, id,
          HrdmaProtos.WriteShmGrant.newBuilder().setGrant(com.google.protobuf.ByteString.copyFrom(grantId[0]))
              .setBytes(s.bytes()).setSlotBytes(s.slotBytes()).build()));
    } catch (ShmGrants.Refused e) {
      Replies.error(ep, id, e.status(), ctx.who() + ": " + e.getMessage());
    } catch (ProtocolException e) {
      throw new AssertionError(e); // the kind was checked
    } catch (TransportException | RuntimeException e) {
      LOG.warn("hrdma datanode: cannot answer the write segment request of {}: {}", ep.remoteAddress(),
          e.toString());
      Replies.error(ep, id, Status.ERROR, ctx.who() + ": " + e);
    } finally {
      m.release();
    }
  }

  /**
   * WRITE_REF {@code ref} (I/O thread): the message it names, copied out of the connection's
   * write segment into a buffer of this DataNode's; its slot is given back at once
   * (WRITE_SHM_RELEASE), its credit with the copy. Takes over {@code ref}.
   *
   * @return the copy (position at the message), or null when the reference was refused: the
   *     connection is closed then (a sender that names memory it does not own cannot be trusted
   *     with the next message), which aborts its writes as any lost connection does
   */
  RegisteredBuffer copyOut(Connection c, Message ref) {
    Endpoint ep = c.endpoint();
    long id = ref.requestId();
    WriteShmSegment s = c.writeSegment();
    HrdmaProtos.ShmRef r;
    try {
      r = ref.writeRef();
    } catch (ProtocolException e) {
      ref.release();
      throw new AssertionError(e); // the kind was checked
    }
    RegisteredBuffer copy;
    try {
      if (s == null) {
        throw new ProtocolException("WRITE_REF on a connection without a write segment");
      }
      copy = s.copyOut(r, ep.transport().allocator());
    } catch (ProtocolException e) {
      ref.release();
      refuse(ep, e.getMessage());
      return null;
    } catch (TransportException e) {
      ref.release();
      LOG.warn("hrdma datanode: no memory to copy a write packet of {} out of shared memory, closing the"
          + " connection: {}", ep.remoteAddress(), e.getMessage());
      ep.close();
      return null;
    }
    // the reference took one of the connection's credits: held until the copy is done with, as a
    // packet sent by value holds its own, so that the copies a sender has waiting here stay within
    // the window it was granted (its slot goes back now: the copy is ours)
    copy.onRelease(ref::release);
    try {
      ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.WRITE_SHM_RELEASE, id,
          HrdmaProtos.ShmRelease.newBuilder().setOffset(r.getOffset()).build()));
    } catch (TransportException | RuntimeException e) {
      // the connection is going away: the sender's slots go with it; this packet is ours already
      LOG.debug("hrdma datanode: cannot give a write slot back to {}: {}", ep.remoteAddress(), e.toString());
    }
    return copy;
  }

  /** A malformed reference: counted, logged, the connection closed. */
  void refuse(Endpoint ep, String why) {
    ctx.writeShm().countBadReference();
    LOG.warn("hrdma datanode: closing the connection of {}: {}", ep.remoteAddress(), why);
    ep.close();
  }
}
