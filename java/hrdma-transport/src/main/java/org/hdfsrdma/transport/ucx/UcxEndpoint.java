package org.hdfsrdma.transport.ucx;

import java.net.InetSocketAddress;
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

  @Override
  protected void startReceiving() {
    // active messages arrive through onAm
  }

  @Override
  protected void sendFrame(int kind, RegisteredBuffer payload, UcxWorkerLoop.Completion done) {
    long cookie = loop.newCookie();
    long len = payload.readableBytes();
    int st = Jni.amSend0(ep, kind, payload.address() + payload.nio().position(), len,
        payload.memoryHandle(), cookie);
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

  @Override
  public int onAm(int amId, long length, long[] out) {
    if (amId < 0 || amId >= KINDS) {
      loop.execute(() -> protocolError("unknown message id " + amId));
      return NativeException.ERR_INVALID;
    }
    if (length > limitFor(amId)) {
      loop.execute(() -> protocolError(kindName(amId) + " of " + length
          + " bytes exceeds the limit of " + limitFor(amId)));
      return NativeException.ERR_INVALID;
    }
    RegisteredBuffer b;
    try {
      b = transport.allocator().allocate((int) Math.max(1, length));
    } catch (TransportException e) {
      loop.execute(() -> fail(e));
      return NativeException.ERR_NOMEM;
    }
    long cookie = loop.newCookie();
    loop.track(cookie, (st, len) -> {
      if (st < 0) {
        b.release();
        return;
      }
      b.nio().clear().limit((int) len);
      onFrame(amId, b);
    });
    out[0] = b.address();
    out[1] = b.memoryHandle();
    out[2] = cookie;
    return 0;
  }
}
