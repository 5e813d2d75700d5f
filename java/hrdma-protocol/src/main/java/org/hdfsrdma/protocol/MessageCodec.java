package org.hdfsrdma.protocol;

import java.io.IOException;
import java.net.ProtocolException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ClientReadStatusProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.DataTransferEncryptorMessageProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpReadBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PacketHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PipelineAckProto;
import org.apache.hadoop.thirdparty.protobuf.CodedInputStream;
import org.apache.hadoop.thirdparty.protobuf.CodedOutputStream;
import org.apache.hadoop.thirdparty.protobuf.InvalidProtocolBufferException;
import org.apache.hadoop.thirdparty.protobuf.MessageLite;
import org.apache.hadoop.thirdparty.protobuf.Parser;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.transport.BufferAllocator;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;

/**
 * Encodes and decodes hrdma block-protocol messages. One protocol message is
 * exactly one transport message (the transport frames it), laid out as
 * (big-endian):
 *
 * <pre>
 *  0        1        2                 4                                   8
 *  +--------+--------+--------+--------+--------+--------+--------+--------+
 *  | version|  kind  |      flags      |             headerLen             |
 *  |  u8 =1 |   u8   |     u16 = 0     |          u32, &lt;= 64 KiB          |
 *  +--------+--------+--------+--------+--------+--------+--------+--------+
 *  |                          requestId (u64)                              |
 *  +--------+--------+--------+--------+--------+--------+--------+--------+
 *  | header: headerLen bytes of protobuf (the kind's message)        ...   |
 *  +--------+--------+--------+--------+--------+--------+--------+--------+
 *  | payload: the rest of the transport message (DATA_PACKET: the     ...  |
 *  |          checksums, then the data, as in an HDFS packet body)         |
 *  +-----------------------------------------------------------------------+
 * </pre>
 *
 * Header messages by kind: see {@link MessageKind}. The HDFS ones are the
 * stock {@code DataTransferProtos} (Hadoop's shaded protobuf).
 *
 * <p>Encoding writes into a {@link RegisteredBuffer} from the transport's
 * allocator, so the message is sent without a copy; payloads can be filled
 * in place ({@link #begin}, then {@link #finish}). Decoding never copies the
 * payload: {@link Message#payload()} is a view of the received buffer, and
 * the caller still owns (and must release) that buffer. Every length is
 * checked against the bytes present and {@link #MAX_HEADER_BYTES} before
 * anything is parsed; any malformed input is a {@link ProtocolException}
 * whose message says what was wrong.
 *
 * <p>Stateless and thread-safe.
 */
public final class MessageCodec {
  public static final int VERSION = 1;
  /** Bytes before the protobuf header. */
  public static final int FIXED_BYTES = 16;
  /** No header (protobuf part) is larger. */
  public static final int MAX_HEADER_BYTES = 64 << 10;

  /** The largest DATA_PACKET header: every field at its widest. */
  private static final int MAX_PACKET_HEADER_BYTES = PacketHeaderProto.newBuilder().setOffsetInBlock(Long.MIN_VALUE)
      .setSeqno(Long.MIN_VALUE).setLastPacketInBlock(true).setDataLen(Integer.MIN_VALUE).setSyncBlock(true).build()
      .getSerializedSize();

  private MessageCodec() {}

  /**
   * Data bytes per DATA_PACKET, for packets of up to {@code dataBytes} (whole chunks of
   * {@code bytesPerChecksum}, {@code checksumSize} bytes of checksum each) whose data may be
   * laid out at an {@code align}ed address ({@link #beginAt}, which needs up to {@code align}
   * bytes more): where the message of {@code dataBytes} spills into a larger buffer of
   * {@code alloc} than the data alone takes (a pool's power-of-two classes), the most data,
   * in whole multiples of both the chunk and {@code align}, whose message fits that smaller
   * buffer; else {@code dataBytes}. With the default 1 MiB of data, the message (1 MiB, 8 KiB
   * of CRC32C, headers) took a 2 MiB buffer; 1 MiB - 12 KiB of data fits the 1 MiB one, half
   * the registered memory per packet. The smaller size is chosen only when it saves more than
   * a fifth of the memory per byte of data and keeps at least half of {@code dataBytes}.
   */
  public static int packetDataBytes(BufferAllocator alloc, int dataBytes, int bytesPerChecksum, int checksumSize,
      int align) {
    if (dataBytes <= 0 || bytesPerChecksum <= 0 || checksumSize < 0 || align <= 0) {
      throw new IllegalArgumentException("packet of " + dataBytes + " bytes in chunks of " + bytesPerChecksum
          + " (" + checksumSize + "-byte checksums), alignment " + align);
    }
    long cap = alloc.footprint(dataBytes);
    long full = alloc.footprint((int) Math.min(Integer.MAX_VALUE,
        packetMessageBytes(dataBytes, bytesPerChecksum, checksumSize, align)));
    long unit = lcm(bytesPerChecksum, align);
    long room = cap - FIXED_BYTES - MAX_PACKET_HEADER_BYTES - align;
    long fit = room / (bytesPerChecksum + checksumSize) * bytesPerChecksum; // whole chunks with their checksums
    fit -= fit % unit;
    if (fit < unit || 2 * fit < dataBytes || fit >= dataBytes) {
      return dataBytes;
    }
    long fitted = alloc.footprint((int) packetMessageBytes(fit, bytesPerChecksum, checksumSize, align));
    // only where it saves registered memory per byte of data (a pool's classes), by over a fifth
    return 4.0 * fit * full > 5.0 * dataBytes * fitted ? (int) fit : dataBytes;
  }

