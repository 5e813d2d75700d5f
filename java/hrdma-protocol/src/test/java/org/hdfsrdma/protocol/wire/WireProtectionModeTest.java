package org.hdfsrdma.protocol.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;

/** Which protection each side decides from stock's keys, and when the plugin must refuse to start. */
class WireProtectionModeTest {
  private static Configuration conf(String... kv) {
    Configuration c = new Configuration(false);
    for (int i = 0; i < kv.length; i += 2) {
      c.set(kv[i], kv[i + 1]);
    }
    return c;
  }

  @Test
  void encryptDataTransferWinsOnBothSides() {
    assertEquals(WireProtection.Mode.ENCRYPT,
        WireProtection.forDataNode(conf("dfs.encrypt.data.transfer", "true"), 20000).mode());
    assertEquals(WireProtection.Mode.ENCRYPT, WireProtection.forClient(conf(), true, 20000).mode());
  }

  @Test
  void noSecurityNoHandshake() {
    WireProtection w = WireProtection.forDataNode(conf(), 20000);
    assertEquals(WireProtection.Mode.NONE, w.mode());
    assertNull(w.refusal());
  }

  @Test
  void kerberosWithProtectionOnAnUnprivilegedPortRunsSasl() {
    Configuration c = conf("hadoop.security.authentication", "kerberos", "dfs.data.transfer.protection", "privacy");
    assertEquals(WireProtection.Mode.SASL, WireProtection.forDataNode(c, 20000).mode());
    assertEquals(WireProtection.Mode.SASL, WireProtection.forClient(c, false, 20000).mode());
  }

  @Test
  void kerberosOnAPrivilegedPortIsTrustedAsStockTrustsItsXferPort() {
    Configuration c = conf("hadoop.security.authentication", "kerberos");
    WireProtection w = WireProtection.forDataNode(c, 1004);
    assertEquals(WireProtection.Mode.NONE, w.mode());
    assertNull(w.refusal());
  }

  @Test
  void kerberosWithNeitherProtectionNorAPrivilegedPortRefusesToStart() {
    Configuration c = conf("hadoop.security.authentication", "kerberos");
    WireProtection w = WireProtection.forDataNode(c, 20000);
    assertNotNull(w.refusal());
    assertTrue(w.refusal().contains("privileged") && w.refusal().contains("dfs.data.transfer.protection"),
        w.refusal());
    assertNotNull(WireProtection.forClient(c, false, 20000).refusal(), "the client falls back too");
    c.setBoolean("ignore.secure.ports.for.testing", true);
    assertNull(WireProtection.forDataNode(c, 20000).refusal());
  }

  @Test
  void badCipherSettingsAreRefusedByName() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> WireProtection.forDataNode(conf("hrdma.wire.cipher", "AES/CBC/PKCS5Padding"), 20000));
    assertTrue(e.getMessage().contains("hrdma.wire.cipher"), e.getMessage());
    assertThrows(IllegalArgumentException.class,
        () -> WireProtection.forDataNode(conf("hrdma.wire.key-bits", "192"), 20000));
  }
}
