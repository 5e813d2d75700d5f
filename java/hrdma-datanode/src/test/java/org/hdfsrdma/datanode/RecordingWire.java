package org.hdfsrdma.datanode;

import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.transport.AbstractEndpoint;
import org.hdfsrdma.transport.BufferAllocator;
import org.hdfsrdma.transport.Capability;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.Listener;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.Transport;

/**
 * A connection for the DataNode's unit tests, past its hello, whose sends complete at once on
 * the sending thread: each message sent is decoded and handed to {@code sent}, or, when it (or a
 * field {@code sent} reads) does not decode (a packet sent by value is raw bytes here), the error
 * to {@code undecodable}; then
 * the buffer is released.
 */
final class RecordingWire extends AbstractEndpoint {
  /** Takes a message sent; may read fields that do not decode. */
  interface Sent {
    void accept(Message m) throws ProtocolException;
  }

  private final Sent sent;
  private final Consumer<ProtocolException> undecodable;
  private final Transport transport;

  RecordingWire(BufferAllocator pool, Sent sent, Consumer<ProtocolException> undecodable) {
    super(new InetSocketAddress("127.0.0.1", 1), (e, m) -> m.release());
    this.sent = sent;
    this.undecodable = undecodable;
    this.transport = new Transport() {
      @Override
      public String name() {
        return "fake";
      }

      @Override
      public Set<Capability> capabilities() {
        return EnumSet.noneOf(Capability.class);
      }

      @Override
      public BufferAllocator allocator() {
        return pool;
      }

      @Override
      public Listener listen(InetSocketAddress local, EndpointHandler handler) {
        throw new UnsupportedOperationException();
      }

      @Override
      public CompletableFuture<Endpoint> connect(InetSocketAddress remote, EndpointHandler handler) {
        throw new UnsupportedOperationException();
      }

      @Override
      public void close() {}
    };
    helloDone(1 << 20, 1 << 20, 1 << 20, EnumSet.noneOf(Capability.class), true);
  }

  @Override
  public Transport transport() {
    return transport;
  }

  @Override
  protected boolean inIoThread() {
    return true;
  }

  @Override
  protected void executeOnIo(Runnable task) {
    task.run();
  }

  @Override
  protected void doSend(RegisteredBuffer message, SendCompletion done) {
    try {
      sent.accept(MessageCodec.decode(message));
    } catch (ProtocolException e) {
      undecodable.accept(e);
    } finally {
      message.release();
    }
    done.succeeded();
  }

  @Override
  protected void doSendCredits(int messages) {}

  @Override
  protected void doClose() {
    closed(null);
  }
}
