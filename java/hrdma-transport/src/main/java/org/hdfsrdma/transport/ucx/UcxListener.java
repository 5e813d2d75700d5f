package org.hdfsrdma.transport.ucx;

import java.net.InetSocketAddress;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.Listener;
import org.hdfsrdma.transport.Transport;

/** A UCX listener: accepts every connection request, then waits for its hello. */
final class UcxListener implements Listener, UcxWorkerLoop.ListenerSink {
  private final AbstractUcxTransport transport;
  final long handle;
  final long token;
  private final InetSocketAddress local;
  final EndpointHandler handler;

  UcxListener(AbstractUcxTransport transport, long handle, long token, InetSocketAddress local,
      EndpointHandler handler) {
    this.transport = transport;
    this.handle = handle;
    this.token = token;
    this.local = local;
    this.handler = handler;
  }

  @Override
  public void onConnRequest(long request, String peer) {
    transport.accept(this, request, peer);
  }

  @Override
  public InetSocketAddress localAddress() {
    return local;
  }

  @Override
  public Transport transport() {
    return transport;
  }

  @Override
  public void close() {
    transport.closeListener(this);
  }
}
