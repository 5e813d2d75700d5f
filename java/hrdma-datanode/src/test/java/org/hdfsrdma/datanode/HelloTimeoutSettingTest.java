package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.hdfsrdma.transport.TransportConf;
import org.junit.jupiter.api.Test;

/**
 * How long the DataNode's transports wait for a new connection's HELLO: the key where it is set,
 * else stock's wait for a connection's first op (dfs.client.socket-timeout), and never forever.
 */
class HelloTimeoutSettingTest {
  private static int helloMs(Configuration c) {
    return RdmaDataNodePlugin.transportConf(c).getPositiveInt(TransportConf.HELLO_TIMEOUT_KEY, -1);
  }

  @Test
  void unsetItIsStocksSocketTimeoutAndTheKeyWinsWhereSet() {
    Configuration c = new Configuration(false);
    assertEquals(60_000, helloMs(c), "stock's default socket timeout, not the 5 s connect timeout");
    assertEquals(TransportConf.HELLO_TIMEOUT_DEFAULT, helloMs(c));
    c.setInt(HdfsClientConfigKeys.DFS_CLIENT_SOCKET_TIMEOUT_KEY, 120_000);
    assertEquals(120_000, helloMs(c), "follows dfs.client.socket-timeout");
    c.set(TransportConf.HELLO_TIMEOUT_KEY, "");
    assertEquals(120_000, helloMs(c), "empty is unset");
    c.setInt(TransportConf.HELLO_TIMEOUT_KEY, 2500);
    assertEquals(2500, helloMs(c), "the key where it is set");
  }

  @Test
  void stocksNoTimeoutStillClosesASilentConnection() {
    Configuration c = new Configuration(false);
    c.setInt(HdfsClientConfigKeys.DFS_CLIENT_SOCKET_TIMEOUT_KEY, 0);
    assertEquals(TransportConf.HELLO_TIMEOUT_DEFAULT, helloMs(c));
  }
}
