package org.hdfsrdma.transport.ucx;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import org.hdfsrdma.nativelib.Jni;
import org.hdfsrdma.transport.Capability;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;

/**
 * A connection over the UCP stream API. Frames on the byte stream:
 *
 * <pre>
 *  0       4    5         8
 *  +-------+----+---------+------------------------+
 *  | len   |kind| 0 0 0   | payload (len bytes)    |
 *  +-------+----+---------+------------------------+
 *  len: u32 big-endian, bounded by the kind's limit before anything is allocated
 *  kind: HELLO, HELLO_REPLY, DATA, CREDIT, CLOSE; the pad must be zero, except that a DATA
 *  frame to a peer whose hello lists the "placement" capability may say 1 0x0NNN: a
 *  placement hint, the payload's byte at page offset 0xNNN (u16 big-endian, below 4096) to
 *  land page-aligned (see UcxEndpoint for how the receiver bounds it)
 * </pre>
 *
 * Frames up to {@link #COPY_LIMIT} are copied with their header into one send
 * (socket-like small writes); larger payloads go out of, and come into, the
 * message's registered buffer directly (header and payload are two stream
 * sends; the receiver posts its receive straight into the message buffer).
 */
final class StreamEndpoint extends UcxConnection {
  static final int HEADER = 8;
  static final int COPY_LIMIT = 16 * 1024;
  private static final int STAGING = 256 * 1024;
  private static final int DIRECT_RECV_MIN = 32 * 1024;

  private RegisteredBuffer staging;
  private int sPos;
  private int sLim;
  private RegisteredBuffer msg;
  private int msgPad; // where in msg the message starts (placement)
  private int msgKind;
  private int msgLen;
  private int msgFill;
  private boolean stopped;

  StreamEndpoint(AbstractUcxTransport transport, InetSocketAddress remote, EndpointHandler handler,
      boolean client, CompletableFuture<Endpoint> connected) {
    super(transport, remote, handler, client, connected);
  }

  @Override
  public int onAm(int amId, long length, int pageOffset, long[] out) {
    protocolError("active message on a stream connection");
    return org.hdfsrdma.nativelib.NativeException.ERR_INVALID;
  }

  // ---------------------------------------------------------------- send

  @Override
  protected void sendFrame(int kind, RegisteredBuffer payload, UcxWorkerLoop.Completion done) {
    int len = payload.readableBytes();
    RegisteredBuffer head;
    try {
      head = transport.allocator().allocate(HEADER + (len <= COPY_LIMIT ? len : 0));
    } catch (TransportException e) {
      payload.release();
      done.done(org.hdfsrdma.nativelib.NativeException.ERR_NOMEM, 0);
      return;
    }
    ByteBuffer h = head.nio();
    h.clear();
    int placeAt = payload.placeAligned();
    boolean placed = kind == DATA && transport.placeAligned && placeAt >= 0 && placeAt <= len
        && capabilities().contains(Capability.PLACEMENT);
    h.putInt(len).put((byte) kind).put((byte) (placed ? 1 : 0))
        .putShort((short) (placed ? placeAt % Jni.PLACE_PAGE : 0));
    if (len <= COPY_LIMIT) {
      h.put(payload.nio().duplicate()).flip();
      payload.release();
      post(head, done);
    } else {
      h.flip();
      post(head, (st, l) -> { });
      post(payload, done);
    }
  }

  /** Test hook: raw bytes on the stream, no framing (loop thread). */
  void sendRawBytes(byte[] bytes) throws TransportException {
    RegisteredBuffer b = transport.allocator().allocate(bytes.length);
    b.nio().clear();
    b.nio().put(bytes).flip();
    post(b, (st, l) -> { });
  }

  /** One stream send; releases {@code b} when done. */
  private void post(RegisteredBuffer b, UcxWorkerLoop.Completion done) {
    long cookie = loop.newCookie();
    long len = b.readableBytes();
    int st = Jni.streamSend0(ep, b.address() + b.nio().position(), len, b.memoryHandle(), cookie);
    if (st == Jni.INPROGRESS) {
      loop.track(cookie, (s, l) -> {
        b.release();
        done.done(s, l);
      });
    } else {
      b.release();
      done.done(st, len);
    }
  }

  // ------------------------------------------------------------- receive

