package org.hdfsrdma.transport.tcp;

import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.hdfsrdma.transport.TransportProvider;

/** The {@code tcp} transport: Netty over kernel TCP, runs everywhere. */
public final class TcpTransportProvider implements TransportProvider {
  public static final String NAME = "tcp";

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public String unavailabilityCause() {
    return null;
  }

  @Override
  public Transport create(TransportConf conf) throws TransportException {
    return new TcpTransport(conf);
  }
}
