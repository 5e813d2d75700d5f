package org.hdfsrdma.datanode.disk;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.hdfsrdma.nativelib.Jni;
import org.hdfsrdma.nativelib.NativeDisk;
import org.hdfsrdma.nativelib.NativeException;

/**
 * {@link DirectReads} into a circular read-ahead window the reader copies
 * out of: as long as the window has room, requests are kept in flight ahead
 * of the reader. When the reader has copied a request's bytes out, its part
 * of the window is read again further on, at once: the reads of what comes
 * next overlap the reader's work. For readers whose start is not aligned
 * (the packets of {@link DirectPacketReader} need an aligned start), and for
 * callers that want a channel.
 *
 * <p>To keep {@code depth} requests in flight while the reader holds the
 * request it copies from, the window needs {@code (depth + 1) x requestBytes};
 * in a smaller window the requests are made smaller (window / (depth + 1),
 * aligned), so the depth holds (the adaptive policy raises depth and size
 * together, beyond any window the size alone would fit). The bytes the
 * reader copies are below {@code pos}'s request, which no refill touches.
 * Closing also closes the wrapped channel and gives the window back.
 */
final class DirectReadChannel extends DirectReads implements ReadableByteChannel {
  private final ReadableByteChannel wrapped;
  private final Consumer<ByteBuffer> giveBack;
  private final ByteBuffer window;
  private final ByteBuffer view; // a duplicate of the window the copies go through
  private final long windowAddr;
  private final int windowBytes;
  private final long base;       // the aligned offset the window's byte 0 maps to (mod windowBytes)
  private long pos;              // guarded by this

  /**
   * @param file     the block file opened with {@link NativeDisk#DIRECT}
   * @param wrapped  the dataset's channel on the same file (closed with this one)
   * @param start    the block offset of the first byte to read
   * @param limit    the block offset after the last byte the reader will want (no read-ahead past it)
   * @param window   the read-ahead buffer, aligned; handed to {@code giveBack} at close
   */
  DirectReadChannel(NativeDisk.File file, ReadableByteChannel wrapped, long start, long limit, ByteBuffer window,
      Consumer<ByteBuffer> giveBack, Supplier<NativeDisk.Ring> ring, VolumeScheduler sched, Object streamKey)
      throws NativeException {
    super(file, start - start % file.directAlignment(), limit, ring, sched, streamKey);
    this.wrapped = wrapped;
    int w = window.capacity() - window.capacity() % align;
    this.windowAddr = Jni.bufferAddress0(window);
    if (w < align || windowAddr % align != 0) {
      throw new NativeException("read-ahead window of " + window.capacity() + " bytes not aligned to " + align,
          NativeException.ERR_INVALID);
    }
    this.windowBytes = w;
    this.giveBack = giveBack;
    this.window = window;
    this.view = window.duplicate();
    this.pos = start;
    this.base = issuedTo;
  }

  @Override
  public int read(ByteBuffer dst) throws IOException {
    synchronized (this) {
      if (isOpen() && failure == null && (pos >= limit || pos >= eofAt)) {
        return -1;
      }
      if (isOpen() && failure == null && !dst.hasRemaining()) {
        return 0;
      }
    }
    Req head = head();
    if (head == null) {
      return -1;
    }
    long at;
    synchronized (this) {
      at = pos;
      if (at >= Math.min(Math.min(limit, eofAt), head.offset + head.valid)) {
        return -1;
      }
    }
    long stop = Math.min(limit, head.offset + head.valid); // eofAt is at or past it
    int off = (int) (head.addrs[0] - windowAddr) + (int) (at - head.offset);
    int n = (int) Math.min(dst.remaining(), stop - at);
    view.limit(off + n).position(off);
    dst.put(view); // below pos's request: no refill reads into it
    boolean freed;
    synchronized (this) {
      pos = at + n;
      freed = pos >= head.offset + head.length;
    }
    if (freed) {
      consumed(head); // its part of the window is free: read further on into it
    }
    return n;
  }

  @Override
  Req place(int depth, int requestBytes) {
    // depth requests ahead plus the one being copied out must fit the window: where the
    // policy's size would not let them, the requests get smaller, not fewer
    int size = (int) Math.min(requestBytes, windowBytes / (depth + 1L));
    int chunk = Math.max(align, size - size % align);
    long consumed = pos - pos % align; // the window below this is free again
    int at = (int) Math.floorMod(issuedTo - base, (long) windowBytes);
    long len = Math.min(Math.min(chunk, windowBytes - at), end - issuedTo);
    if (issuedTo + len > consumed + windowBytes) {
      return null; // the window is full: the reader has not copied out what is there yet
    }
    return new Req(issuedTo, new long[] {windowAddr + at}, new int[] {(int) len});
  }

  @Override
  void closed() throws IOException {
    try {
      giveBack.accept(window);
    } finally {
      wrapped.close();
    }
  }
}
