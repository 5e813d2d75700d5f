package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.RdmaPorts;
import org.hdfsrdma.transport.AbstractEndpoint;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.select.HrdmaConnector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A peer that completes its handshake, then sends thousands of requests with small answers
 * (INFO_REQUEST; messages refused with an ERROR) and takes none of its answers (grants no
 * credits back): the DataNode queues at most two credit windows of answers for it (before, all
 * of them), grants it no more credits so its sends stall, serves other clients meanwhile, and
 * closes the stalled connection at the idle timeout. On every transport.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AnswerBacklogTest {
  private static final long WAIT_MS = 30_000;
  private static final long IDLE_MS = 3_000;
  private static final int REQUESTS = 3000;
  private static final int CREDITS = TransportConf.CREDITS_DEFAULT;

  private MiniDFSCluster cluster;
  private Configuration conf;

  @BeforeAll
  void startCluster() throws IOException {
    conf = new Configuration();
    conf.set(DFSConfigKeys.DFS_DATANODE_PLUGINS_KEY, RdmaDataNodePlugin.class.getName());
    conf.set(TransportConf.CONNECT_TIMEOUT_KEY, "3000");
    conf.setLong(HrdmaDataNodeKeys.IDLE_TIMEOUT_MS_KEY, IDLE_MS);
    File base = new File("target/test-dir/" + getClass().getSimpleName());
    cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(1).build();
    cluster.waitActive();
  }

  @AfterAll
  void stopCluster() {
    if (cluster != null) {
      cluster.shutdown();
    }
  }

  @ParameterizedTest(name = "INFO_REQUEST over {0}")
  @ValueSource(strings = {"tcp", "ucx", "stream"})
  @Timeout(120)
  void infoRequestsWhoseAnswersAreNeverTakenQueueAtMostTwoWindows(String transport) throws Exception {
    flood(transport, MessageKind.INFO_REQUEST);
  }

  @ParameterizedTest(name = "refused messages over {0}")
  @ValueSource(strings = {"tcp", "ucx", "stream"})
  @Timeout(120)
  void refusedMessagesWhoseErrorsAreNeverTakenQueueAtMostTwoWindows(String transport) throws Exception {
    flood(transport, MessageKind.INFO_REPLY); // not a request: each is answered ERROR_UNSUPPORTED
  }

  private void flood(String transport, MessageKind kind) throws Exception {
    DatanodeInfo dn = cluster.getFileSystem().getDataNodeStats(DatanodeReportType.LIVE)[0];
    InetSocketAddress service = new InetSocketAddress(dn.getIpAddr(), RdmaPorts.pluginPort(dn, conf));
    RdmaDataNodePlugin plugin = RdmaDataNodePlugin.running().stream()
        .filter(p -> dn.getDatanodeUuid().equals(p.datanodeUuid())).findFirst().orElseThrow();
    long idleClosed = plugin.idleConnectionsClosed();
    long stalls = plugin.answerBacklogStalls();
    HoardingPeer hoarder = new HoardingPeer();
    TransportConf tc = TransportConf.defaults().with(TransportConf.ORDER_KEY, transport);
    try (HrdmaConnector connector = new HrdmaConnector(tc)) {
      HrdmaConnector.Connection c = connector.connect(service, hoarder);
      assertEquals(transport, c.transport());
      Endpoint ep = c.endpoint();
      try {
        List<CompletableFuture<Void>> sends = new ArrayList<>();
        for (int i = 0; i < REQUESTS; i++) {
          sends.add(ep.send(MessageCodec.encode(ep.transport().allocator(), kind, i + 1, null, null)));
        }
        // stalled and quiet: the DataNode grants nothing, answered all that reached it, and the
        // rest of ours wait for its credits
        AtomicInteger mostQueued = new AtomicInteger();
        await(() -> mostQueued.accumulateAndGet(plugin.queuedAnswers(), Math::max) >= 0
            && plugin.answerBacklogStalls() > stalls && ep.pendingSends() > 0
            && hoarder.received.get() + plugin.queuedAnswers() == REQUESTS - ep.pendingSends(),
            () -> "no stall: sent " + (REQUESTS - ep.pendingSends()) + ", answers taken " + hoarder.received
                + ", queued " + plugin.queuedAnswers() + " (" + mostQueued + " at most)");
        int queued = plugin.queuedAnswers();
        assertTrue(queued <= 2 * CREDITS, queued + " answers queued for a peer that takes none");
        int reached = REQUESTS - ep.pendingSends();
        assertTrue(reached <= 3 * CREDITS, reached + " requests taken from a peer that takes no answers");
        assertFalse(ep.isWritable());

        // another client is served meanwhile, over the same transport
        try (HrdmaConnector other = new HrdmaConnector(tc)) {
          assertEquals(dn.getDatanodeUuid(), InfoClient.info(other, service).info().datanodeUuid());
        }

        // the stalled connection sends nothing more: closed at the idle timeout, its sends failed
        ep.closeFuture().handle((v, t) -> null).get(IDLE_MS + WAIT_MS, TimeUnit.MILLISECONDS);
        assertTrue(plugin.idleConnectionsClosed() > idleClosed, "not closed by the idle timeout");
        for (CompletableFuture<Void> f : sends) {
          f.handle((v, t) -> null).get(WAIT_MS, TimeUnit.MILLISECONDS);
        }
        await(() -> plugin.queuedAnswers() == 0, () -> plugin.queuedAnswers() + " answers still queued");
      } finally {
        ep.close();
        ep.closeFuture().handle((v, t) -> null).get(WAIT_MS, TimeUnit.MILLISECONDS);
        hoarder.releaseAll();
      }
    }
  }

  private static void await(BooleanSupplier cond, Supplier<String> what) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
    while (!cond.getAsBoolean()) {
      if (System.nanoTime() > end) {
        fail(what.get());
      }
      Thread.sleep(10);
    }
  }
}
