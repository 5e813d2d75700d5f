package org.hdfsrdma.client.compat;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import org.junit.jupiter.api.Test;

class HadoopVersionTest {
  @Test
  void theHadoopWeAreBuiltAgainstIsSupported() {
    assertEquals("3.5.0", HadoopVersion.running());
    assertDoesNotThrow(() -> HadoopVersion.check(HadoopVersion.running()));
  }

  @Test
  void otherReleasesOfTheLineAreSupported() {
    for (String v : new String[] {"3.5.1", "3.5.0-SNAPSHOT", "3.5.2-amzn-1", "Unknown", ""}) {
      assertDoesNotThrow(() -> HadoopVersion.check(v), v);
    }
  }

  @Test
  void olderAndNewerLinesAreRefusedWithTheVersionNamed() {
    // 3.3.4 is what Spark 3.5 bundles (hadoop-client-api/runtime)
    for (String v : new String[] {"3.3.4", "3.4.1", "3.6.0", "2.10.2", "4.0.0", "3.50.0", "garbage"}) {
      IOException e = assertThrows(IOException.class, () -> HadoopVersion.check(v), v);
      assertTrue(e.getMessage().contains("Hadoop " + v + " ") && e.getMessage().contains("3.5.x"), e.getMessage());
    }
  }
}
