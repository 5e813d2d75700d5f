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
 * The {@code stream} transport: an SDP-style byte stream over the same fabric
 * (the UCP stream API), with socket semantics. Small messages are copied into
 * one frame; large ones go from and into registered buffers without a copy.
 */
public final class StreamTransport extends AbstractUcxTransport {
  public StreamTransport(TransportConf conf) throws TransportException {
    super(conf);
  }

  @Override
  public String name() {
    return "stream";
  }

  @Override
  public Set<Capability> capabilities() {
    Set<Capability> s = super.capabilities();
    s.add(Capability.ONE_SIDED);
    s.add(Capability.PLACEMENT);
    return s;
  }

  @Override
  UcxConnection newConnection(InetSocketAddress remote, EndpointHandler handler, boolean client,
      CompletableFuture<Endpoint> connected) {
    return new StreamEndpoint(this, remote, handler, client, connected);
  }
}
