package org.hdfsrdma.transport.tcp;

import com.google.protobuf.MessageLite;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import java.nio.ByteOrder;
import org.hdfsrdma.transport.Protocol;
import org.hdfsrdma.transport.TransportException;

/**
 * The tcp transport's wire frames and their decoder.
 *
 * <pre>
 *  0       4       5                                   4 + length
 *  +-------+-------+-----------------------------------+
 *  |length | type  | payload (length - 1 bytes)        |
 *  |  u32  |  u8   |                                   |
 *  +-------+-------+-----------------------------------+
 *   big-endian; length counts type + payload, so it is at least 1
 *
 *  type  name         payload                        who sends it, when
 *  1     HELLO        hrdma.v1.Hello                 connecting side, first frame
 *  2     HELLO_REPLY  hrdma.v1.HelloReply            accepting side, answer to HELLO
 *  3     DATA         the message bytes              either side, after the hello
 *  4     CREDIT       hrdma.v1.Credit                either side, after the hello
 *  5     CLOSE        empty                          either side: no more DATA follows
 * </pre>
 *
 * <p>The decoder bounds {@code length} before anything is allocated: until the
 * hello exchange is done at most {@link Protocol#MAX_CONTROL_MESSAGE}, then
 * 1 + the receiver's {@code hrdma.transport.max-message-bytes}. A violation
 * is a {@link TransportException.Protocol}.
 */
final class TcpFrames {
  private TcpFrames() {}

  static final int LENGTH_BYTES = 4;
  static final int HEADER_BYTES = LENGTH_BYTES + 1;

  static final byte HELLO = 1;
  static final byte HELLO_REPLY = 2;
  static final byte DATA = 3;
  static final byte CREDIT = 4;
  static final byte CLOSE = 5;

  static String typeName(int type) {
    return switch (type) {
      case HELLO -> "HELLO";
      case HELLO_REPLY -> "HELLO_REPLY";
      case DATA -> "DATA";
      case CREDIT -> "CREDIT";
      case CLOSE -> "CLOSE";
      default -> "unknown type " + type;
    };
  }

  /** The 5-byte header of a frame whose payload has {@code payloadBytes}. */
  static ByteBuf header(ByteBufAllocator alloc, byte type, int payloadBytes) {
    ByteBuf b = alloc.directBuffer(HEADER_BYTES);
    b.writeInt(payloadBytes + 1);
    b.writeByte(type);
    return b;
  }

  /** A whole frame carrying a protobuf message (or nothing, when {@code m} is null). */
  static ByteBuf control(ByteBufAllocator alloc, byte type, MessageLite m) {
    byte[] payload = m == null ? new byte[0] : m.toByteArray();
    ByteBuf b = alloc.directBuffer(HEADER_BYTES + payload.length);
    b.writeInt(payload.length + 1);
    b.writeByte(type);
    b.writeBytes(payload);
    return b;
  }

  /**
   * Splits the byte stream into frames ({@code type | payload}, the length
   * stripped), each a retained slice of the received bytes: no copy unless
   * a frame spans several socket reads. Frames that span reads are kept as a
   * composite (no copy while they arrive) and flattened once by the endpoint.
   * I/O thread only.
   */
  static final class Decoder extends LengthFieldBasedFrameDecoder {
    private long limit = Protocol.MAX_CONTROL_MESSAGE;
    private boolean failed;

    Decoder(int maxMessage) {
      // The hard ceiling; the current limit is enforced below, before allocating.
      super(ByteOrder.BIG_ENDIAN,
          (int) Math.min((long) Math.max(maxMessage, Protocol.MAX_CONTROL_MESSAGE) + HEADER_BYTES,
              Integer.MAX_VALUE),
          0, LENGTH_BYTES, 0, LENGTH_BYTES, true);
      setCumulator(COMPOSITE_CUMULATOR);
    }

    /** Raises the bound once the hello exchange is done. */
    void helloDone(int maxMessage) {
      limit = maxMessage + 1L;
    }

    @Override
    protected long getUnadjustedFrameLength(ByteBuf buf, int offset, int length, ByteOrder order) {
      long n = buf.getUnsignedInt(offset);
      if (n == 0) {
        throw protocol("empty frame (length 0, no type byte)");
      }
      if (n > limit) {
        throw protocol("frame length " + n + " exceeds the limit of " + limit
            + (limit == Protocol.MAX_CONTROL_MESSAGE ? " before the hello is done" : ""));
      }
      return n;
    }

    @Override
    protected Object decode(ChannelHandlerContext ctx, ByteBuf in) throws Exception {
      if (failed) {
        in.skipBytes(in.readableBytes());
        return null;
      }
      try {
        return super.decode(ctx, in);
      } catch (FrameError e) {
        failed = true;
        in.skipBytes(in.readableBytes());
        throw e;
      }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
      int left = actualReadableBytes();
      if (left > 0 && !failed) {
        failed = true;
        ctx.fireExceptionCaught(new FrameError(new TransportException.Protocol(
            "truncated frame at end of stream: " + left + " bytes of an incomplete frame")));
      }
      super.channelInactive(ctx);
    }

    private static FrameError protocol(String message) {
      return new FrameError(new TransportException.Protocol(message));
    }
  }

  /** Carries a protocol violation through Netty's pipeline. */
  static final class FrameError extends DecoderException {
    final TransportException.Protocol error;

    FrameError(TransportException.Protocol error) {
      super(error.getMessage(), error);
      this.error = error;
    }

    @Override
    public synchronized Throwable fillInStackTrace() {
      return this; // the message says it all; the cause has the trace
    }
  }
}
