package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.junit.jupiter.api.Test;

/**
 * The write packet's data size: ours by default, a stock packet's when an operator or
 * application set dfs.client-write-packet-size (sized as stock's computePacketChunkSize:
 * less the 33-byte largest header, whole 512+4-byte chunks), ours when set.
 */
class WritePacketSizeTest {
  private static final String STOCK = HdfsClientConfigKeys.DFS_CLIENT_WRITE_PACKET_SIZE_KEY;

  private static int size(Configuration conf) {
    return RdmaBlockWriter.packetDataBytes(conf, 512, 4);
  }

  @Test
  void unsetOrFromHdfsDefaultKeepsOurs() {
    assertEquals(1 << 20, size(new Configuration(false)));
    Configuration withDefaults = new HdfsConfiguration();
    assertEquals("65536", withDefaults.get(STOCK), "hdfs-default.xml loaded");
    assertEquals(1 << 20, size(withDefaults));
    assertEquals(1 << 20, size(new Configuration(withDefaults)), "a copy keeps the value's source");
  }

  @Test
  void setProgrammaticallyOrInASiteFileIsFollowedAsStockSizesIt() {
    Configuration c = new HdfsConfiguration();
    c.setInt(STOCK, 516);
    assertEquals(512, size(c)); // (516 - 33) / 516 = 0 chunks: at least one
    c.setInt(STOCK, 65536);
    assertEquals(126 * 512, size(c)); // (65536 - 33) / 516 = 126 chunks
    Configuration site = new HdfsConfiguration();
    site.addResource(new ByteArrayInputStream(("<configuration><property><name>" + STOCK
        + "</name><value>8192</value></property></configuration>").getBytes(StandardCharsets.UTF_8)),
        "hdfs-site.xml");
    assertEquals(15 * 512, size(site)); // (8192 - 33) / 516 = 15
  }

  @Test
  void largerStockPacketsThanOursOrOurKeySetKeepOurs() {
    Configuration c = new HdfsConfiguration();
    c.setInt(STOCK, 16 << 20);
    assertEquals(1 << 20, size(c));
    c.setInt(STOCK, 516);
    c.setInt(HrdmaClientKeys.WRITE_PACKET_BYTES_KEY, 256 << 10);
    assertEquals(256 << 10, size(c));
  }
}
