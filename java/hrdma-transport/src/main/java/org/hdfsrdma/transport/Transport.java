package org.hdfsrdma.transport;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * A way to move messages between two processes: {@code ucx} (UCX active
 * messages; verbs/RoCE on InfiniBand hardware, tcp or shared memory here),
 * {@code stream} (the UCP stream API, socket semantics) or {@code tcp} (Netty).
 *
 * <p>Thread-safe. A transport owns its I/O threads and its {@link #allocator()};
 * {@link #close()} closes every listener and endpoint it created.
 */
public interface Transport extends AutoCloseable {

  /** The name used in {@code hrdma.transport.order}: "ucx", "stream", "tcp". */
  String name();

  Set<Capability> capabilities();

  /** Buffers this transport sends from and receives into without a copy. */
  BufferAllocator allocator();

  /**
   * Listens on {@code local} (port 0 picks a free port). Accepted endpoints
   * are reported to {@code handler.onConnected} after their hello exchange.
   */
  Listener listen(InetSocketAddress local, EndpointHandler handler) throws IOException;

  /**
   * Connects and runs the hello exchange. The future fails with a
   * {@link TransportException} if the peer cannot be reached, refuses, or
   * speaks another protocol version.
   */
  CompletableFuture<Endpoint> connect(InetSocketAddress remote, EndpointHandler handler);

  /** Closes listeners and endpoints, then releases the transport's resources. */
  @Override
  void close();
}
