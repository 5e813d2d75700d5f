package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The plugin's bean as the DataNode's /jmx servlet prints it: record 0 the plugin's, .n one transport's. */
class PluginStatusTest {
  @Test
  void parsesThePluginRecordAndOneRecordPerTransport() throws Exception {
    String json = "{\"beans\":[{\"name\":\"Hadoop:service=DataNode,name=HrdmaDataNode-9866\","
        + "\"OpenConnections\":3,\"OpenWrites\":1,\"BuffersOutstanding\":40,\"ReadsPreparedAhead\":5,"
        + "\"ReadPacketsByReference\":1024,\"SharedSegmentsGranted\":2,\"SharedSegmentsRefused\":1,"
        + "\"SharedSegmentBytes\":64000000,"
        + "\"tag.Transport.1\":\"tcp\",\"Connections.1\":1,\"BuffersOutstanding.1\":4,"
        + "\"tag.Transport.2\":\"ucx\",\"Connections.2\":2,\"BuffersOutstanding.2\":36}]}";
    PluginStatus.Figures f = PluginStatus.parse(new ObjectMapper().readTree(json));
    assertEquals(new PluginStatus.Figures(3, 1, 40, 5, 1024, 2, 1, 64_000_000, Map.of("tcp", 1L, "ucx", 2L)), f);
  }

  @Test
  void noBeanIsNoFigures() throws Exception {
    assertNull(PluginStatus.parse(new ObjectMapper().readTree("{\"beans\":[]}")));
    assertEquals("Hadoop:service=DataNode,name=HrdmaDataNode-9866", PluginStatus.beanName(9866));
  }
}
