package org.hdfsrdma.transport.ucx;

import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import org.hdfsrdma.nativelib.Jni;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;

/**
 * A connection whose frames are UCX active messages: the AM id is the frame
 * kind, the AM payload the frame. Small messages go eagerly; large ones by
 * rendezvous, which UCX turns into zero-copy RDMA on InfiniBand and RoCE.
 * Each received message lands in a registered buffer from the pool.
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
    int st = Jni.amSend0(ep, kind, payload.address() + payload.nio().position(), len,
        transport.amMemoryHandle(payload), cookie);
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
  public int onAm(int amId, long length, long[] out) {
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
    try {
      b = transport.allocator().allocate((int) Math.max(1, length));
    } catch (TransportException e) {
      if (amId == DATA) {
        returnCredit();
      }
      fail(e);
      return NativeException.ERR_NOMEM;
    }
    // Rendezvous data can land after later eager messages: deliver in arrival order.
    Arrival a = new Arrival(amId, b);
    arrivals.addLast(a);
    long cookie = loop.newCookie();
    loop.track(cookie, (st, len) -> {
      receivedBytes();
      a.status = st < 0 ? st : 1;
      if (a.detached) {
        b.release();
        return;
      }
      b.nio().clear().limit(st < 0 ? 0 : (int) len);
      deliverArrived();
    });
    out[0] = b.address();
    out[1] = transport.amMemoryHandle(b);
    out[2] = cookie;
    return 0;
  }
}
