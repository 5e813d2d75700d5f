package org.hdfsrdma.nativelib;

/**
 * Upcalls from a native worker. They run on the thread that drives the worker
 * (inside {@link Jni#workerProgress0} or a close) and must not throw: an
 * exception is printed and dropped by the JNI layer.
 */
public interface WorkerCallbacks {
  /** A client connects; call {@link Jni#connAccept0} or {@link Jni#connReject0} before returning. */
  void onConnRequest(long listenerToken, long request, String peer);

  /**
   * An active message of {@code length} bytes arrived. Return a negative status
   * to drop it, or 0 after filling {@code out}: [0] destination address (at least
   * length bytes), [1] native memory handle of its region or 0, [2] a cookie that
   * {@link #onRecvDone} will carry. {@code pageOffset}: the sender's placement hint, in
   * [0, {@link Jni#PLACE_PAGE}): the message byte at that offset within a page should land at a
   * page-aligned address; -1 for none.
   */
  int onAm(long epToken, int amId, long length, int pageOffset, long[] out);

  void onRecvDone(long epToken, long cookie, int status, long length);

  void onOpDone(long epToken, long cookie, int status, long length);

  void onEpError(long epToken, int status);
}
