package org.hdfsrdma.transport.ucx;

import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportContractTest.SilentPeer;

/**
 * Silent peers over ucx and stream for the contract suite: a connection from a transport of
 * its own that never says HELLO. The silent side's connect never completes its hello, so it
 * fails exactly when the server closes the connection.
 */
final class UcxSilentPeers {
  private UcxSilentPeers() {}

  static SilentPeer open(boolean stream, TransportConf conf, InetSocketAddress address) throws Exception {
    TransportConf c = conf.with(TransportConf.CONNECT_TIMEOUT_KEY, "30000");
    AbstractUcxTransport t = stream ? new StreamTransport(c) : new UcxTransport(c);
    t.sayHello = false;
    CompletableFuture<Endpoint> connect = t.connect(address, (ep, m) -> m.release());
    return new SilentPeer() {
      @Override
      public boolean closedByServer(long waitMs) throws InterruptedException {
        try {
          connect.get(waitMs, TimeUnit.MILLISECONDS);
          throw new AssertionError("a connection that never said HELLO completed its hello");
        } catch (ExecutionException e) {
          return true;
        } catch (TimeoutException e) {
          return false;
        }
      }

      @Override
      public void close() {
        t.close();
      }
    };
  }
}
