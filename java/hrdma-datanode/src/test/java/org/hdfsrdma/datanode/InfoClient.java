package org.hdfsrdma.datanode;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.hdfsrdma.protocol.InfoReply;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;
import org.hdfsrdma.transport.select.HrdmaConnector;
import org.hdfsrdma.transport.select.HrdmaConnector.Connection;

/** Test client: one request, one reply over a negotiated connection. */
final class InfoClient {
  private InfoClient() {}

  record Answer(InfoReply info, String transport) {}

  /** Replies, copied out of their registered buffers. */
  static final class Replies implements EndpointHandler {
    final BlockingQueue<ByteBuffer> queue = new LinkedBlockingQueue<>();

    @Override
    public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
      ByteBuffer b = ByteBuffer.allocate(message.readableBytes());
      b.put(message.nio().duplicate()).flip();
      message.release();
      queue.add(b);
    }
  }

  static Answer info(HrdmaConnector connector, InetSocketAddress service) throws Exception {
    Replies replies = new Replies();
    Connection c = connector.connect(service, replies);
    try {
      c.endpoint().send(MessageCodec.encode(c.endpoint().transport().allocator(), MessageKind.INFO_REQUEST,
          11, null, null)).get(10, TimeUnit.SECONDS);
      Message m = MessageCodec.decode(poll(replies));
      if (m.requestId() != 11) {
        throw new AssertionError("reply to request " + m.requestId() + ", expected 11");
      }
      return new Answer(m.infoReply(), c.transport());
    } finally {
      c.endpoint().close();
      c.endpoint().closeFuture().handle((v, t) -> null).get(10, TimeUnit.SECONDS);
    }
  }

  /** Sends raw bytes and returns the raw reply. */
  static ByteBuffer raw(HrdmaConnector connector, InetSocketAddress service, byte[] request)
      throws Exception {
    Replies replies = new Replies();
    Connection c = connector.connect(service, replies);
    try {
      RegisteredBuffer m = c.endpoint().transport().allocator().allocate(request.length);
      m.nio().put(m.nio().position(), request);
      c.endpoint().send(m).get(10, TimeUnit.SECONDS);
      return poll(replies);
    } finally {
      c.endpoint().close();
      c.endpoint().closeFuture().handle((v, t) -> null).get(10, TimeUnit.SECONDS);
    }
  }

  private static ByteBuffer poll(Replies replies) throws Exception {
    ByteBuffer b = replies.queue.poll(10, TimeUnit.SECONDS);
    if (b == null) {
      throw new TransportException.Timeout("no reply within 10 s");
    }
    return b;
  }
}
