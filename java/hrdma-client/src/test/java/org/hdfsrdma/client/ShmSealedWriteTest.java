package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.hdfsrdma.client.PluginCluster.awaitValue;
import static org.hdfsrdma.client.PluginCluster.writeShmSum;

import java.io.IOException;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;
import org.hdfsrdma.nativelib.NativeFiles;
import org.hdfsrdma.protocol.WriteSegment;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * Same-host writes by reference on an encrypted cluster (every message sealed, block tokens on):
 * as reads by reference, the packets cross shared memory and only the sealed references cross
 * the connections, from the client and between the DataNodes; a replication-3 file is
 * byte-identical and every segment, mapping and descriptor goes with its connection.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(180)
class ShmSealedWriteTest {
  private static final int BLOCK = 4 << 20;

  private MiniDFSCluster cluster;

  @BeforeAll
  void start() throws Exception {
    cluster = PluginCluster.start(WireProtectionTest.encrypted(PluginCluster.baseConf()), getClass(), 3);
  }

  @AfterAll
  void stop() throws IOException {
    PluginCluster.shutdown(null, cluster);
  }

  @Test
  void anEncryptedReplication3WriteGoesByReference() throws Exception {
    byte[] data = PluginCluster.random(BLOCK + 4321, 33);
    Path p = new Path("/sealed/shm");
    long fdMapped0 = NativeFiles.mappedBytes();
    long fds0 = NativeFiles.fdsHeld();
    long refs0 = writeShmSum(RdmaDataNodePlugin.WriteShmStats::byReference);
    long forwarded0 = writeShmSum(RdmaDataNodePlugin.WriteShmStats::forwardedByReference);
    try (RdmaDistributedFileSystem fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(),
        PluginCluster.rdmaClientConf(cluster))) {
      long before = fs.rdmaBytesWritten();
      try (FSDataOutputStream out = fs.create(p, true, 4096, (short) 3, BLOCK)) {
        out.write(data);
      }
      assertEquals(data.length, fs.rdmaBytesWritten() - before, "every byte over hrdma, none by the stock path");
      long refs = writeShmSum(RdmaDataNodePlugin.WriteShmStats::byReference) - refs0;
      long forwarded = writeShmSum(RdmaDataNodePlugin.WriteShmStats::forwardedByReference) - forwarded0;
      assertTrue(refs >= 3 * (data.length >> 20), "packets by reference: " + refs);
      assertTrue(forwarded >= 2 * (data.length >> 20), "forwarded by reference: " + forwarded);
    }
    byte[] got = new byte[data.length];
    try (FSDataInputStream in = cluster.getFileSystem().open(p)) {
      in.readFully(got);
    }
    assertArrayEquals(data, got);
    awaitValue(() -> writeShmSum(RdmaDataNodePlugin.WriteShmStats::segments), 0, "the DataNodes' write segments");
    awaitValue(() -> writeShmSum(RdmaDataNodePlugin.WriteShmStats::forwardSegments), 0, "the forwarders' segments");
    awaitValue(WriteSegment::live, 0, "senders' write segments");
    awaitValue(NativeFiles::mappedBytes, fdMapped0, "segments mapped by their senders");
    awaitValue(NativeFiles::fdsHeld, fds0, "descriptors held");
  }
}
