package org.hdfsrdma.protocol.compat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.Base64;
import java.util.EnumSet;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier.AccessMode;
import org.apache.hadoop.io.WritableUtils;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.junit.jupiter.api.Test;

/**
 * A peer's block token identifier is parsed before anything it claims is allocated: lengths
 * past its end are refused ({@link BlockTokenIdentifiers}) where Hadoop's legacy parse would
 * allocate them first, on the SASL path ({@link StockSasl#parseTokenUser}, before the peer is
 * authenticated) and the token check; real identifiers of both layouts, and truncated ones,
 * parse as Hadoop parses them.
 */
class BlockTokenIdentifiersTest {
  private static final com.sun.management.ThreadMXBean THREADS =
      (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  /** A legacy identifier: expiry 0, key 7, then a user id whose 4-byte length is {@code userBytes}. */
  private static byte[] claimingUserId(int userBytes) throws IOException {
    ByteArrayOutputStream bo = new ByteArrayOutputStream();
    DataOutputStream o = new DataOutputStream(bo);
    WritableUtils.writeVLong(o, 0);
    WritableUtils.writeVInt(o, 7);
    o.writeInt(userBytes);
    o.write(new byte[4]);
    return bo.toByteArray();
  }

  /** A legacy identifier whole up to its storage types, whose count is {@code count}. */
  private static byte[] claimingStorageTypes(int count) throws IOException {
    ByteArrayOutputStream bo = new ByteArrayOutputStream();
    DataOutputStream o = new DataOutputStream(bo);
    WritableUtils.writeVLong(o, 0);
    WritableUtils.writeVInt(o, 7);
    WritableUtils.writeString(o, "user");
    WritableUtils.writeString(o, "BP-1");
    WritableUtils.writeVLong(o, 1073741825L);
    WritableUtils.writeVInt(o, 1);
    WritableUtils.writeEnum(o, AccessMode.READ);
    WritableUtils.writeVInt(o, count);
    o.write(new byte[3]);
    return bo.toByteArray();
  }

  private static String user(byte[] identifier) {
    return Base64.getEncoder().encodeToString(identifier);
  }

  @Test
  void aUserIdClaimingGigabytesIsRefusedWithoutAllocatingThem() throws Exception {
    byte[] id = claimingUserId(1_900_000_000);
    assertEquals(10, id.length);
    assertTrue(id[0] <= 0, "the legacy layout");
    long before = THREADS.getCurrentThreadAllocatedBytes();
    IOException e = assertThrows(IOException.class, () -> StockSasl.parseTokenUser(user(id)));
    long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
    System.err.println("hrdma test: " + e + "; allocated " + allocated + " bytes");
    assertTrue(e instanceof InvalidToken, e.toString());
    assertTrue(e.getMessage().contains("user id claims 1900000000 bytes"), e.getMessage());
    assertTrue(allocated < (16 << 20), "allocated " + allocated + " bytes for a 10-byte identifier");
  }

  @Test
  void anArrayCountPastTheEndIsRefused() throws Exception {
    for (int count : new int[] {Integer.MAX_VALUE, 1 << 20, 4}) {
      byte[] id = claimingStorageTypes(count);
      InvalidToken e = assertThrows(InvalidToken.class, () -> BlockTokenIdentifiers.checkBounds(id));
      assertTrue(e.getMessage().contains("storage type count claims " + count), e.getMessage());
      assertThrows(IOException.class, () -> StockSasl.parseTokenUser(user(id)));
    }
    BlockTokenIdentifiers.checkBounds(claimingStorageTypes(3)); // three 1-byte... bytes there: left to Hadoop
  }

  @Test
  void realIdentifiersOfBothLayoutsParseAsHadoopParsesThem() throws Exception {
    for (boolean proto : new boolean[] {false, true}) {
      BlockTokenIdentifier t = new BlockTokenIdentifier("alice", "BP-42-127.0.0.1-1", 1073741999L,
          EnumSet.of(AccessMode.READ, AccessMode.WRITE), new StorageType[] {StorageType.DISK, StorageType.SSD},
          new String[] {"DS-1", "DS-2"}, proto);
      t.setExpiryDate(1_800_000_000_000L);
      t.setKeyId(12345);
      t.setHandshakeMsg(new byte[] {1, 2, 3});
      byte[] bytes = t.getBytes();
      assertEquals(!proto, bytes[0] <= 0, "layout of " + (proto ? "protobuf" : "legacy"));
      BlockTokenIdentifiers.checkBounds(bytes);
      BlockTokenIdentifier back = StockSasl.parseTokenUser(user(bytes));
      assertEquals("alice", back.getUserId());
      assertEquals("BP-42-127.0.0.1-1", back.getBlockPoolId());
      assertEquals(1073741999L, back.getBlockId());
      assertEquals(EnumSet.of(AccessMode.READ, AccessMode.WRITE), back.getAccessModes());
      assertArrayEquals(new StorageType[] {StorageType.DISK, StorageType.SSD}, back.getStorageTypes());
      assertArrayEquals(new String[] {"DS-1", "DS-2"}, back.getStorageIds());
      assertArrayEquals(new byte[] {1, 2, 3}, back.getHandshakeMsg());
      assertEquals(12345, back.getKeyId());
      // a truncated one: passed on to Hadoop (which refuses it) or refused here, never anything else
      for (int n = 0; n < bytes.length; n++) {
        try {
          BlockTokenIdentifiers.checkBounds(Arrays.copyOf(bytes, n));
        } catch (InvalidToken e) {
          assertTrue(e.getMessage().contains("claims"), e.getMessage());
        }
      }
    }
  }

  @Test
  void anIdentifierOfANameNodeBeforeStorageTypesIsAccepted() throws Exception {
    // such a NameNode's legacy identifier ends after the access modes (Hadoop tolerates the rest missing)
    ByteArrayOutputStream bo = new ByteArrayOutputStream();
    DataOutputStream o = new DataOutputStream(bo);
    WritableUtils.writeVLong(o, 0);
    WritableUtils.writeVInt(o, 3);
    WritableUtils.writeString(o, "bob");
    WritableUtils.writeString(o, "BP-1");
    WritableUtils.writeVLong(o, 7L);
    WritableUtils.writeVInt(o, 1);
    WritableUtils.writeEnum(o, AccessMode.READ);
    byte[] bytes = bo.toByteArray();
    BlockTokenIdentifiers.checkBounds(bytes);
    BlockTokenIdentifier back = StockSasl.parseTokenUser(user(bytes));
    assertEquals("bob", back.getUserId());
    assertEquals(EnumSet.of(AccessMode.READ), back.getAccessModes());
  }
}
