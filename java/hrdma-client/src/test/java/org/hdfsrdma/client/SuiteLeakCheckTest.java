package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertNull;

import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.transport.ProcessResources;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;

/**
 * Runs after every other test class of this module (junit-platform.properties
 * orders classes by {@link Order}): once every cluster and client of the
 * suite is shut down, no plugin runs and nothing of the transports is left
 * in this JVM: no endpoint, pooled buffer, UCX context, worker, endpoint or
 * registered region.
 */
@Order(Integer.MAX_VALUE)
class SuiteLeakCheckTest {
  @Test
  void nothingIsLeftAfterTheSuite() throws InterruptedException {
    String left = ProcessResources.awaitNothingLeft(20_000, () -> RdmaDataNodePlugin.running().isEmpty(),
        () -> "plugins " + RdmaDataNodePlugin.running());
    assertNull(left, "left after the suite: " + left);
  }
}
