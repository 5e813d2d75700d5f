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
 * registered region, and no short-circuit verifier thread.
 */
@Order(Integer.MAX_VALUE)
class SuiteLeakCheckTest {
  @Test
  void nothingIsLeftAfterTheSuite() throws InterruptedException {
    String left = ProcessResources.awaitNothingLeft(20_000,
        () -> RdmaDataNodePlugin.running().isEmpty() && verifierThreads().isEmpty(),
        () -> "plugins " + RdmaDataNodePlugin.running() + ", short-circuit verifier threads " + verifierThreads());
    assertNull(left, "left after the suite: " + left);
  }

  /** Live threads of the clients' short-circuit verifiers (each client ends its own when closed). */
  private static List<String> verifierThreads() {
    return Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
        .filter(n -> n.startsWith(RdmaBlockClient.VERIFIER_THREAD_PREFIX)).toList();
  }
}
