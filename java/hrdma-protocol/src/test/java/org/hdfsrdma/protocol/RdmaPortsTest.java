package org.hdfsrdma.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.DatanodeID;
import org.junit.jupiter.api.Test;

class RdmaPortsTest {
  private static Configuration conf() {
    return new Configuration(false);
  }

  @Test
  void derivesFromTheXferPortByDefault() {
    assertEquals(10866, RdmaPorts.pluginPort(9866, conf()));
    DatanodeID id = new DatanodeID("127.0.0.1", "localhost", "uuid-1", 40000, 9864, 9865, 9867);
    assertEquals(41000, RdmaPorts.pluginPort(id, conf()));
  }

  @Test
  void offsetAndExplicitPort() {
    Configuration c = conf();
    c.setInt(RdmaPorts.PORT_OFFSET_KEY, 7);
    assertEquals(9873, RdmaPorts.pluginPort(9866, c));
    c.setInt(RdmaPorts.PORT_KEY, 19000);
    assertEquals(19000, RdmaPorts.pluginPort(9866, c), "an explicit port wins over the offset");
  }

  @Test
  void refusesWhatIsNotAPort() {
    Configuration c = conf();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> RdmaPorts.pluginPort(65000, c));
    assertTrue(e.getMessage().contains(RdmaPorts.PORT_OFFSET_KEY), e.getMessage());
    c.setInt(RdmaPorts.PORT_KEY, 70000);
    assertThrows(IllegalArgumentException.class, () -> RdmaPorts.pluginPort(9866, c));
  }
}