  /** The bytes of a DATA_PACKET message of {@code data} bytes laid out at an aligned address. */
  private static long packetMessageBytes(long data, int bytesPerChecksum, int checksumSize, int align) {
    long chunks = (data + bytesPerChecksum - 1) / bytesPerChecksum;
    return FIXED_BYTES + MAX_PACKET_HEADER_BYTES + chunks * checksumSize + data + align;
  }

  private static long lcm(long a, long b) {
    long x = a;
    long y = b;
    while (y != 0) {
      long t = x % y;
      x = y;
      y = t;
    }
    return a / x * b;
  }

  // ------------------------------------------------------------------ encode

  /**
   * Allocates a message with its fixed header and protobuf header written,
   * leaving {@code payloadCapacity} bytes for the payload: the buffer's
   * position is where the payload starts, its limit where the capacity ends.
   * Write the payload, then call {@link #finish}.
   *
   * @param header the kind's header message, or null for an empty header
   * @throws IllegalArgumentException the header exceeds {@link #MAX_HEADER_BYTES}
   *     or the kind is reserved
   * @throws TransportException the allocator is out of registered memory
   */
  public static RegisteredBuffer begin(BufferAllocator alloc, MessageKind kind, long requestId,
      MessageLite header, int payloadCapacity) throws TransportException {
    int headerLen = header == null ? 0 : header.getSerializedSize();
    return begin(alloc, kind, requestId, headerLen, payloadCapacity, out -> {
      if (header != null) {
        header.writeTo(out);
      }
    });
  }

  /** As {@link #begin(BufferAllocator, MessageKind, long, MessageLite, int)}, for an INFO_REPLY. */
  public static RegisteredBuffer encodeInfoReply(BufferAllocator alloc, long requestId, InfoReply info)
      throws TransportException {
    RegisteredBuffer m = begin(alloc, MessageKind.INFO_REPLY, requestId, info.serializedSize(), 0,
        info::writeTo);
    return finish(m);
  }

  /** A complete message without payload whose header is one of our own (proto/), or null for none. */
  public static RegisteredBuffer encode(BufferAllocator alloc, MessageKind kind, long requestId,
      com.google.protobuf.MessageLite header) throws TransportException {
    byte[] h = header == null ? new byte[0] : header.toByteArray();
    return finish(begin(alloc, kind, requestId, h.length, 0, out -> out.writeRawBytes(h)));
  }

  /** A complete message: header plus a copy of {@code payload} (position to limit; may be null). */
  public static RegisteredBuffer encode(BufferAllocator alloc, MessageKind kind, long requestId,
      MessageLite header, ByteBuffer payload) throws TransportException {
    int n = payload == null ? 0 : payload.remaining();
    RegisteredBuffer m = begin(alloc, kind, requestId, header, n);
    if (payload != null) {
      m.nio().put(payload.duplicate());
    }
    return finish(m);
  }

  /**
   * The placement hint of a DATA_PACKET ({@link RegisteredBuffer#placeAligned}): the offset, from
   * the message's first byte, of its first data byte at a page boundary of the block file (the
   * packet's start, or past the head an hflush left inside a page), which the receiver's transport
   * then places at a page-aligned address so that the DataNode writes the data O_DIRECT without a
   * copy. {@code dataStart}: where the data starts in the message; the client and a forwarding
   * DataNode give the same hint.
   */
  public static int packetPlacement(int dataStart, long offsetInBlock, int dataLen) {
    return dataStart + (int) Math.min(Math.max(0, dataLen), -offsetInBlock & (RegisteredBuffer.PLACE_PAGE - 1));
  }

  /**
   * Ends a message from {@link #begin}: the payload is what was written
   * (start to the current position); the buffer is left ready to send
   * (position 0, limit at the end of the payload).
   */
  public static RegisteredBuffer finish(RegisteredBuffer m) {
    return finish(m, 0);
  }

