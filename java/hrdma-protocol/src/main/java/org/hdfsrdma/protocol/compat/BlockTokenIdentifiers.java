package org.hdfsrdma.protocol.compat;

import java.io.IOException;
import org.apache.hadoop.io.WritableUtils;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;

/**
 * Bounds a block token identifier's claimed lengths before Hadoop parses it. A peer's token
 * reaches Hadoop's {@code BlockTokenIdentifier#readFields} on every operation (the token check,
 * {@code BlockTokenSecretManager#checkAccess}) and, under {@code dfs.data.transfer.protection},
 * before the peer is authenticated at all (the SASL user name is the identifier, its password
 * looked up from it). Its legacy (Writable) layout allocates each string, array and message at
 * the length the bytes claim before it reads them ({@code WritableUtils#readString}: a 4-byte
 * length, then {@code new byte[length]}): a 10-byte identifier claiming a 2 GB user name makes
 * the JVM allocate and zero 2 GB, or throw OutOfMemoryError, on the thread that checks it.
 * This walks the same layout and refuses (InvalidToken) any length longer than the bytes left;
 * what fits is left to Hadoop, whose own refusals stay as they are. The protobuf layout (first
 * byte positive) is bounded by protobuf itself. Stateless, thread-safe.
 */
public final class BlockTokenIdentifiers {
  private BlockTokenIdentifiers() {}

  /**
   * Checks {@code identifier} (a block token's identifier bytes, as sent by a peer).
   *
   * @throws InvalidToken a length in it claims more bytes than the identifier has left
   */
  public static void checkBounds(byte[] identifier) throws InvalidToken {
    if (identifier == null || identifier.length == 0 || identifier[0] > 0) {
      return; // nothing to parse, or the protobuf layout
    }
    try {
      new Walk(identifier).legacy();
    } catch (Truncated e) {
      // ends early: Hadoop's parse ends there too (an EOF, or the optional fields it tolerates missing)
    } catch (IOException e) {
      throw new InvalidToken("malformed block token identifier (" + identifier.length + " bytes): " + e.getMessage());
    }
  }

  /** The identifier ended inside a field: nothing past it is allocated. */
  private static final class Truncated extends IOException {
    private static final long serialVersionUID = 1L;
  }

  /** BlockTokenIdentifier#readFieldsLegacy's layout, with every length checked against the bytes left. */
  private static final class Walk {
    private final byte[] b;
    private int pos;

    Walk(byte[] b) {
      this.b = b;
    }

    void legacy() throws IOException {
      vlong("expiry date");
      vint("key id");
      string("user id");
      string("block pool id");
      vlong("block id");
      int modes = vint("access mode count");
      for (int i = 0; i < modes; i++) {
        text("access mode");
      }
      int types = count("storage type count");
      for (int i = 0; i < types; i++) {
        text("storage type");
      }
      int ids = count("storage id count");
      for (int i = 0; i < ids; i++) {
        string("storage id");
      }
      int handshake = vint("handshake secret length");
      claim(handshake, "handshake secret");
      pos += handshake;
    }

    private int left() {
      return b.length - pos;
    }

    /** WritableUtils#readString: a 4-byte length (-1: null), then that many bytes. */
    private void string(String what) throws IOException {
      if (left() < 4) {
        throw new Truncated();
      }
      int n = ((b[pos] & 0xff) << 24) | ((b[pos + 1] & 0xff) << 16) | ((b[pos + 2] & 0xff) << 8) | (b[pos + 3] & 0xff);
      pos += 4;
      if (n == -1) {
        return;
      }
      claim(n, what);
      pos += n;
    }

    /** WritableUtils#readEnum: Text#readString, a vint length, then that many bytes. */
    private void text(String what) throws IOException {
      int n = vint(what + " length");
      claim(n, what);
      pos += n;
    }

    /** An array's element count: each element takes at least one byte. */
    private int count(String what) throws IOException {
      int n = vint(what);
      if (n < 0 || n > left()) {
        throw new IOException("its " + what + " claims " + n + " entries, " + left() + " bytes are left");
      }
      return n;
    }

    private void claim(int n, String what) throws IOException {
      if (n < 0 || n > left()) {
        throw new IOException("its " + what + " claims " + n + " bytes, " + left() + " are left");
      }
    }

    private int vint(String what) throws IOException {
      long v = vlong(what);
      if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
        throw new IOException("its " + what + " " + v + " is not an int");
      }
      return (int) v;
    }

    /** WritableUtils#readVLong. */
    private long vlong(String what) throws IOException {
      if (left() < 1) {
        throw new Truncated();
      }
      byte first = b[pos++];
      int len = WritableUtils.decodeVIntSize(first);
      if (len == 1) {
        return first;
      }
      if (left() < len - 1) {
        throw new Truncated();
      }
      long v = 0;
      for (int i = 0; i < len - 1; i++) {
        v = (v << 8) | (b[pos++] & 0xff);
      }
      return WritableUtils.isNegativeVInt(first) ? ~v : v;
    }
  }
}
