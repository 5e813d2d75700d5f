package org.hdfsrdma.transport.ucx;

import java.net.InetSocketAddress;
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

  @Override
  protected long pendingHellosEvicted(Transport t) {
    return ((AbstractUcxTransport) t).pendingHellosEvicted();
  }

  @Override
  protected SilentPeer silentPeer(InetSocketAddress address) throws Exception {
    return UcxSilentPeers.open(false, baseConf(), address);
  }
}
