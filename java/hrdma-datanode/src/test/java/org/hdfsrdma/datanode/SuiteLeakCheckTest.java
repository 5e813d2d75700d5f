package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertNull;

import org.hdfsrdma.transport.ProcessResources;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;

/**
 * Runs after every other test class of this module (junit-platform.properties
 * orders classes by {@link Order}): once every cluster and client of the
 * suite is shut down, no plugin runs and nothing of the transports is left
 * in this JVM: no endpoint, pooled buffer, UCX context, worker, endpoint or
 * registered region, and no domain socket of a write segment's fetch open.
 */
@Order(Integer.MAX_VALUE)
class SuiteLeakCheckTest {
  @Test
  void nothingIsLeftAfterTheSuite() throws InterruptedException {
    String left = ProcessResources.awaitNothingLeft(20_000, () -> RdmaDataNodePlugin.running().isEmpty()
            && org.hdfsrdma.nativelib.NativeDomainSocket.openSockets() == 0,
        () -> "plugins " + RdmaDataNodePlugin.running() + ", domain sockets open (write segments fetched from the "
            + "next DataNode) " + org.hdfsrdma.nativelib.NativeDomainSocket.openSockets());
    assertNull(left, "left after the suite: " + left);
  }
}
