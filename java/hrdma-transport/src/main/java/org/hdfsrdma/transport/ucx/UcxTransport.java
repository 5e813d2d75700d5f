package org.hdfsrdma.transport.ucx;

import java.net.InetSocketAddress;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.hdfsrdma.transport.Capability;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;

/**
 * The {@code ucx} transport: UCX active messages with rendezvous for bulk
 * data and RMA put/get for one-sided access. On InfiniBand or RoCE UCX uses
 * verbs (zero-copy RDMA from registered memory); without an HCA it uses tcp
 * and shared memory, as configured by {@code hrdma.ucx.config}.
 */
public final class UcxTransport extends AbstractUcxTransport {
  public UcxTransport(TransportConf conf) throws TransportException {
    super(conf);
  }

  @Override
  public String name() {
    return "ucx";
  }

  @Override
  public Set<Capability> capabilities() {
    Set<Capability> s = super.capabilities();
    s.add(Capability.ONE_SIDED);
    return s;
  }

  @Override
  UcxConnection newConnection(InetSocketAddress remote, EndpointHandler handler, boolean client,
      CompletableFuture<Endpoint> connected) {
    return new UcxEndpoint(this, remote, handler, client, connected);
  }
}
