package org.hdfsrdma.transport.tcp;

import io.netty.channel.Channel;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.function.Function;
import org.hdfsrdma.proto.HrdmaProtos.TransportAddress;
import org.hdfsrdma.transport.Listener;
import org.hdfsrdma.transport.Transport;

/** A bound tcp server socket. Thread-safe; {@link #close()} is idempotent. */
public final class TcpListener implements Listener {
  private final TcpTransport transport;
  private final Channel server;
  private final InetSocketAddress local;
  private final Function<TcpListener, List<TransportAddress>> offers;

  TcpListener(TcpTransport transport, Channel server,
      Function<TcpListener, List<TransportAddress>> offers) {
    this.transport = transport;
    this.server = server;
    this.local = (InetSocketAddress) server.localAddress();
    this.offers = offers;
  }

  @Override
  public InetSocketAddress localAddress() {
    return local;
  }

  @Override
  public Transport transport() {
    return transport;
  }

  /** What the hello reply advertises (I/O thread). */
  List<TransportAddress> offers() {
    return offers.apply(this);
  }

  @Override
  public void close() {
    if (server.eventLoop().inEventLoop()) {
      server.close();
    } else {
      server.close().awaitUninterruptibly();
    }
    transport.listenerClosed(this);
  }

  @Override
  public String toString() {
    return "tcp-listener[" + local + "]";
  }
}
