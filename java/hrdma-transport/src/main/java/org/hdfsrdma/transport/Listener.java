package org.hdfsrdma.transport;

import java.net.InetSocketAddress;

/** A bound listening address. Thread-safe; {@link #close()} is idempotent. */
public interface Listener extends AutoCloseable {
  InetSocketAddress localAddress();

  Transport transport();

  /** Stops accepting; endpoints already accepted stay open. */
  @Override
  void close();
}
