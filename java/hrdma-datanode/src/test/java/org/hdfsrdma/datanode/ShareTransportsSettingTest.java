package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.hdfsrdma.datanode.RdmaDataNodePlugin.Sharing;
import org.junit.jupiter.api.Test;

/** The values of hrdma.datanode.share-transports: true by default, auto, false, nothing else. */
class ShareTransportsSettingTest {
  @Test
  void trueByDefault() {
    assertEquals("true", RdmaDataNodePlugin.SHARE_TRANSPORTS_DEFAULT);
    assertEquals(Sharing.TRUE, Sharing.parse(RdmaDataNodePlugin.SHARE_TRANSPORTS_DEFAULT));
  }

  @Test
  void byDefaultALoneDataNodeForwardsOnItsServersTransports() {
    Sharing byDefault = Sharing.parse(RdmaDataNodePlugin.SHARE_TRANSPORTS_DEFAULT);
    assertTrue(RdmaDataNodePlugin.sharesConnector(byDefault, false), "a DataNode alone in its JVM");
    assertTrue(RdmaDataNodePlugin.sharesConnector(byDefault, true), "DataNodes sharing a JVM");
  }

  @Test
  void autoSharesTheConnectorOnlyWithOtherDataNodesAndFalseNever() {
    assertFalse(RdmaDataNodePlugin.sharesConnector(Sharing.AUTO, false));
    assertTrue(RdmaDataNodePlugin.sharesConnector(Sharing.AUTO, true));
    assertFalse(RdmaDataNodePlugin.sharesConnector(Sharing.FALSE, false));
    assertFalse(RdmaDataNodePlugin.sharesConnector(Sharing.FALSE, true));
  }

  @Test
  void parsesTheThreeValuesInAnyCase() {
    assertEquals(Sharing.AUTO, Sharing.parse(" Auto "));
    assertEquals(Sharing.TRUE, Sharing.parse("true"));
    assertEquals(Sharing.FALSE, Sharing.parse("FALSE"));
  }

  @Test
  void refusesAnythingElseNamingTheKey() {
    for (String bad : new String[] {"", "yes", "on", "1"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Sharing.parse(bad));
      assertTrue(e.getMessage().contains("hrdma.datanode.share-transports must be auto, true or false"),
          e.getMessage());
    }
  }
}