  @Override
  protected void startReceiving() {
    try {
      staging = transport.allocator().allocate(STAGING);
    } catch (TransportException e) {
      fail(e);
      return;
    }
    postReceive();
  }

  private void postReceive() {
    while (!stopped && !isDestroyed()) {
      boolean direct = msg != null && sPos == sLim && msgLen - msgFill >= DIRECT_RECV_MIN;
      long addr;
      long cap;
      long memh;
      if (direct) {
        addr = msg.address() + msgPad + msgFill;
        cap = msgLen - msgFill;
        memh = msg.memoryHandle();
      } else {
        if (sPos == sLim) {
          sPos = sLim = 0;
        } else if (sLim == STAGING) {
          // keep the unparsed tail, move it to the front
          ByteBuffer s = staging.nio();
          s.put(0, s, sPos, sLim - sPos);
          sLim -= sPos;
          sPos = 0;
        }
        addr = staging.address() + sLim;
        cap = STAGING - sLim;
        memh = staging.memoryHandle();
      }
      long cookie = loop.newCookie();
      long r = Jni.streamRecv0(ep, addr, cap, memh, cookie);
      if (r > 0) {
        received(direct, (int) r);
      } else if (r == 0) {
        loop.track(cookie, (st, len) -> {
          if (stopped || isDestroyed()) {
            return;
          }
          if (st < 0) {
            onError(st);
            return;
          }
          received(direct, (int) len);
          postReceive();
        });
        return;
      } else {
        onError((int) r);
        return;
      }
    }
  }

  @Override
  protected long partialBytes() {
    return msg != null ? Math.max(1, msgLen - msgFill) : sLim - sPos;
  }

  private void received(boolean direct, int n) {
    receivedBytes();
    if (direct) {
      msgFill += n;
      if (msgFill == msgLen) {
        emit();
      }
    } else {
      sLim += n;
    }
    parse();
  }

  private void parse() {
    ByteBuffer s = staging.nio();
    while (!stopped && !isDestroyed()) {
      if (msg == null) {
        if (sLim - sPos < HEADER) {
          return;
        }
        long len = s.getInt(sPos) & 0xffffffffL;
        int kind = s.get(sPos + 4);
        int flag = s.get(sPos + 5) & 0xff;
        int pageOffset = s.getShort(sPos + 6) & 0xffff;
        sPos += HEADER;
        boolean hint = flag == 1 && kind == DATA && pageOffset < Jni.PLACE_PAGE;
        if (kind < 0 || kind >= KINDS || (flag != 0 || pageOffset != 0) && !hint) {
          protocolError("garbage on the stream (frame kind " + kind + ", pad " + flag + " "
              + pageOffset + ")");
          return;
        }
        if (len > limitFor(kind)) {
          protocolError(kindName(kind) + " of " + len + " bytes exceeds the limit of "
              + limitFor(kind));
          return;
        }
        if (kind == DATA && !takeCredit()) {
          // decided before any buffer is taken: a peer past its credits gets nothing of ours
          protocolError("the peer sent more messages than the " + ownCredits() + " credits it was granted");
          return;
        }
        int pad = hint ? UcxEndpoint.padFor(transport.allocator(), pageOffset, len) : 0;
        try {
          msg = transport.allocator().allocate((int) Math.max(1, len + pad));
        } catch (TransportException e) {
          if (kind == DATA) {
            returnCredit();
          }
          fail(e);
          return;
        }
        msgPad = UcxEndpoint.placedPad(msg, pad, pageOffset);
        msgKind = kind;
        msgLen = (int) len;
        msgFill = 0;
        if (msgLen == 0) {
          emit();
        }
      } else {
        int k = Math.min(sLim - sPos, msgLen - msgFill);
        if (k == 0) {
          return;
        }
        msg.nio().put(msgPad + msgFill, s, sPos, k);
        sPos += k;
        msgFill += k;
        if (msgFill == msgLen) {
          emit();
        }
      }
    }
  }

  private void emit() {
    RegisteredBuffer m = msg;
    msg = null;
    m.nio().clear().position(msgPad).limit(msgPad + msgLen);
    onFrame(msgKind, m);
  }

  @Override
  protected void stopReceiving() {
    stopped = true;
    if (staging != null) {
      staging.release();
      staging = null;
    }
    if (msg != null) {
      msg.release();
      msg = null;
    }
  }
}
