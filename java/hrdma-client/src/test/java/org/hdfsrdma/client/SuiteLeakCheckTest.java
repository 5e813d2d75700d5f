package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.List;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.transport.ProcessResources;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;

/**
 * Runs after every other test class of this module (junit-platform.properties
 * orders classes by {@link Order}): once every cluster and client of the
 * suite is shut down, no plugin runs and nothing of the transports is left
 * in this JVM: no endpoint, pooled buffer, UCX context, worker, endpoint or
 * registered region, no short-circuit verifier or opener thread, no thread
 * standing for a DataNode's write as its replica's writer or forwarding it over
 * stock's protocol, no received
 * descriptor held, no received file mapped and no domain socket of a descriptor
 * exchange open.
 */
@Order(Integer.MAX_VALUE)
class SuiteLeakCheckTest {
  @Test
  void nothingIsLeftAfterTheSuite() throws InterruptedException {
    String left = ProcessResources.awaitNothingLeft(20_000,
        () -> RdmaDataNodePlugin.running().isEmpty() && verifierThreads().isEmpty()
            && org.hdfsrdma.nativelib.NativeFiles.fdsHeld() == 0 && org.hdfsrdma.nativelib.NativeFiles.mappedBytes() == 0
            && org.hdfsrdma.nativelib.NativeDomainSocket.openSockets() == 0,
        () -> "plugins " + RdmaDataNodePlugin.running() + ", short-circuit verifier, opener and replica writer threads "
            + verifierThreads() + ", received descriptors held " + org.hdfsrdma.nativelib.NativeFiles.fdsHeld()
            + ", bytes of received files mapped " + org.hdfsrdma.nativelib.NativeFiles.mappedBytes()
            + ", domain sockets open " + org.hdfsrdma.nativelib.NativeDomainSocket.openSockets());
    assertNull(left, "left after the suite: " + left);
  }

  /**
   * Live threads of the clients' short-circuit verifiers and openers (each client ends its own when closed)
   * and of the DataNodes' writes (each ends with its write: its replica's writer, and the sender and ack
   * reader of a next DataNode reached over stock's protocol).
   */
  private static List<String> verifierThreads() {
    return Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
        .filter(n -> n.startsWith(RdmaBlockClient.VERIFIER_THREAD_PREFIX)
            || n.startsWith(RdmaBlockClient.OPENER_THREAD_PREFIX)
            || n.startsWith("hrdma-dn-scr-") || n.startsWith("hrdma-writer-")
            || n.startsWith("hrdma-stock-mirror-")).toList();
  }
}
