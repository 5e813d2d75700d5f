package org.hdfsrdma.datanode.compat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier.AccessMode;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.DataChecksum;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * The compat facade against a real DataNode (one MiniDFSCluster with block
 * tokens on, shared by the class) over replicas the stock client wrote.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(120)
class DataNodeAccessTest {
  private static final int BLOCK = 64 << 10;
  private static final int BYTES_PER_CHECKSUM = 512;

  private MiniDFSCluster cluster;
  private DataNode dn;
  private DataNodeAccess access;
  private byte[] data;
  private List<LocatedBlock> blocks;

  @BeforeAll
  void startCluster() throws Exception {
    Configuration conf = new Configuration();
    conf.setBoolean(DFSConfigKeys.DFS_BLOCK_ACCESS_TOKEN_ENABLE_KEY, true);
    conf.setInt(DFSConfigKeys.DFS_BYTES_PER_CHECKSUM_KEY, BYTES_PER_CHECKSUM);
    File base = new File("target/test-dir/" + getClass().getSimpleName());
    cluster = new MiniDFSCluster.Builder(conf, base).numDataNodes(1).build();
    cluster.waitActive();
    dn = cluster.getDataNodes().get(0);
    access = DataNodeAccess.of(dn);

    // two full blocks and a partial third, written by the stock client
    data = new byte[2 * BLOCK + 1234];
    new Random(42).nextBytes(data);
    DistributedFileSystem fs = cluster.getFileSystem();
    Path file = new Path("/stock/file");
    try (var out = fs.create(file, true, 4096, (short) 1, BLOCK)) {
      out.write(data);
    }
    blocks = fs.getClient().getLocatedBlocks(file.toString(), 0).getLocatedBlocks();
    assertEquals(3, blocks.size());
  }

  @AfterAll
  void stopCluster() {
    if (cluster != null) {
      cluster.shutdown();
    }
  }

  @Test
  void describesTheDataNode() throws IOException {
    assertTrue(access.isReady());
    DatanodeInfo[] live = cluster.getFileSystem().getDataNodeStats(DatanodeReportType.LIVE);
    assertEquals(1, live.length);
    assertEquals(live[0].getDatanodeUuid(), access.datanodeUuid());
    assertEquals(live[0].getXferPort(), access.xferPort());
    assertEquals(live[0].getXferPort(), access.xferAddress().getPort());
    String bpid = cluster.getNamesystem().getBlockPoolId();
    assertEquals(List.of(bpid), access.blockPoolIds());
    assertTrue(access.blockTokenEnabled(bpid), "tokens are on in this cluster");
    assertEquals(2, access.storageIds().size(), "MiniDFSCluster gives a DataNode two volumes");
    assertThrows(IllegalArgumentException.class, () -> DataNodeAccess.of(new Object()));
  }

  @Test
  void readsStockReplicasThroughTheDataset() throws IOException {
    long offset = 0;
    for (LocatedBlock lb : blocks) {
      ExtendedBlock b = lb.getBlock();
      int len = (int) b.getNumBytes();
      assertEquals(len, access.replicaVisibleLength(b));
      byte[] expected = Arrays.copyOfRange(data, (int) offset, (int) offset + len);
      try (InputStream in = access.blockInputStream(b, 0)) {
        assertArrayEquals(expected, in.readAllBytes(), "block " + b);
      }
      try (InputStream in = access.blockInputStream(b, 1000)) {
        assertArrayEquals(Arrays.copyOfRange(expected, 1000, len), in.readAllBytes(), "block " + b + " at 1000");
      }
      // the stock .meta layout: 7-byte header (version, checksum type, bytes per checksum),
      // then one CRC32C per chunk
      try (DataNodeAccess.MetaStream meta = access.metaInputStream(b)) {
        assertNotNull(meta);
        int chunks = (len + BYTES_PER_CHECKSUM - 1) / BYTES_PER_CHECKSUM;
        assertEquals(7 + 4L * chunks, meta.length());
        DataInputStream in = new DataInputStream(meta.in());
        assertEquals(1, in.readShort(), "meta version");
        DataChecksum sum = DataChecksum.newDataChecksum(DataChecksum.Type.valueOf(in.readByte()), in.readInt());
        assertEquals(DataChecksum.Type.CRC32C, sum.getChecksumType());
        assertEquals(BYTES_PER_CHECKSUM, sum.getBytesPerChecksum());
        byte[] crcs = in.readAllBytes();
        assertEquals(4 * chunks, crcs.length);
        byte[] computed = new byte[4 * chunks];
        sum.calculateChunkedSums(expected, 0, len, computed, 0);
        assertArrayEquals(computed, crcs, "checksums of " + b);
      }
      offset += len;
    }
  }

  @Test
  void acceptsTheNameNodesTokenAndRefusesATamperedOne() throws IOException {
    LocatedBlock lb = blocks.get(0);
    ExtendedBlock b = lb.getBlock();
    Token<BlockTokenIdentifier> token = lb.getBlockToken();
    access.checkBlockToken(token, b, AccessMode.READ);

    Token<BlockTokenIdentifier> tampered = new Token<>(token);
    byte[] pw = tampered.getPassword().clone();
    pw[0] ^= 1;
    tampered = new Token<>(tampered.getIdentifier(), pw, tampered.getKind(), tampered.getService());
    Token<BlockTokenIdentifier> bad = tampered;
    InvalidToken e = assertThrows(InvalidToken.class, () -> access.checkBlockToken(bad, b, AccessMode.READ));
    assertTrue(e.getMessage().contains("block token rejected for " + b), e.getMessage());
    assertTrue(e.getMessage().contains("correct token password"), e.getMessage());

    ExtendedBlock other = blocks.get(1).getBlock();
    e = assertThrows(InvalidToken.class, () -> access.checkBlockToken(token, other, AccessMode.READ));
    assertTrue(e.getMessage().contains("block token rejected"), e.getMessage());

    e = assertThrows(InvalidToken.class, () -> access.checkBlockToken(token, b, AccessMode.WRITE),
        "a read token does not allow writes");
    e = assertThrows(InvalidToken.class, () -> access.checkBlockToken(null, b, AccessMode.READ));
    assertTrue(e.getMessage().contains("no block token"), e.getMessage());
    e = assertThrows(InvalidToken.class, () -> access.checkBlockToken(new Token<>(), b, AccessMode.READ));
    assertTrue(e.getMessage().contains("de-serialize"), e.getMessage());
  }
}
