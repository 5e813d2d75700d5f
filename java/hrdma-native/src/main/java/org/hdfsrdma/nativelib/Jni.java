package org.hdfsrdma.nativelib;

import java.nio.ByteBuffer;

/**
 * The natives of libhrdma, one to one with native/include/hrdma/hrdma.h.
 * Handles and addresses are longs. Fast-path natives return a status
 * (0 done, 1 in progress, negative error); slow-path natives throw
 * {@link NativeException}. Call {@link HrdmaNative#ensureAvailable()} first.
 *
 * <p>Threading follows the C API: a worker and its listeners, endpoints and
 * remote keys are used only by the thread that progresses the worker
 * ({@link #workerSignal0} excepted).
 */
public final class Jni {
  private Jni() {}

  public static final int INPROGRESS = 1;

  static native int abiVersion0();

  static native String ucxVersion0();

  static native boolean ucxMemoryHooks0();

  public static native String statusString0(int status);

  static native String probe0() throws NativeException;

  public static native long ctxCreate0(String ucxConfig) throws NativeException;

  public static native int ctxDestroy0(long ctx);

  /** out: bytes registered, regions, endpoints, workers. */
  public static native void ctxStats0(long ctx, long[] out);

  /** out: bytes registered, regions, endpoints, workers, contexts, summed over the process. */
  public static native void processStats0(long[] out);

  public static native String ctxInfo0(long ctx) throws NativeException;

  public static native long memMap0(long ctx, long length) throws NativeException;

  public static native ByteBuffer memBuffer0(long mem);

  public static native long memAddress0(long mem);

  public static native byte[] memPackRkey0(long mem) throws NativeException;

  public static native int memUnmap0(long mem);

  public static native long workerCreate0(long ctx, WorkerCallbacks callbacks)
      throws NativeException;

  public static native int workerDestroy0(long worker);

  public static native int workerProgress0(long worker);

  public static native int workerWait0(long worker, int timeoutMs);

  public static native int workerSignal0(long worker);

  public static native long listenerCreate0(long worker, String ip, int port, long token)
      throws NativeException;

  public static native int listenerPort0(long listener);

  public static native int listenerDestroy0(long listener);

  public static native long connAccept0(long worker, long request, long epToken)
      throws NativeException;

  public static native int connReject0(long worker, long listenerToken, long request);

  public static native long epConnect0(long worker, String ip, int port, long epToken)
      throws NativeException;

  /** Page size placement hints are about ({@code HRDMA_PLACE_PAGE}). */
  public static final int PLACE_PAGE = 4096;

  /**
   * Sends an active message; {@code placeAt} >= 0 (at most {@code len}) asks the receiver to
   * place byte {@code placeAt} of it at a page-aligned address (AM user header), -1 for none.
   */
  public static native int amSend0(long ep, int amId, long addr, long len, long mem, long placeAt, long cookie);

  public static native long rkeyUnpack0(long ep, byte[] packed) throws NativeException;

  public static native void rkeyDestroy0(long rkey);

  public static native int put0(long ep, long addr, long len, long mem, long remoteAddr,
      long rkey, long cookie);

  public static native int get0(long ep, long addr, long len, long mem, long remoteAddr,
      long rkey, long cookie);

  public static native int flush0(long ep, long cookie);

  public static native int streamSend0(long ep, long addr, long len, long mem, long cookie);

  /** > 0: bytes received at once; 0: in progress; < 0: error status. */
  public static native long streamRecv0(long ep, long addr, long cap, long mem, long cookie);

  public static native int epClose0(long ep, boolean force, long cookie);

  public static native void epDestroy0(long ep);

  /** Address of a direct buffer's index 0. */
  public static native long bufferAddress0(ByteBuffer direct);

  public static native int crc32c0(int crc, long addr, long len);

  public static native int crc32cChunksCompute0(long data, long len, int bytesPerChecksum,
      long sums, long sumsLen);

  /** -1: all chunks match; >= 0: offset of the first bad chunk; < -1: -1000 + status. */
  public static native long crc32cChunksVerify0(long data, long len, int bytesPerChecksum,
      long sums, long sumsLen);

  // aead (AES-GCM, NativeGcm)

  public static native boolean gcmAvailable0();

  public static native long gcmCreate0(byte[] key, boolean encrypt) throws NativeException;

  public static native void gcmDestroy0(long gcm);

  /** Status: 0 sealed, negative error. */
  public static native int gcmSeal0(long gcm, long counter, long src, long len, long dst);

  /** Status: 0 opened, -14 (tag mismatch), other negative error. */
  public static native int gcmOpen0(long gcm, long counter, long buf, long len);

  // disk (block files): fast-path natives return a status (or a value >= 0)

  /** >= 0: the file descriptor; < 0: status. flags: NativeDisk.WRITE | NativeDisk.DIRECT. */
  public static native long diskOpen0(String path, int flags);

  public static native int diskClose0(int fd);

  public static native int diskPreallocate0(int fd, long offset, long len);

  public static native int diskTrim0(int fd);

  public static native int diskDropCache0(int fd, long offset, long len, boolean written);

  public static native int diskWriteback0(int fd, long offset, long len);

  /** >= 0: extents; < 0: status. */
  public static native long diskExtentCount0(int fd);

  /** > 0: the O_DIRECT alignment; < 0: status. */
  public static native long diskDirectAlignment0(int fd);

  /** >= 0: bytes of the range in the page cache; < 0: status. */
  public static native long diskResident0(int fd, long off, long len);

  public static native long diskRingCreate0(int depth) throws NativeException;

