package org.hdfsrdma.transport.tcp;

import com.google.protobuf.MessageLite;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelConfig;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.DecoderException;
import io.netty.util.UncheckedBooleanSupplier;
import java.util.List;
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
 * is a {@link TransportException.Protocol}. The layout's constants are in
 * {@link TcpWire}, which the blocking bootstrap hello ({@link TcpBootstrap}) uses
 * without Netty.
 */
final class TcpFrames {
  private TcpFrames() {}

  static final int LENGTH_BYTES = TcpWire.LENGTH_BYTES;
  static final int HEADER_BYTES = TcpWire.HEADER_BYTES;

  static final byte HELLO = TcpWire.HELLO;
  static final byte HELLO_REPLY = TcpWire.HELLO_REPLY;
  static final byte DATA = TcpWire.DATA;
  static final byte CREDIT = TcpWire.CREDIT;
  static final byte CLOSE = TcpWire.CLOSE;

  static String typeName(int type) {
    return TcpWire.typeName(type);
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
   * DATA payloads of at least this many bytes are received straight into
   * their own buffer (see {@link Decoder}); smaller frames take the slice path.
   */
  static final int DIRECT_RECEIVE_MIN = 64 << 10;

  /**
   * How much the first socket read after a directly received frame asks for:
   * enough for the next header and a few small frames, little enough that
   * copying a large payload's first bytes out of it costs nothing.
   */
  static final int HEADER_PROBE_BYTES = 1024;

  /** The most SO_RCVLOWAT asks for while a large frame arrives. */
  static final int LOWAT_MAX = 256 << 10;

  /**
   * Splits the byte stream into frames ({@code type | payload}, the length
   * stripped). I/O thread only.
   *
   * <p>Small frames are retained slices of the received bytes: no copy unless
   * a frame spans several socket reads, in which case it is kept as a
   * composite (no copy while it arrives) and flattened once by the endpoint.
   *
   * <p>A DATA frame (after the hello) whose payload has at least
   * {@code directMin} bytes and has not fully arrived yet gets its own pooled
   * direct buffer of exactly its length as soon as its header is read; the
   * bytes already received are copied into it, and until it is full the
   * channel's socket reads go straight into its unwritten region
   * ({@link #recvAllocator}), so the kernel copies the rest of the payload
   * into the message's final memory and nothing copies it again. The first
   * read after such a frame is small ({@link #HEADER_PROBE_BYTES}), so that
   * little of the next large payload lands anywhere but its own buffer.
   *
   * <p>The length is bounded before anything is allocated.
   */
  static final class Decoder extends ByteToMessageDecoder {
    private final int directMin;
    private long limit = Protocol.MAX_CONTROL_MESSAGE;
    private boolean helloDone;
    private boolean failed;
    /** The large frame being received (type byte + payload), or null. */
    private ByteBuf large;
    /** The region of {@code large} handed to the current socket read, or null. */
    private ByteBuf view;
    /** The next read is the first after a large frame: keep it small. */
    private boolean probe;
    /** The channel's SO_RCVLOWAT while it is set above 1 (epoll only), else 1. */
    private int lowat = 1;
    /** Sets SO_RCVLOWAT, or null when the channel cannot (NIO). */
    private java.util.function.IntPredicate setLowat;
    /** Frames received in their own buffer, and socket reads that went straight into one. */
    private long directFrames;
    private long directReads;

    Decoder() {
      this(DIRECT_RECEIVE_MIN);
    }

    Decoder(int directMin) {
      this.directMin = Math.max(1, directMin);
      setCumulator(COMPOSITE_CUMULATOR);
    }

    /**
     * Whether the peer may have one more message held here (its credits); asked before a
     * large frame's buffer is taken, so that a peer over its credits allocates nothing.
     */
    private java.util.function.BooleanSupplier underCredits = () -> true;

    void underCredits(java.util.function.BooleanSupplier s) {
      underCredits = s;
    }

    /** Raises the bound once the hello exchange is done. */
    void helloDone(int maxMessage) {
      limit = maxMessage + 1L;
      helloDone = true;
    }

    /** Large DATA frames received into their own buffer so far (tests; I/O thread). */
    long directFrames() {
      return directFrames;
    }

    /** Bytes of a frame that has begun to arrive and is not whole yet (I/O thread). */
    int partialBytes() {
      return actualReadableBytes() + (large != null ? large.readableBytes() + LENGTH_BYTES : 0);
    }

    /** Whether a large frame is being received (tests; I/O thread). */
    boolean holdsLargeFrame() {
      return large != null;
    }

    /** Socket reads that went straight into a large frame's buffer (tests; I/O thread). */
    long directReads() {
      return directReads;
    }

    /**
     * Wraps the channel's read-buffer allocator so that reads land in the
     * large frame being received. Install on the channel before it reads.
     */
    RecvByteBufAllocator recvAllocator(RecvByteBufAllocator normal) {
      return recvAllocator(normal, null);
    }

    RecvByteBufAllocator recvAllocator(RecvByteBufAllocator normal,
        java.util.function.IntPredicate setLowat) {
      this.setLowat = setLowat;
      return () -> new DirectHandle((RecvByteBufAllocator.ExtendedHandle) normal.newHandle());
    }

    /** Where the next socket read should go: a view of the large frame's rest, or null. */
    private ByteBuf nextRead(ByteBufAllocator alloc) {
      if (large != null && large.isWritable()) {
        // A plain (not recycled) slice: channelRead recognises it by identity.
        view = large.slice(large.writerIndex(), large.writableBytes()).clear().retain();
        return view;
      }
      view = null;
      if (probe) {
        probe = false;
        return alloc.directBuffer(HEADER_PROBE_BYTES, HEADER_PROBE_BYTES);
      }
      return null;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
      if (msg != view || view == null) {
        super.channelRead(ctx, msg);
        return;
      }
      // The kernel wrote these bytes into the large frame itself.
      ByteBuf v = view;
      view = null;
      int n = v.readableBytes();
      v.release();
      large.writerIndex(large.writerIndex() + n);
      directReads++;
      wakeAt(large.writableBytes());
      if (!large.isWritable()) {
        ByteBuf frame = large;
        large = null;
        probe = true;
        directFrames++;
        ctx.fireChannelRead(frame);
      }
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
      if (failed) {
        in.skipBytes(in.readableBytes());
        return;
      }
      try {
        decodeOne(ctx, in, out);
      } catch (FrameError e) {
        failed = true;
        in.skipBytes(in.readableBytes());
        throw e;
      }
    }

    private void decodeOne(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
      if (large != null) {
        // Only the read that carried the header ends here; later reads go into large itself.
        in.readBytes(large, Math.min(in.readableBytes(), large.writableBytes()));
        if (!large.isWritable()) {
          out.add(large);
          large = null;
        }
        return;
      }
      if (in.readableBytes() < LENGTH_BYTES) {
        return;
      }
      int at = in.readerIndex();
      long n = in.getUnsignedInt(at);
      if (n == 0) {
        throw protocol("empty frame (length 0, no type byte)");
      }
      if (n > limit || n > Integer.MAX_VALUE - HEADER_BYTES) {
        throw protocol("frame length " + n + " exceeds the limit of " + limit
            + (limit == Protocol.MAX_CONTROL_MESSAGE ? " before the hello is done" : ""));
      }
      int len = (int) n;
      int have = in.readableBytes() - LENGTH_BYTES;
      if (have >= len) {
        in.skipBytes(LENGTH_BYTES);
        out.add(in.readRetainedSlice(len));
        return;
      }
      if (helloDone && have >= 1 && len - 1 >= directMin && in.getByte(at + LENGTH_BYTES) == DATA) {
        if (!underCredits.getAsBoolean()) {
          throw protocol("a DATA frame of " + len + " bytes beyond the credits the peer was granted");
        }
        // Bounded above, so this allocation is at most the receiver's max message + 1.
        large = ctx.alloc().directBuffer(len, len);
        in.skipBytes(LENGTH_BYTES);
        in.readBytes(large, have);
        wakeAt(large.writableBytes());
      }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
      int left = actualReadableBytes() + (large != null ? large.readableBytes() + LENGTH_BYTES : 0);
      dropLarge();
      if (left > 0 && !failed) {
        failed = true;
        ctx.fireExceptionCaught(new FrameError(new TransportException.Protocol(
            "truncated frame at end of stream: " + left + " bytes of an incomplete frame")));
      }
      super.channelInactive(ctx);
    }

    @Override
    protected void handlerRemoved0(ChannelHandlerContext ctx) {
      dropLarge();
    }

    private void dropLarge() {
      if (large != null) {
        large.release();
        large = null;
      }
      view = null; // the channel releases a view it did not deliver
    }

    /**
     * While a large frame arrives, asks the kernel (SO_RCVLOWAT) not to wake
     * this channel for less than a good part of what the frame still lacks,
     * never more than that (those bytes are on their way). Fewer, larger
     * reads: fewer wake-ups, which cost the sending side too on loopback.
     */
    private void wakeAt(int remaining) {
      if (setLowat == null) {
        return;
      }
      int want = remaining <= 0 ? 1 : Math.min(remaining, LOWAT_MAX);
      if (want != lowat && (want < lowat || want >= 2 * lowat || remaining <= 0)) {
        if (setLowat.test(want)) {
          lowat = want;
        } else {
          setLowat = null;
        }
      }
    }

    private static FrameError protocol(String message) {
      return new FrameError(new TransportException.Protocol(message));
    }

    /** The channel's read handle, asking the decoder first where each read should go. */
    private final class DirectHandle implements RecvByteBufAllocator.ExtendedHandle {
      private final RecvByteBufAllocator.ExtendedHandle normal;

      DirectHandle(RecvByteBufAllocator.ExtendedHandle normal) {
        this.normal = normal;
      }

      @Override
      public ByteBuf allocate(ByteBufAllocator alloc) {
        ByteBuf b = nextRead(alloc);
        return b != null ? b : normal.allocate(alloc);
      }

      @Override
      public int guess() {
        return normal.guess();
      }

      @Override
      public void reset(ChannelConfig config) {
        normal.reset(config);
      }

      @Override
      public void incMessagesRead(int numMessages) {
        normal.incMessagesRead(numMessages);
      }

      @Override
      public void lastBytesRead(int bytes) {
        normal.lastBytesRead(bytes);
      }

      @Override
      public int lastBytesRead() {
        return normal.lastBytesRead();
      }

      @Override
      public void attemptedBytesRead(int bytes) {
        normal.attemptedBytesRead(bytes);
      }

      @Override
      public int attemptedBytesRead() {
        return normal.attemptedBytesRead();
      }

      @Override
      public boolean continueReading() {
        return normal.continueReading();
      }

      @Override
      public boolean continueReading(UncheckedBooleanSupplier maybeMoreDataSupplier) {
        return normal.continueReading(maybeMoreDataSupplier);
      }

      @Override
      public void readComplete() {
        normal.readComplete();
      }
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
