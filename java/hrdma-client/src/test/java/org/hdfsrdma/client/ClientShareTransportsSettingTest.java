package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.select.SharedTransports;
import org.junit.jupiter.api.Test;

/**
 * hrdma.client.share-transports: off by default; auto shares exactly when the JVM has shared
 * transports open (DataNodes run in it); true and false regardless; nothing else.
 */
class ClientShareTransportsSettingTest {
  private static Configuration conf(String v) {
    Configuration c = new Configuration(false);
    if (v != null) {
      c.set(HrdmaClientKeys.SHARE_TRANSPORTS_KEY, v);
    }
    return c;
  }

  @Test
  void autoSharesWhileTheJvmHasSharedTransports() throws Exception {
    boolean before = SharedTransports.openCount() > 0;
    assertEquals(before, RdmaBlockClient.sharesTransports(conf("auto")));
    try (SharedTransports.Lease l = SharedTransports.acquire("tcp", TransportConf.defaults())) {
      assertFalse(RdmaBlockClient.sharesTransports(conf(null)), "the default: its own");
      assertTrue(RdmaBlockClient.sharesTransports(conf(" AUTO ")));
      assertFalse(RdmaBlockClient.sharesTransports(conf("false")));
    }
    if (SharedTransports.openCount() == 0) {
      assertFalse(RdmaBlockClient.sharesTransports(conf("auto")), "none open: its own");
    }
    assertTrue(RdmaBlockClient.sharesTransports(conf("true")));
  }

  @Test
  void refusesAnythingElse() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> RdmaBlockClient.sharesTransports(conf("yes")));
    assertTrue(e.getMessage().contains("hrdma.client.share-transports must be auto, true or false"), e.getMessage());
  }
}