  public static native int diskRingDestroy0(long ring);

  /** Queues and submits a read of {@code len} bytes at {@code offset} into native memory at {@code addr}. */
  public static native int diskRingRead0(long ring, int fd, long addr, long len, long offset, long cookie);

  /** Completions (u64 cookie, i64 result) stored at out; returns how many, or < 0: status. */
  public static native int diskRingReap0(long ring, long out, int max, int minWait);

  // shm (same-host segments): create and open throw, the system's reason in the message

  /** Creates path (O_EXCL), reserves and maps {@code len} bytes read-write; returns the address. */
  public static native long shmCreate0(String path, long len) throws NativeException;

  /** Maps the first {@code len} bytes of an existing file read-only; returns the address. */
  public static native long shmOpen0(String path, long len) throws NativeException;

  public static native int shmUnmap0(long addr, long len);

  /** A sealed anonymous segment of len bytes, read-write: its address; its descriptor in fdOut[0]. */
  public static native long shmCreateSealed0(long len, int[] fdOut) throws NativeException;

  /** madvise(MADV_REMOVE) over a read-write shared mapping: its memory freed (holes punched); 0 or a negative status. */
  public static native int shmDiscard0(long addr, long len);

  /** Closes a descriptor of shmCreateSealed0 that was not passed on. */
  public static native int shmCloseFd0(int fd);

  /** Bytes mapped by shmCreate0 and shmOpen0 and not unmapped yet, process-wide. */
  public static native long shmMappedBytes0();

  // fdmap (descriptors received from the DataNode): adopt and map throw, the system's reason in the message

  /** A read-only descriptor of the regular file at path, to pass to another process (not counted). */
  public static native int fdOpenRead0(String path) throws NativeException;

  /** Takes a received descriptor over (closed on failure); returns the regular file's size. */
  public static native long fdAdopt0(int fd) throws NativeException;

  public static native int fdClose0(int fd);

  /** Maps [offset, offset + len) of the file read-only; returns the address of offset. */
  public static native long fdMap0(int fd, long offset, long len) throws NativeException;

  public static native int fdUnmap0(long addr, long len);

  /** A read-write mapping of the first len bytes of a received sealed segment (unmapped by fdUnmap0). */
  public static native long fdMapShared0(int fd, long len) throws NativeException;

  /** madvise(MADV_RANDOM) on a mapping of fdMap0 (its addr and len); 0 or a negative status. */
  public static native int fdAdviseRandom0(long addr, long len);

  /** madvise(MADV_WILLNEED) on [addr, addr + len) of a mapping of fdMap0; 0 or a negative status. */
  public static native int fdAdviseWillNeed0(long addr, long len);

  /** Bytes mapped by fdMap0 and not unmapped yet, process-wide. */
  public static native long fdMappedBytes0();

  /** Bytes read into {@code [addr, addr + len)} from {@code offset}; fewer only where the file ends. */
  public static native long fdPread0(int fd, long addr, long len, long offset) throws NativeException;

  /**
   * pread into {@code [addr, addr + len)} from {@code offset} (with {@code nowait}: only what the page
   * cache holds), then the CRC32C chunks of what was read verified against {@code sums} (0: not
   * verified): the bytes read, or -2 - the offset of the first bad chunk.
   */
  public static native long fdPreadVerify0(int fd, long addr, long len, long offset, boolean nowait, int bpc,
      long sums, long sumsLen) throws NativeException;

  /** {@link #fdPreadVerify0} into {@code [off, off + len)} of an array, pinned for the call only. */
  public static native long fdPreadVerifyArray0(int fd, byte[] array, int off, int len, long offset,
      boolean nowait, int bpc, long sums, long sumsLen) throws NativeException;

  /** posix_fadvise(WILLNEED) of {@code [offset, offset + len)}; a status. */
  public static native int fdFadviseWillNeed0(int fd, long offset, long len);

  /** Descriptors adopted by fdAdopt0 and not closed yet, process-wide. */
  public static native long fdsHeld0();

  // uds (a domain socket client): connect throws, the system's reason in the message; the others
  // return a negative status

  /** A stream socket connected to path within timeoutMs; counted in udsSockets0 until udsClose0. */
  public static native int udsConnect0(String path, long timeoutMs) throws NativeException;

  /** A connected pair of sockets into out[0] and out[1], both counted; 0 or a negative status. */
  public static native int udsPair0(int[] out);

  /**
   * Sends all of {@code [off, off + len)} of buf within timeoutMs, the descriptors of fds (null:
   * none) with its first bytes; 0 or a negative status.
   */
  public static native int udsSend0(int fd, byte[] buf, int off, int len, int[] fds, long timeoutMs);

  /**
   * Receives 1 to len bytes into {@code [off, off + len)} of buf within timeoutMs, and up to
   * fds.length descriptors (fds null: none) stored at the start of fds, -1 after them: the bytes
   * received (0: end of stream) or a negative status (ERR_TRUNCATED: more descriptors than room,
   * all closed).
   */
  public static native int udsRecv0(int fd, byte[] buf, int off, int len, int[] fds, long timeoutMs);

  public static native int udsClose0(int fd);

  /** Sockets of udsConnect0 and udsPair0 not closed yet, process-wide. */
  public static native long udsSockets0();

  /** Closes a received descriptor that is not taken over; a status. */
  public static native int udsCloseReceived0(int fd);

  /**
   * A direct buffer over native memory [addr, addr + len), len at most
   * Integer.MAX_VALUE; it does not free the memory when collected.
   */
  public static native ByteBuffer directBuffer0(long addr, long len);
}
