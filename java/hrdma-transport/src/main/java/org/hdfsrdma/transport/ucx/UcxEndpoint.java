package org.hdfsrdma.transport.ucx;

import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import org.hdfsrdma.nativelib.Jni;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.transport.BufferAllocator;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;

/**
 * A connection whose frames are UCX active messages: the AM id is the frame
 * kind, the AM payload the frame. Small messages go eagerly; large ones by
 * rendezvous, which UCX turns into zero-copy RDMA on InfiniBand and RoCE.
 * Each received message lands in a registered buffer from the pool.
 *
 * <p>Placement: a DATA message whose buffer has a {@link RegisteredBuffer#placeAligned} hint
 * carries it in the active message's user header ({@code Jni#amSend0}). The receiver then
 * starts the message {@code pad} bytes into its buffer so that the hinted byte lands page
 * aligned, and delivers the buffer with its position at the pad. The pad is below a page and
 * taken only where it keeps the buffer in the same size class of the pool (or adds at most
 * a sixteenth to a large buffer of its own), so a peer's hint can neither enlarge what its
 * credits pin nor point outside the buffer; anything else is ignored (placed at 0, as an
 * unhinted message). Receivers of older versions ignore the header.
 */
final class UcxEndpoint extends UcxConnection {

  UcxEndpoint(AbstractUcxTransport transport, InetSocketAddress remote, EndpointHandler handler,
      boolean client, CompletableFuture<Endpoint> connected) {
    super(transport, remote, handler, client, connected);
  }

  /** A message whose data is on its way; status 0 pending, 1 done, negative failed. */
  private static final class Arrival {
    final int kind;
    final RegisteredBuffer buffer;
    int status;
    boolean detached; // the connection is gone; the completion frees the buffer

    Arrival(int kind, RegisteredBuffer buffer) {
      this.kind = kind;
      this.buffer = buffer;
    }
  }

  private final ArrayDeque<Arrival> arrivals = new ArrayDeque<>();

  private void deliverArrived() {
    Arrival a;
    while ((a = arrivals.peekFirst()) != null && a.status != 0) {
      arrivals.pollFirst();
      if (a.status < 0 || isDestroyed()) {
        a.buffer.release();
      } else {
        onFrame(a.kind, a.buffer);
      }
    }
  }

  @Override
  protected void stopReceiving() {
    Arrival a;
    while ((a = arrivals.pollFirst()) != null) {
      if (a.status != 0) {
        a.buffer.release();
      } else {
        a.detached = true; // released by its completion (canceled by the close)
      }
    }
  }

  @Override
  protected void startReceiving() {
    // active messages arrive through onAm
  }

  @Override
  protected void sendFrame(int kind, RegisteredBuffer payload, UcxWorkerLoop.Completion done) {
    long cookie = loop.newCookie();
    long len = payload.readableBytes();
    int placeAt = transport.placeAligned ? payload.placeAligned() : -1;
    int st = Jni.amSend0(ep, kind, payload.address() + payload.nio().position(), len,
        transport.amMemoryHandle(payload), kind == DATA && placeAt <= len ? placeAt : -1, cookie);
    if (st == Jni.INPROGRESS) {
      loop.track(cookie, (s, l) -> {
        payload.release();
        done.done(s, l);
      });
    } else {
      payload.release();
      done.done(st, len);
    }
  }

  /** A rendezvous whose data has not landed: the head of the arrivals still pending. */
  @Override
  protected long partialBytes() {
    long n = 0;
    for (Arrival a : arrivals) {
      if (a.status == 0) {
        n += Math.max(1, a.buffer.capacity());
      }
    }
    return n;
  }

  @Override
  public int onAm(int amId, long length, int pageOffset, long[] out) {
    receivedBytes();
    if (amId < 0 || amId >= KINDS) {
      // Decided here, in the callback: a later endpoint error must not replace the cause.
      protocolError("unknown message id " + amId);
      return NativeException.ERR_INVALID;
    }
    if (length > limitFor(amId)) {
      protocolError(kindName(amId) + " of " + length
          + " bytes exceeds the limit of " + limitFor(amId));
      return NativeException.ERR_INVALID;
    }
    if (amId == DATA && !takeCredit()) {
      // decided before any buffer is taken: a peer past its credits gets nothing of ours
      protocolError("the peer sent more messages than the " + ownCredits() + " credits it was granted");
      return NativeException.ERR_INVALID;
    }
    RegisteredBuffer b;
    int pad = amId == DATA ? padFor(transport.allocator(), pageOffset, length) : 0;
    try {
      b = transport.allocator().allocate((int) Math.max(1, length + pad));
    } catch (TransportException e) {
      if (amId == DATA) {
        returnCredit();
      }
      fail(e);
      return NativeException.ERR_NOMEM;
    }
    pad = placedPad(b, pad, pageOffset);
    // Rendezvous data can land after later eager messages: deliver in arrival order.
    Arrival a = new Arrival(amId, b);
    int at = pad; // where the message starts in b
    arrivals.addLast(a);
    long cookie = loop.newCookie();
    loop.track(cookie, (st, len) -> {
      receivedBytes();
      a.status = st < 0 ? st : 1;
      if (a.detached) {
        b.release();
        return;
      }
      if (st < 0) {
        b.nio().clear().limit(0);
      } else {
        b.nio().clear().position(at).limit(at + (int) len);
      }
      deliverArrived();
    });
    out[0] = b.address() + pad;
    out[1] = transport.amMemoryHandle(b);
    out[2] = cookie;
    return 0;
  }

  /**
   * The bytes to start a message of {@code length} into its buffer so that the byte at
   * {@code pageOffset} within a page lands page aligned (the pool's buffers are): 0 without a
   * hint, for a hint past the message, or where the pad would take a larger size class (more
   * than a sixteenth more memory).
   */
  static int padFor(BufferAllocator alloc, int pageOffset, long length) {
    if (pageOffset < 0 || pageOffset >= Jni.PLACE_PAGE || pageOffset > length) {
      return 0;
    }
    int pad = -pageOffset & (Jni.PLACE_PAGE - 1);
    if (pad == 0 || length > Integer.MAX_VALUE - Jni.PLACE_PAGE) {
      return 0;
    }
    long plain = alloc.footprint((int) Math.max(1, length));
    // the same size class; past the pool's classes (a buffer of its own), a page on a large one
    return alloc.footprint((int) (length + pad)) * 16 <= plain * 17 ? pad : 0;
  }

  /**
   * {@code pad} ({@link #padFor}) where {@code b}, allocated with room for it, really puts the
   * hinted byte at a page-aligned address; else 0 (an allocator whose buffers are not page
   * aligned): no placement.
   */
  static int placedPad(RegisteredBuffer b, int pad, int pageOffset) {
    return pad > 0 && ((b.address() + pad + pageOffset) & (Jni.PLACE_PAGE - 1)) != 0 ? 0 : pad;
  }
}