  /**
   * As {@link #begin(BufferAllocator, MessageKind, long, MessageLite, int)}, into
   * {@code m} from its index {@code start} on (so that the payload can start at an
   * address the caller chooses, e.g. one O_DIRECT can read into). The caller keeps
   * its reference to {@code m} whatever happens.
   *
   * @throws IllegalArgumentException the message does not fit {@code m} from {@code start}
   */
  public static void beginAt(RegisteredBuffer m, int start, MessageKind kind, long requestId, MessageLite header,
      int payloadCapacity) {
    int headerLen = header == null ? 0 : header.getSerializedSize();
    long total = checkedSize(kind, headerLen, payloadCapacity);
    if (start < 0 || start + total > m.capacity()) {
      throw new IllegalArgumentException(kind + " message of " + total + " bytes at index " + start
          + " does not fit a buffer of " + m.capacity());
    }
    try {
      writeHead(m, start, (int) total, kind, requestId, headerLen, out -> {
        if (header != null) {
          header.writeTo(out);
        }
      });
    } catch (IOException e) {
      throw new IllegalStateException("cannot encode " + kind + " header", e);
    }
  }

  /** Ends a message from {@link #beginAt}: ready to send from {@code start} to the end of the payload. */
  public static RegisteredBuffer finish(RegisteredBuffer m, int start) {
    ByteBuffer b = m.nio();
    b.limit(b.position()).position(start);
    return m;
  }

  private interface HeaderWriter {
    void write(CodedOutputStream out) throws IOException;
  }

  private static RegisteredBuffer begin(BufferAllocator alloc, MessageKind kind, long requestId,
      int headerLen, int payloadCapacity, HeaderWriter writer) throws TransportException {
    long total = checkedSize(kind, headerLen, payloadCapacity);
    RegisteredBuffer m = alloc.allocate((int) total);
    try {
      // the allocator hands out position 0; the message starts there
      writeHead(m, 0, (int) total, kind, requestId, headerLen, writer);
      return m;
    } catch (IOException | RuntimeException e) {
      m.release();
      if (e instanceof RuntimeException r) {
        throw r;
      }
      throw new IllegalStateException("cannot encode " + kind + " header", e);
    }
  }

  private static long checkedSize(MessageKind kind, int headerLen, int payloadCapacity) {
    if (!kind.implemented()) {
      throw new IllegalArgumentException(kind + " is reserved, not implemented");
    }
    if (headerLen > MAX_HEADER_BYTES) {
      throw new IllegalArgumentException(kind + " header of " + headerLen + " bytes exceeds "
          + MAX_HEADER_BYTES);
    }
    if (payloadCapacity < 0) {
      throw new IllegalArgumentException("negative payload capacity " + payloadCapacity);
    }
    long total = (long) FIXED_BYTES + headerLen + payloadCapacity;
    if (total > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("message of " + total + " bytes is too large");
    }
    return total;
  }

  /** The fixed header and the protobuf header at {@code start}; leaves the position where the payload starts. */
  private static void writeHead(RegisteredBuffer m, int start, int total, MessageKind kind, long requestId,
      int headerLen, HeaderWriter writer) throws IOException {
    ByteBuffer b = m.nio();
    b.clear().limit(start + total).position(start);
    b.order(ByteOrder.BIG_ENDIAN);
    b.put((byte) VERSION).put((byte) kind.code()).putShort((short) 0).putInt(headerLen).putLong(requestId);
    if (headerLen > 0) {
      ByteBuffer h = b.slice(start + FIXED_BYTES, headerLen);
      CodedOutputStream out = CodedOutputStream.newInstance(h);
      writer.write(out);
      out.flush();
      if (out.spaceLeft() != 0) {
        throw new IllegalStateException(kind + " header wrote " + (headerLen - out.spaceLeft())
            + " of " + headerLen + " bytes");
      }
    }
    b.position(start + FIXED_BYTES + headerLen);
  }

  // ------------------------------------------------------------------ decode

  /**
   * Decodes {@code buffer.nio()} from position to limit. Does not take over
   * the buffer's reference and does not move its position; the returned
   * message's payload is a view valid until the buffer is released.
   *
   * @throws ProtocolException the bytes are not a valid message
   */
  public static Message decode(RegisteredBuffer buffer) throws ProtocolException {
    return decode(buffer, buffer.nio());
  }

  /** As {@link #decode(RegisteredBuffer)}, of plain bytes (no buffer to release). */
  public static Message decode(ByteBuffer bytes) throws ProtocolException {
    return decode(null, bytes);
  }

