package org.hdfsrdma.datanode;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;

/**
 * A peer's handler that keeps every message it is sent until the test releases it, so it grants
 * the DataNode no credits back meanwhile. Thread-safe: messages arrive on the transport's I/O
 * thread, the test takes or releases them from its own.
 */
final class HoardingPeer implements EndpointHandler {
  final Queue<RegisteredBuffer> held = new ConcurrentLinkedQueue<>();
  final AtomicInteger received = new AtomicInteger();

  @Override
  public void onMessage(Endpoint endpoint, RegisteredBuffer message) {
    received.incrementAndGet();
    held.add(message);
  }

  void releaseAll() {
    RegisteredBuffer m;
    while ((m = held.poll()) != null) {
      m.release();
    }
  }
}
