package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.hdfsrdma.datanode.RdmaDataNodePlugin.Sharing;
import org.junit.jupiter.api.Test;

/** The values of hrdma.datanode.share-transports: auto by default, true, false, nothing else. */
class ShareTransportsSettingTest {
  @Test
  void autoByDefault() {
    assertEquals("auto", RdmaDataNodePlugin.SHARE_TRANSPORTS_DEFAULT);
    assertEquals(Sharing.AUTO, Sharing.parse(RdmaDataNodePlugin.SHARE_TRANSPORTS_DEFAULT));
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
