package org.hdfsrdma.protocol.compat;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.util.Base64;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;

/**
 * Coverage-guided fuzzing of a peer's block token identifier ({@link BlockTokenIdentifiers},
 * then Hadoop's parse as {@link StockSasl#parseTokenUser} runs it before the peer is
 * authenticated). Properties: the bounds refuse only with their InvalidToken; what
 * they pass, Hadoop parses or refuses with an IOException (nothing else escapes), allocating no
 * more than a small multiple of the identifier's own length. Seeds:
 * {@code BlockTokenIdentifiersFuzzTestInputs/parse/} (real identifiers of both layouts, one of
 * a NameNode before storage types, and the hostile ones of {@link BlockTokenIdentifiersTest}).
 */
class BlockTokenIdentifiersFuzzTest {
  private static final com.sun.management.ThreadMXBean THREADS =
      (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  static {
    // class loading and the parsers' first use allocate megabytes once: not the input's doing
    for (boolean proto : new boolean[] {false, true}) {
      byte[] real = new org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier("u", "BP-1", 1L,
          java.util.EnumSet.of(org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier.AccessMode.READ),
          new org.apache.hadoop.fs.StorageType[] {org.apache.hadoop.fs.StorageType.DISK}, new String[] {"DS-1"},
          proto).getBytes();
      for (int n = 0; n <= real.length; n++) {
        try {
          StockSasl.parseTokenUser(Base64.getEncoder().encodeToString(java.util.Arrays.copyOf(real, n)));
        } catch (IOException e) {
          // truncated
        }
      }
    }
  }

  @FuzzTest(maxDuration = "30s")
  void parse(byte[] identifier) {
    try {
      BlockTokenIdentifiers.checkBounds(identifier);
    } catch (InvalidToken e) {
      assertTrue(e.getMessage().startsWith("malformed block token identifier"), e.getMessage());
      return;
    }
    String user = Base64.getEncoder().encodeToString(identifier);
    long before = THREADS.getCurrentThreadAllocatedBytes();
    try {
      StockSasl.parseTokenUser(user);
    } catch (IOException refused) {
      // Hadoop's own refusal of a malformed identifier (EOF, bad enum, bad protobuf)
    }
    long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
    // the parse's own objects: a few KB whatever the input, plus copies of the input's bytes
    assertTrue(allocated < (1 << 20) + 64L * identifier.length,
        "a " + identifier.length + "-byte identifier made Hadoop's parse allocate " + allocated + " bytes");
  }
}
