package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.ClientProtocol;
import org.apache.hadoop.hdfs.protocol.DatanodeID;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo.DatanodeInfoBuilder;
import org.apache.hadoop.hdfs.protocol.HdfsFileStatus;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.io.EnumSetWritable;
import org.hdfsrdma.datanode.HrdmaDataNodeKeys;
import org.hdfsrdma.protocol.RdmaPorts;
import org.hdfsrdma.transport.TransportConf;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * A pipeline whose second DataNode accepts the first's connection and never answers its hello:
 * the first DataNode gives up on it within its set-up deadline (the set-up timeout and 5 s per
 * DataNode after it) and answers WRITE_RESPONSE naming it as firstBadLink, while the client
 * still waits (its timeout and 5 s per DataNode, and a connect timeout), so the client excludes
 * the second DataNode, not the healthy first one. The DataNodes' hello wait is far longer than
 * either: before, the first DataNode waited it out and the client blamed the first.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class SilentMirrorPipelineTest {
  private static final int DATANODE_HELLO_WAIT_MS = 40_000;
  private static final int SETUP_TIMEOUT_MS = 1000;
  private static final int CLIENT_TIMEOUT_MS = 4000;

  private MiniDFSCluster cluster;

  @BeforeAll
  void start() throws Exception {
    Configuration conf = PluginCluster.baseConf();
    conf.set(TransportConf.HELLO_TIMEOUT_KEY, String.valueOf(DATANODE_HELLO_WAIT_MS));
    conf.setLong(HrdmaDataNodeKeys.WRITE_SETUP_TIMEOUT_KEY, SETUP_TIMEOUT_MS);
    // the pipeline is made up here (a NameNode would not place a replica on a DataNode it does not
    // know): no block token, which names the storages the NameNode chose
    conf.setBoolean(org.apache.hadoop.hdfs.DFSConfigKeys.DFS_BLOCK_ACCESS_TOKEN_ENABLE_KEY, false);
    cluster = PluginCluster.start(conf, getClass(), 1);
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(null, cluster);
  }

  @Test
  void theClientIsToldTheSilentSecondDataNodeIsTheBadLink() throws Exception {
    Configuration conf = PluginCluster.rdmaClientConf(cluster);
    conf.setLong(RdmaBlockClient.TIMEOUT_KEY, CLIENT_TIMEOUT_MS);
    List<Socket> held = new CopyOnWriteArrayList<>();
    try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        RdmaBlockClient client = new RdmaBlockClient(conf)) {
      Thread acceptor = new Thread(() -> {
        while (!silent.isClosed()) {
          try {
            held.add(silent.accept());
          } catch (IOException e) {
            return;
          }
        }
      }, "silent-datanode");
      acceptor.setDaemon(true);
      acceptor.start();
      Configuration dnConf = cluster.getConfiguration(0);
      int xfer = silent.getLocalPort() - dnConf.getInt(RdmaPorts.PORT_OFFSET_KEY, RdmaPorts.PORT_OFFSET_DEFAULT);
      DatanodeInfo quiet = new DatanodeInfoBuilder().setNodeID(new DatanodeID("127.0.0.1", "localhost",
          "silent-dn", xfer, xfer + 1, xfer + 2, xfer + 3)).build();
      assertEquals(silent.getLocalPort(), RdmaPorts.pluginPort(quiet, dnConf));

      ClientProtocol nn = cluster.getFileSystem().getClient().getNamenode();
      String name = cluster.getFileSystem().getClient().getClientName();
      String path = "/silent-mirror";
      HdfsFileStatus st = nn.create(path, FsPermission.getFileDefault(), name,
          new EnumSetWritable<>(EnumSet.of(CreateFlag.CREATE, CreateFlag.OVERWRITE)), true, (short) 1,
          PluginCluster.BLOCK, org.apache.hadoop.crypto.CryptoProtocolVersion.supported(), null, null);
      LocatedBlock one = nn.addBlock(path, name, null, null, st.getFileId(), null, null);
      DatanodeInfo first = one.getLocations()[0];
      LocatedBlock two = new LocatedBlock(one.getBlock(), new DatanodeInfo[] {first, quiet},
          new String[] {one.getStorageIDs()[0], "silent-storage"},
          new StorageType[] {one.getStorageTypes()[0], StorageType.DEFAULT});
      two.setBlockToken(one.getBlockToken());

      long t0 = System.nanoTime();
      RdmaBlockWriter.PipelineSetupException e = assertThrows(RdmaBlockWriter.PipelineSetupException.class,
          () -> RdmaBlockWriter.create(client, two, conf));
      long ms = (System.nanoTime() - t0) / 1_000_000;
      System.err.println("hrdma test: silent mirror -> after " + ms + " ms: " + e.getMessage());
      assertEquals(quiet.getXferAddr(), e.firstBadLink, e.getMessage());
      assertTrue(ms < DATANODE_HELLO_WAIT_MS, "the first DataNode waited out its hello wait: " + ms + " ms");
    } finally {
      for (Socket s : held) {
        s.close();
      }
    }
  }
}
