package org.hdfsrdma.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** --ucx-tls as doctor, serve and perf turn it into the UCX configuration. */
class UcxTlsTest {
  @Test
  void ucxConfig() {
    assertEquals("TLS=tcp", UcxTls.ucxConfig(null, "tcp"));
    assertEquals("TLS=sm,tcp;MM_ERROR_HANDLING=y", UcxTls.ucxConfig("", "sm,tcp"));
    assertEquals("NET_DEVICES=lo;TLS=tcp",
        UcxTls.ucxConfig("NET_DEVICES=lo;TLS=sm,tcp;MM_ERROR_HANDLING=y", "tcp"));
    assertEquals("X=1", UcxTls.ucxConfig("X=1", null));
  }

  @Test
  void sharedMemoryNamesAndBadValues() {
    assertTrue(UcxTls.usesSharedMemory("^tcp,posix"));
    assertTrue(!UcxTls.usesSharedMemory("tcp,rc"));
    assertEquals("sm,tcp", UcxTls.parse(" sm,tcp "));
    assertEquals("bad --ucx-tls value 'a b' (e.g. tcp or sm,tcp)",
        assertThrows(UsageException.class, () -> UcxTls.parse("a b")).getMessage());
  }
}
