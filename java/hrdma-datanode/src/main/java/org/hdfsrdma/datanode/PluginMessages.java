package org.hdfsrdma.datanode;

import java.net.ProtocolException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.hdfsrdma.transport.BufferAllocator;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;

/**
 * The plugin's control messages until hrdma-protocol carries the block ops.
 * Every message starts with a version and an op; replies set the op's high
 * bit and carry a status. Strings are u16 length + UTF-8. Big-endian.
 *
 * <pre>
 * request:  +---------+---------+
 *           | ver u8  | op u8   |                      INFO: op 0x01, no body
 *           +---------+---------+
 * reply:    +---------+---------+-----------+---------------------------+
 *           | ver u8  | op|0x80 | status u8 | body                      |
 *           +---------+---------+-----------+---------------------------+
 *   INFO, status OK:  str uuid | u16 xferPort | u16 n | n x str blockPoolId
 *   status ERROR:     str message
 * </pre>
 *
 * Decoding checks every length against the bytes present and {@link #MAX_BYTES}.
 */
public final class PluginMessages {
  public static final int VERSION = 1;
  public static final int OP_INFO = 0x01;
  public static final int REPLY = 0x80;
  public static final int STATUS_OK = 0;
  public static final int STATUS_ERROR = 1;
  /** No control message is larger. */
  public static final int MAX_BYTES = 64 << 10;
  private static final int MAX_POOLS = 1024;

  private PluginMessages() {}

  /** What an INFO reply says about the DataNode. */
  public record Info(String datanodeUuid, int xferPort, List<String> blockPoolIds) {
    public Info {
      blockPoolIds = List.copyOf(blockPoolIds);
    }
  }

  /** The server answered with an error status. */
  public static final class RemoteError extends ProtocolException {
    RemoteError(String message) {
      super(message);
    }
  }

  public static RegisteredBuffer infoRequest(BufferAllocator alloc) throws TransportException {
    RegisteredBuffer m = alloc.allocate(2);
    ByteBuffer b = m.nio();
    int start = b.position();
    b.put((byte) VERSION).put((byte) OP_INFO);
    b.limit(b.position()).position(start);
    return m;
  }

  /** The request's op; the buffer's position is left unchanged. */
  public static int requestOp(ByteBuffer request) throws ProtocolException {
    ByteBuffer b = request.duplicate();
    if (b.remaining() < 2) {
      throw new ProtocolException("message of " + b.remaining() + " bytes is too short");
    }
    int version = b.get() & 0xff;
    if (version != VERSION) {
      throw new ProtocolException("unsupported message version " + version + " (this side speaks "
          + VERSION + ")");
    }
    int op = b.get() & 0xff;
    if (op != OP_INFO || b.hasRemaining()) {
      throw new ProtocolException("unknown request op 0x" + Integer.toHexString(op) + " of "
          + request.remaining() + " bytes");
    }
    return op;
  }

  public static RegisteredBuffer infoReply(BufferAllocator alloc, Info info) throws TransportException {
    byte[] uuid = utf8(info.datanodeUuid());
    List<byte[]> pools = new ArrayList<>();
    int size = 3 + 2 + uuid.length + 2 + 2;
    for (String p : info.blockPoolIds()) {
      byte[] s = utf8(p);
      pools.add(s);
      size += 2 + s.length;
    }
    if (size > MAX_BYTES || pools.size() > MAX_POOLS) {
      throw new IllegalArgumentException("info reply of " + size + " bytes is too large");
    }
    RegisteredBuffer m = alloc.allocate(size);
    ByteBuffer b = m.nio();
    int start = b.position();
    b.put((byte) VERSION).put((byte) (OP_INFO | REPLY)).put((byte) STATUS_OK);
    putString(b, uuid);
    b.putShort((short) info.xferPort());
    b.putShort((short) pools.size());
    for (byte[] s : pools) {
      putString(b, s);
    }
    b.limit(b.position()).position(start);
    return m;
  }

  public static RegisteredBuffer errorReply(BufferAllocator alloc, int op, String message)
      throws TransportException {
    byte[] text = utf8(message.length() > 4096 ? message.substring(0, 4096) : message);
    RegisteredBuffer m = alloc.allocate(3 + 2 + text.length);
    ByteBuffer b = m.nio();
    int start = b.position();
    b.put((byte) VERSION).put((byte) ((op & 0x7f) | REPLY)).put((byte) STATUS_ERROR);
    putString(b, text);
    b.limit(b.position()).position(start);
    return m;
  }

  /**
   * Decodes an INFO reply.
   *
   * @throws RemoteError the server answered with an error
   * @throws ProtocolException the bytes are not an INFO reply
   */
  public static Info decodeInfoReply(ByteBuffer reply) throws ProtocolException {
    ByteBuffer b = reply.duplicate();
    if (b.remaining() > MAX_BYTES) {
      throw new ProtocolException("reply of " + b.remaining() + " bytes exceeds " + MAX_BYTES);
    }
    need(b, 3);
    int version = b.get() & 0xff;
    if (version != VERSION) {
      throw new ProtocolException("unsupported reply version " + version);
    }
    int op = b.get() & 0xff;
    int status = b.get() & 0xff;
    if ((op & REPLY) == 0) {
      throw new ProtocolException("expected a reply, got request op 0x" + Integer.toHexString(op));
    }
    if (status != STATUS_OK) {
      // an error reply may name op 0: the request could not be parsed
      throw new RemoteError("datanode refused the request: " + getString(b));
    }
    if (op != (OP_INFO | REPLY)) {
      throw new ProtocolException("expected an INFO reply, got op 0x" + Integer.toHexString(op));
    }
    String uuid = getString(b);
    need(b, 4);
    int xferPort = b.getShort() & 0xffff;
    int n = b.getShort() & 0xffff;
    if (n > MAX_POOLS) {
      throw new ProtocolException(n + " block pools exceed " + MAX_POOLS);
    }
    List<String> pools = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      pools.add(getString(b));
    }
    if (b.hasRemaining()) {
      throw new ProtocolException(b.remaining() + " unexpected bytes after an INFO reply");
    }
    return new Info(uuid, xferPort, pools);
  }

  /** Decodes an error reply's message (for any op). */
  static String errorMessage(ByteBuffer reply) throws ProtocolException {
    ByteBuffer b = reply.duplicate();
    need(b, 3);
    b.position(b.position() + 3);
    return getString(b);
  }

  private static byte[] utf8(String s) {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    if (b.length > 0xffff) {
      throw new IllegalArgumentException("string of " + b.length + " bytes is too long");
    }
    return b;
  }

  private static void putString(ByteBuffer b, byte[] s) {
    b.putShort((short) s.length).put(s);
  }

  private static String getString(ByteBuffer b) throws ProtocolException {
    need(b, 2);
    int len = b.getShort() & 0xffff;
    need(b, len);
    byte[] s = new byte[len];
    b.get(s);
    return new String(s, StandardCharsets.UTF_8);
  }

  private static void need(ByteBuffer b, int n) throws ProtocolException {
    if (b.remaining() < n) {
      throw new ProtocolException("truncated message: need " + n + " bytes, have " + b.remaining());
    }
  }
}
