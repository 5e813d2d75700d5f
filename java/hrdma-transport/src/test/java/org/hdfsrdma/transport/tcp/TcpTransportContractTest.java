package org.hdfsrdma.transport.tcp;

import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportContractTest;

/** The transport contract, over tcp. */
class TcpTransportContractTest extends TransportContractTest {
  @Override
  protected Transport newTransport(TransportConf conf) {
    return new TcpTransport(conf);
  }

  @Override
  protected int openEndpoints(Transport t) {
    return ((TcpTransport) t).openEndpoints();
  }
}
