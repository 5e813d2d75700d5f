package org.hdfsrdma.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.hdfsrdma.transport.Protocol;
import org.hdfsrdma.transport.TransportException;

/**
 * Coverage-guided fuzzing of the tcp transport's frame decoder ({@link TcpFrames.Decoder}), fed a
 * peer's byte stream in arbitrary pieces. Properties: the frames decoded are exactly those an
 * independent reading of the stream finds, up to the first violation; a violation (empty frame,
 * frame over the bound in force, truncated stream) is a {@link TransportException.Protocol} and
 * nothing else; no allocation asks for more than the bound in force (the channel's allocator
 * fails the test if it does); every buffer is released at the end. Seeds:
 * {@code TcpFramesFuzzTestInputs/decode/}.
 */
class TcpFramesFuzzTest {

  /** Fails the test on any buffer larger than {@code bound}; remembers every buffer it made. */
  private static final class BoundedAllocator extends AbstractByteBufAllocator {
    private final UnpooledByteBufAllocator real = new UnpooledByteBufAllocator(true);
    final List<ByteBuf> made = new ArrayList<>();
    long bound;

    BoundedAllocator() {
      super(true);
    }

    private ByteBuf check(int initial, ByteBuf b) {
      if (initial > bound) {
        b.release();
        throw new AssertionError("asked for " + initial + " bytes, above the bound " + bound);
      }
      made.add(b);
      return b;
    }

    @Override
    protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
      return check(initialCapacity, real.heapBuffer(initialCapacity, maxCapacity));
    }

    @Override
    protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
      return check(initialCapacity, real.directBuffer(initialCapacity, maxCapacity));
    }

    @Override
    public CompositeByteBuf compositeDirectBuffer(int maxNumComponents) {
      CompositeByteBuf c = real.compositeDirectBuffer(maxNumComponents);
      made.add(c);
      return c;
    }

    @Override
    public CompositeByteBuf compositeHeapBuffer(int maxNumComponents) {
      CompositeByteBuf c = real.compositeHeapBuffer(maxNumComponents);
      made.add(c);
      return c;
    }

    @Override
    public boolean isDirectBufferPooled() {
      return false;
    }
  }

  @FuzzTest(maxDuration = "30s")
  void decode(FuzzedDataProvider data) {
    int maxMessage = data.consumeInt(1, 256 << 10);
    int directMin = data.consumeInt(1, 1 << 10);
    boolean hello = data.consumeBoolean(); // the first frame completes a hello
    int pieces = data.consumeInt(1, 16);
    byte[] stream = data.consumeRemainingAsBytes();

    TcpFrames.Decoder decoder = new TcpFrames.Decoder(directMin);
    BoundedAllocator alloc = new BoundedAllocator();
    alloc.bound = Protocol.MAX_CONTROL_MESSAGE;
    List<byte[]> frames = new ArrayList<>();
    List<Throwable> errors = new ArrayList<>();
    EmbeddedChannel ch = new EmbeddedChannel();
    ch.config().setAllocator(alloc);
    ch.pipeline().addLast(decoder, new ChannelInboundHandlerAdapter() {
      @Override
      public void channelRead(ChannelHandlerContext ctx, Object msg) {
        ByteBuf f = (ByteBuf) msg;
        try {
          assertTrue(f.readableBytes() >= 1 && f.readableBytes() <= alloc.bound,
              "frame of " + f.readableBytes() + " bytes, bound " + alloc.bound);
          byte[] a = new byte[f.readableBytes()];
          f.getBytes(f.readerIndex(), a);
          frames.add(a);
          if (hello && frames.size() == 1) {
            // as TcpEndpoint does once the hello exchange is done
            decoder.helloDone(maxMessage);
            alloc.bound = maxMessage + 1L;
          }
        } finally {
          f.release();
        }
      }

      @Override
      public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        errors.add(cause);
      }
    });

    List<ByteBuf> fed = new ArrayList<>();
    int at = 0;
    for (int i = 0; i < pieces && at < stream.length; i++) {
      int n = i == pieces - 1 ? stream.length - at : Math.min(stream.length - at, 1 + (stream[at] & 0x7f));
      ByteBuf piece = Unpooled.directBuffer(n).writeBytes(stream, at, n);
      fed.add(piece);
      at += n;
      try {
        ch.writeInbound(piece.retain());
      } catch (DecoderException e) {
        errors.add(e);
      }
    }
    boolean fedAll = at == stream.length;
    ch.finishAndReleaseAll();

    // The same stream read independently: the frames before the first violation.
    List<byte[]> expected = new ArrayList<>();
    boolean violation = false;
    long limit = Protocol.MAX_CONTROL_MESSAGE;
    ByteBuffer s = ByteBuffer.wrap(stream, 0, at);
    while (true) {
      if (s.remaining() < 4) {
        violation |= s.hasRemaining();
        break;
      }
      long n = s.getInt(s.position()) & 0xffffffffL;
      if (n == 0 || n > limit) {
        violation = true;
        break;
      }
      if (s.remaining() - 4 < n) {
        violation = true; // truncated at the end of the stream
        break;
      }
      byte[] f = new byte[(int) n];
      s.position(s.position() + 4).get(f);
      expected.add(f);
      if (hello && expected.size() == 1) {
        limit = maxMessage + 1L;
      }
    }
    assertTrue(fedAll);
    assertEquals(expected.size(), frames.size(), "frames decoded");
    for (int i = 0; i < expected.size(); i++) {
      assertArrayEquals(expected.get(i), frames.get(i), "frame " + i);
    }
    assertEquals(violation ? 1 : 0, errors.size(), "one error per violation: " + errors);
    for (Throwable e : errors) {
      assertInstanceOf(TcpFrames.FrameError.class, e, "not a protocol error");
      assertInstanceOf(TransportException.Protocol.class, e.getCause());
    }
    for (ByteBuf b : fed) {
      b.release();
      assertEquals(0, b.refCnt(), "an input buffer is still held");
    }
    for (ByteBuf b : alloc.made) {
      assertEquals(0, b.refCnt(), "a buffer the decoder allocated is still held");
    }
    if (!ch.inboundMessages().isEmpty()) {
      fail("frames left in the channel");
    }
  }
}
