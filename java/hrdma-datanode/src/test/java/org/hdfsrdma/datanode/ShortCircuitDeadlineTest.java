package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.hdfsrdma.datanode.compat.FaultHooks;
import org.hdfsrdma.protocol.ShortCircuitSocket;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * hrdma.datanode.short-circuit.timeout-ms and the client's go-ahead: the timeout is the volume's
 * deadline for a request's opens, counted from the request, and starts again with the grant. A
 * volume that takes most of it leaves an honest client, which sends its go-ahead some time after
 * the grant, the whole timeout for it: the client gets the two descriptors. A client that never
 * sends it is still closed at the timeout after the grant, and the descriptors are closed. The
 * client here speaks the socket's protocol itself (one DataNode; the volume's opens are slowed
 * with FaultHooks' short-circuit open hook).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(120)
class ShortCircuitDeadlineTest {
  private static final long TIMEOUT_MS = 2_000;
  /** How long the volume takes to open the replica: most of the timeout. */
  private static final long VOLUME_MS = 1_500;
  /** When the client sends its go-ahead after the grant: past what the request's deadline left. */
  private static final long GO_AHEAD_AFTER_MS = 1_000;

  private MiniDFSCluster cluster;
  private LocatedBlock block;
  private Path socketDir;

  @BeforeAll
  void startCluster() throws IOException {
    socketDir = Files.createTempDirectory(Path.of("target"), "scr-deadline-").toAbsolutePath();
    Configuration conf = new Configuration();
    conf.set(DFSConfigKeys.DFS_DATANODE_PLUGINS_KEY, RdmaDataNodePlugin.class.getName());
    conf.set(ShortCircuitSocket.PATH_KEY, socketDir.resolve("dn-_PORT.sock").toString());
    conf.setLong(ShortCircuitServer.TIMEOUT_KEY, TIMEOUT_MS);
    File base = new File("target/test-dir/" + getClass().getSimpleName());
    cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(1).build();
    cluster.waitActive();
    DistributedFileSystem fs = cluster.getFileSystem();
    org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path("/scr-deadline");
    try (FSDataOutputStream out = fs.create(p, (short) 1)) {
      out.write(new byte[4096]);
    }
    block = fs.getClient().getLocatedBlocks(p.toString(), 0).get(0);
    FaultHooks.setShortCircuitOpenHook(volume -> {
      try {
        Thread.sleep(VOLUME_MS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
  }

  @AfterAll
  void stopCluster() {
    FaultHooks.setShortCircuitOpenHook(null);
    if (cluster != null) {
      cluster.shutdown();
    }
  }

  @AfterEach
  void descriptorsGiveBack() throws Exception {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (plugin().shortCircuitDescriptorsOpen() != 0 && System.nanoTime() < end) {
      Thread.sleep(10);
    }
    assertEquals(0, plugin().shortCircuitDescriptorsOpen(), "descriptors the DataNode holds");
  }

  /** A volume that took most of the timeout, and a go-ahead sent a second after the grant: served. */
  @Test
  void aGoAheadWithinTheTimeoutOfTheGrantGetsTheDescriptors() throws Exception {
    RdmaDataNodePlugin plugin = plugin();
    long granted = plugin.shortCircuitGranted();
    try (SocketChannel ch = connect()) {
      long t0 = System.nanoTime();
      writeFrame(ch, ShortCircuitSocket.request(block.getBlock(), block.getBlockToken()).toByteArray());
      BlockOpResponseProto reply = BlockOpResponseProto.parseFrom(readFrame(ch));
      long grantMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertEquals(Status.SUCCESS, reply.getStatus(), reply.getMessage());
      assertTrue(grantMs >= VOLUME_MS - 100, "granted after " + grantMs + " ms, the volume takes " + VOLUME_MS);
      Thread.sleep(GO_AHEAD_AFTER_MS);
      int carried;
      try {
        writeFrame(ch, new byte[0]); // the go-ahead
        carried = readToEnd(ch); // one byte with each descriptor; they are dropped, not received, here
      } catch (IOException e) {
        throw new AssertionError("the DataNode closed the connection before the go-ahead, sent "
            + (grantMs + GO_AHEAD_AFTER_MS) + " ms after the request and " + GO_AHEAD_AFTER_MS
            + " ms after the grant (timeout " + TIMEOUT_MS + " ms): " + e, e);
      }
      assertEquals(2, carried, "the block's and the .meta file's descriptors were not passed: the DataNode closed "
          + (grantMs + GO_AHEAD_AFTER_MS) + " ms after the request, " + GO_AHEAD_AFTER_MS + " ms after the grant");
    }
    assertEquals(granted + 1, plugin.shortCircuitGranted(), "counted as granted");
  }

  /** A client that takes its grant and sends no go-ahead is closed at the timeout after the grant. */
  @Test
  void aClientThatNeverSendsTheGoAheadIsClosedAtTheTimeoutAfterTheGrant() throws Exception {
    RdmaDataNodePlugin plugin = plugin();
    long granted = plugin.shortCircuitGranted();
    try (SocketChannel ch = connect()) {
      writeFrame(ch, ShortCircuitSocket.request(block.getBlock(), block.getBlockToken()).toByteArray());
      BlockOpResponseProto reply = BlockOpResponseProto.parseFrom(readFrame(ch));
      long t1 = System.nanoTime();
      assertEquals(Status.SUCCESS, reply.getStatus(), reply.getMessage());
      int carried = readToEnd(ch);
      long closedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t1);
      assertEquals(0, carried, "descriptors passed without a go-ahead");
      assertTrue(closedMs >= TIMEOUT_MS - 200 && closedMs < TIMEOUT_MS + 5_000,
          "closed " + closedMs + " ms after the grant, the timeout is " + TIMEOUT_MS + " ms");
    }
    assertEquals(granted, plugin.shortCircuitGranted(), "nothing passed");
  }

  private SocketChannel connect() throws IOException {
    SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
    ch.connect(UnixDomainSocketAddress.of(plugin().shortCircuitPath()));
    return ch;
  }

  private static void writeFrame(SocketChannel ch, byte[] body) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(4 + body.length).putInt(body.length).put(body).flip();
    while (b.hasRemaining()) {
      ch.write(b);
    }
  }

  private static byte[] readFrame(SocketChannel ch) throws IOException {
    ByteBuffer len = readFully(ch, 4);
    return readFully(ch, len.getInt()).array();
  }

  private static ByteBuffer readFully(SocketChannel ch, int n) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(n);
    while (b.hasRemaining()) {
      if (ch.read(b) < 0) {
        fail("the DataNode closed the connection after " + b.position() + " of " + n + " bytes");
      }
    }
    return b.flip();
  }

  /** Bytes read until the DataNode closes the connection. */
  private static int readToEnd(SocketChannel ch) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(64);
    int total = 0;
    int n;
    while ((n = ch.read(b)) >= 0) {
      total += n;
      b.clear();
    }
    return total;
  }

  private RdmaDataNodePlugin plugin() {
    String uuid = cluster.getDataNodes().get(0).getDatanodeUuid();
    return RdmaDataNodePlugin.running().stream().filter(p -> uuid.equals(p.datanodeUuid())).findFirst()
        .orElseThrow();
  }
}
