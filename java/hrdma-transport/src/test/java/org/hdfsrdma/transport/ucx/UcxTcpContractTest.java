package org.hdfsrdma.transport.ucx;

import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportContractTest;

/** The transport contract: ucx over UCX's tcp transport. */
class UcxTcpContractTest extends TransportContractTest {
  @Override
  protected TransportConf baseConf() {
    return super.baseConf().with(TransportConf.UCX_CONFIG_KEY, "TLS=tcp");
  }

  @Override
  protected Transport newTransport(TransportConf conf) throws Exception {
    return new UcxTransport(conf);
  }

  @Override
  protected int openEndpoints(Transport t) {
    return ((AbstractUcxTransport) t).openEndpoints();
  }
}
