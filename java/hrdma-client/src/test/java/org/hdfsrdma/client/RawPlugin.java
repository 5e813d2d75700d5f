package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.nio.ByteBuffer;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.hdfsrdma.transport.select.HrdmaConnector;

/**
 * A test's own connection to a DataNode's plugin over tcp, below the client: the test sends
 * what it builds, and every message that arrives is decoded from a copy (its buffer given
 * back at once) and queued in arrival order. Not thread-safe: one test thread.
 */
final class RawPlugin implements AutoCloseable {
  private final HrdmaConnector connector;
  private final BlockingQueue<Message> replies = new LinkedBlockingQueue<>();
  private volatile Predicate<Message> holdAt;
  private volatile CountDownLatch gate;
  final Endpoint ep;

  RawPlugin(InetSocketAddress plugin) throws TransportException {
    connector = new HrdmaConnector(TransportConf.defaults().with(TransportConf.ORDER_KEY, "tcp"));
    try {
      ep = connector.connect(plugin, new EndpointHandler() {
        @Override
        public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
          byte[] copy = new byte[message.readableBytes()];
          message.nio().duplicate().get(copy);
          message.release();
          Message m;
          try {
            m = MessageCodec.decode(ByteBuffer.wrap(copy));
          } catch (ProtocolException e) {
            throw new AssertionError(e);
          }
          Predicate<Message> h = holdAt;
          if (h != null && h.test(m)) { // the connection stops here: the plugin's sends back up
            holdAt = null;
            try {
              gate.await(20, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
          replies.add(m);
        }
      }).endpoint();
    } catch (TransportException | RuntimeException e) {
      connector.close();
      throw e;
    }
  }

  /**
   * Stops taking messages at the first one that {@code at} accepts (that one included) until
   * {@link #release}, or for 20 s at most: the plugin's sends on this connection back up
   * behind it, while what the test sends still reaches the plugin.
   */
  void holdAt(Predicate<Message> at) {
    gate = new CountDownLatch(1);
    holdAt = at;
  }

  void release() {
    CountDownLatch g = gate;
    if (g != null) {
      g.countDown();
    }
  }

  /** The next message to arrive; fails the test after 20 s without one. */
  Message next() throws InterruptedException {
    Message m = replies.poll(20, TimeUnit.SECONDS);
    assertNotNull(m, "no message from the plugin within 20 s");
    return m;
  }

  /** The next message to arrive within {@code ms}, or null. */
  Message poll(long ms) throws InterruptedException {
    return replies.poll(ms, TimeUnit.MILLISECONDS);
  }

  @Override
  public void close() {
    release();
    ep.close();
    connector.close();
  }
}