  private static Message decode(RegisteredBuffer owner, ByteBuffer nio) throws ProtocolException {
    ByteBuffer b = nio.duplicate().order(ByteOrder.BIG_ENDIAN);
    int start = b.position();
    int length = b.remaining();
    if (length < FIXED_BYTES) {
      throw new ProtocolException("message of " + length + " bytes is shorter than the " + FIXED_BYTES
          + "-byte fixed header");
    }
    int version = b.get(start) & 0xff;
    if (version != VERSION) {
      throw new ProtocolException("unsupported message version " + version + " (this side speaks "
          + VERSION + ")");
    }
    int code = b.get(start + 1) & 0xff;
    MessageKind kind = MessageKind.of(code);
    if (kind == null) {
      throw new ProtocolException("unknown message kind 0x" + Integer.toHexString(code));
    }
    int flags = b.getShort(start + 2) & 0xffff;
    if (flags != 0) {
      throw new ProtocolException(kind + ": unknown flags 0x" + Integer.toHexString(flags));
    }
    long headerLen = b.getInt(start + 4) & 0xffffffffL;
    long requestId = b.getLong(start + 8);
    if (headerLen > MAX_HEADER_BYTES) {
      throw new ProtocolException(kind + ": header of " + headerLen + " bytes exceeds the limit of "
          + MAX_HEADER_BYTES);
    }
    if (headerLen > length - FIXED_BYTES) {
      throw new ProtocolException(kind + ": header of " + headerLen + " bytes runs past the end of a "
          + length + "-byte message");
    }
    if (!kind.implemented()) {
      throw new ProtocolException(kind + " is reserved and not implemented by this side");
    }
    int hl = (int) headerLen;
    ByteBuffer header = b.slice(start + FIXED_BYTES, hl);
    Object parsed = parseHeader(kind, header);
    ByteBuffer payload = b.slice(start + FIXED_BYTES + hl, length - FIXED_BYTES - hl);
    return new Message(owner, kind, requestId, parsed, payload);
  }

  private static Object parseHeader(MessageKind kind, ByteBuffer header) throws ProtocolException {
    return switch (kind) {
      case INFO_REQUEST, SHM_MAPPED, SHM_DECLINED -> {
        if (header.hasRemaining()) {
          throw new ProtocolException(kind + " carries a " + header.remaining() + "-byte header; it has none");
        }
        yield null;
      }
      case SHM_REQUEST -> parseOwn(kind, HrdmaProtos.ShmRequest.parser(), header);
      case SHM_GRANT -> parseOwn(kind, HrdmaProtos.ShmGrant.parser(), header);
      case DATA_REF -> parseOwn(kind, HrdmaProtos.ShmRef.parser(), header);
      case SHM_RELEASE, WRITE_SHM_RELEASE -> parseOwn(kind, HrdmaProtos.ShmRelease.parser(), header);
      case WRITE_SHM_REQUEST -> parseOwn(kind, HrdmaProtos.ShmRequest.parser(), header);
      case WRITE_SHM_GRANT -> parseOwn(kind, HrdmaProtos.WriteShmGrant.parser(), header);
      case WRITE_REF -> parseOwn(kind, HrdmaProtos.ShmRef.parser(), header);
      case INFO_REPLY -> InfoReply.parse(CodedInputStream.newInstance(header));
      case READ_REQUEST -> parse(kind, OpReadBlockProto.parser(), header);
      case READ_RESPONSE, WRITE_RESPONSE, ERROR -> parse(kind, BlockOpResponseProto.parser(), header);
      case WRITE_REQUEST -> parse(kind, OpWriteBlockProto.parser(), header);
      case PIPELINE_ACK -> parse(kind, PipelineAckProto.parser(), header);
      case DATA_PACKET -> parse(kind, PacketHeaderProto.parser(), header);
      case READ_STATUS -> parse(kind, ClientReadStatusProto.parser(), header);
      case SASL_HANDSHAKE -> parse(kind, DataTransferEncryptorMessageProto.parser(), header);
      default -> throw new ProtocolException(kind + " has no decoder");
    };
  }

  /** As {@link #parse}, for our own headers (proto/, plain protobuf-java rather than Hadoop's shaded copy). */
  private static <T> T parseOwn(MessageKind kind, com.google.protobuf.Parser<T> parser, ByteBuffer header)
      throws ProtocolException {
    try {
      return parser.parseFrom(header);
    } catch (com.google.protobuf.InvalidProtocolBufferException e) {
      throw new ProtocolException(kind + ": header is not a valid " + kind.name() + " protobuf message: "
          + e.getMessage());
    }
  }

  private static <T> T parse(MessageKind kind, Parser<T> parser, ByteBuffer header) throws ProtocolException {
    try {
      return parser.parseFrom(header);
    } catch (InvalidProtocolBufferException e) {
      throw new ProtocolException(kind + ": header is not a valid " + kind.name() + " protobuf message: "
          + e.getMessage());
    }
  }
}
