package org.hdfsrdma.transport.tcp;

import java.net.InetSocketAddress;
import java.net.Socket;
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

  @Override
  protected long pendingHellosEvicted(Transport t) {
    return ((TcpTransport) t).pendingHellosEvicted();
  }

  @Override
  protected SilentPeer silentPeer(InetSocketAddress address) throws Exception {
    Socket s = new Socket(address.getAddress(), address.getPort());
    return new SilentPeer() {
      @Override
      public boolean closedByServer(long waitMs) throws Exception {
        s.setSoTimeout((int) waitMs);
        try {
          while (s.getInputStream().read() >= 0) {
            // a REFUSED reply, then the end of the stream
          }
          return true;
        } catch (java.net.SocketTimeoutException e) {
          return false;
        } catch (java.io.IOException e) {
          return true; // reset
        }
      }

      @Override
      public void close() throws java.io.IOException {
        s.close();
      }
    };
  }
}
