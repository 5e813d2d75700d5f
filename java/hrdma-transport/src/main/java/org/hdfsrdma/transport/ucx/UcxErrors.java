package org.hdfsrdma.transport.ucx;

import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.transport.TransportException;

/** Maps native status codes to transport exceptions. */
final class UcxErrors {
  private UcxErrors() {}

  static TransportException of(String what, int status) {
    String msg = what + ": " + HrdmaNative.statusString(status);
    switch (status) {
      case NativeException.ERR_UNREACHABLE:
        return new TransportException.Unreachable(msg, status, null);
      case NativeException.ERR_PEER_FAILED:
      case NativeException.ERR_TIMEOUT:
        return new TransportException.PeerFailed(msg, status, null);
      case NativeException.ERR_CANCELED:
      case NativeException.ERR_CLOSED:
        return new TransportException.Closed(msg);
      default:
        return new TransportException(msg, status, null);
    }
  }

  static TransportException of(String what, NativeException e) {
    TransportException t = of(what, e.status());
    t.initCause(e);
    return t;
  }
}
