package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNodeFaultInjector;
import org.apache.hadoop.hdfs.server.datanode.ReplicaInPipeline;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * Stock's DataNode fault injector ({@link DataNodeFaultInjector}) is called on the plugin's
 * write and read paths where stock's DataXceiver, BlockReceiver, PacketResponder and
 * BlockSender call it, with the same arguments, so Hadoop's fault tests inject their faults
 * into writes and reads that go over hrdma; and an injected failure means what it means to
 * stock.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class DataNodeFaultHooksTest {
  private static final int BLOCK = PluginCluster.BLOCK;

  private MiniDFSCluster cluster;
  private DistributedFileSystem stock;
  private final DataNodeFaultInjector before = DataNodeFaultInjector.get();

  @BeforeAll
  void start() throws Exception {
    cluster = PluginCluster.start(PluginCluster.baseConf(), getClass(), 2);
    stock = cluster.getFileSystem();
  }

  /**
   * A client of its own for each test: a DataNode one test sends to the stock path stays
   * there for that client. A generous connect timeout: a loaded machine is not a failure.
   */
  private RdmaDistributedFileSystem ours() throws IOException {
    org.apache.hadoop.conf.Configuration c = PluginCluster.rdmaClientConf(cluster);
    c.set(org.hdfsrdma.transport.TransportConf.CONNECT_TIMEOUT_KEY, "30000");
    return (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
  }

  @AfterEach
  void restore() {
    DataNodeFaultInjector.set(before);
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(null, cluster);
  }

  /** Records each hook's calls: name, then its address argument where it has one. */
  private static final class Recorder extends DataNodeFaultInjector {
    final Map<String, List<String>> calls = new ConcurrentHashMap<>();

    void note(String hook, String arg) {
      calls.computeIfAbsent(hook, k -> new CopyOnWriteArrayList<>()).add(String.valueOf(arg));
    }

    @Override
    public void failMirrorConnection() {
      note("failMirrorConnection", null);
    }

    @Override
    public void writeBlockAfterFlush() {
      note("writeBlockAfterFlush", null);
    }

    @Override
    public void stopSendingPacketDownstream(String mirror) {
      note("stopSendingPacketDownstream", mirror);
    }

    @Override
    public void logDelaySendingPacketDownstream(String mirror, long millis) {
      note("logDelaySendingPacketDownstream", mirror);
    }

    @Override
    public void delayWriteToDisk() {
      note("delayWriteToDisk", null);
    }

    @Override
    public void delaySendingAckToUpstream(String upstream) {
      note("delaySendingAckToUpstream", upstream);
    }

    @Override
    public void logDelaySendingAckToUpstream(String mirror, long millis) {
      note("logDelaySendingAckToUpstream", mirror);
    }

    @Override
    public void failPipeline(ReplicaInPipeline replica, String mirror) {
      note("failPipeline", replica.getBlockId() + "," + mirror);
      // as stock's responder: the bytes of the packet being acked are on disk, not yet acked
      if (replica.getBytesAcked() < replica.getBytesOnDisk()) {
        note("failPipeline before its packet's bytes are acked", replica.getBytesAcked() + "<"
            + replica.getBytesOnDisk());
      }
    }

    @Override
    public void throwTooManyOpenFiles() {
      note("throwTooManyOpenFiles", null);
    }
  }

  private byte[] read(FileSystem fs, Path p, int size) throws IOException {
    byte[] got = new byte[size];
    try (FSDataInputStream in = fs.open(p)) {
      in.readFully(0, got);
    }
    return got;
  }

  @Test
  void aWriteAndAReadOverHrdmaCallStocksHooksWithStocksArguments() throws Exception {
    try (RdmaDistributedFileSystem ours = ours()) {
      writeAndRead(ours);
    }
  }

  private void writeAndRead(RdmaDistributedFileSystem ours) throws Exception {
    Path p = new Path("/hooks/all");
    byte[] data = PluginCluster.random(BLOCK + 1000, 1);
    Recorder r = new Recorder();
    long written = ours.rdmaBytesWritten();
    long fallbacks = ours.stockWriteFallbacks();
    DataNodeFaultInjector.set(r);
    try (FSDataOutputStream out = ours.create(p, (short) 2)) {
      out.write(data);
    }
    assertEquals(data.length, ours.rdmaBytesWritten() - written, "the write went over hrdma");
    assertEquals(fallbacks, ours.stockWriteFallbacks());
    long read = ours.rdmaBytesRead();
    assertArrayEquals(data, read(ours, p, data.length));
    assertEquals(data.length, ours.rdmaBytesRead() - read, "the read went over hrdma");
    DataNodeFaultInjector.set(before);

    Set<String> xfer = cluster.getDataNodes().stream().map(dn -> dn.getDatanodeId().getXferAddr())
        .collect(Collectors.toSet());
    // two blocks, two DataNodes each: the first of each pipeline connects to the second
    assertEquals(2, r.calls.getOrDefault("failMirrorConnection", List.of()).size(), r.calls.toString());
    assertEquals(4, r.calls.getOrDefault("writeBlockAfterFlush", List.of()).size(), r.calls.toString());
    for (String hook : List.of("stopSendingPacketDownstream", "logDelaySendingPacketDownstream")) {
      List<String> mirrors = r.calls.getOrDefault(hook, List.of());
      assertTrue(mirrors.size() >= 2, hook + ": " + r.calls);
      assertTrue(xfer.containsAll(mirrors), hook + " names the mirror by its xfer address: " + mirrors);
    }
    assertTrue(r.calls.getOrDefault("delayWriteToDisk", List.of()).size() >= 4, r.calls.toString());
    assertTrue(r.calls.getOrDefault("delaySendingAckToUpstream", List.of()).size() >= 4, r.calls.toString());
    assertTrue(r.calls.getOrDefault("logDelaySendingAckToUpstream", List.of()).size() >= 4, r.calls.toString());
    assertTrue(r.calls.getOrDefault("failPipeline", List.of()).size() >= 4, r.calls.toString());
    // each block's data packet, at each of its two DataNodes (Hadoop's
    // TestClientProtocolForPipelineRecovery#testPipelineRecoveryWithTransferBlock waits for this)
    assertTrue(r.calls.getOrDefault("failPipeline before its packet's bytes are acked", List.of()).size() >= 4,
        r.calls.toString());
    assertTrue(r.calls.getOrDefault("throwTooManyOpenFiles", List.of()).size() >= 2, r.calls.toString());
  }

  /**
   * As stock's BlockSender: "too many open files" opening a replica is an error answer to that
   * read; the client reads the other replica, all of it over hrdma.
   */
  @Test
  void aReplicaThatCannotBeOpenedIsReadFromTheOther() throws Exception {
    Path p = new Path("/hooks/open");
    byte[] data = PluginCluster.random(BLOCK / 2, 2);
    try (FSDataOutputStream out = stock.create(p, (short) 2)) {
      out.write(data);
    }
    AtomicInteger thrown = new AtomicInteger();
    java.util.concurrent.atomic.AtomicReference<String> firstBy = new java.util.concurrent.atomic.AtomicReference<>();
    DataNodeFaultInjector.set(new DataNodeFaultInjector() {
      @Override
      public void throwTooManyOpenFiles() throws FileNotFoundException {
        if (thrown.getAndIncrement() == 0) { // the first replica the first read opens
          firstBy.set(Thread.currentThread().getName());
          throw new FileNotFoundException("Too many open files");
        }
      }
    });
    try (RdmaDistributedFileSystem ours = ours()) {
      long read = ours.rdmaBytesRead();
      for (int i = 0; i < 4; i++) {
        assertArrayEquals(data, read(ours, p, data.length));
      }
      // ours, as stock, reads the other replica; the refusing DataNode is then read through the
      // stock path for a while (a speed difference only), so only the first read must be ours
      assertTrue(ours.rdmaBytesRead() - read >= data.length, "no read went over hrdma");
    }
    assertTrue(firstBy.get() != null && firstBy.get().startsWith("hrdma"),
        "the first open of a replica was not the plugin's: " + firstBy.get());
    assertTrue(thrown.get() >= 2, "the refused read was not read from the other replica: " + thrown);
  }
}
