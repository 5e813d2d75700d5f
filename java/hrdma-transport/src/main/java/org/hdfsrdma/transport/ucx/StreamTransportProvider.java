package org.hdfsrdma.transport.ucx;

import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.hdfsrdma.transport.TransportProvider;

/** Provides the {@code stream} transport when libhrdma loads. */
public final class StreamTransportProvider implements TransportProvider {
  @Override
  public String name() {
    return "stream";
  }

  @Override
  public String unavailabilityCause() {
    return UcxTransportProvider.cause();
  }

  @Override
  public Transport create(TransportConf conf) throws TransportException {
    return new StreamTransport(conf);
  }
}
