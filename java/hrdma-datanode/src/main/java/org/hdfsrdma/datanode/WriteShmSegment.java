package org.hdfsrdma.datanode;

import java.net.ProtocolException;
import java.nio.ByteBuffer;
import org.hdfsrdma.nativelib.NativeShm;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.transport.BufferAllocator;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;

/**
 * The receiving DataNode's side of one connection's write segment (same-host writes by
 * reference): a sealed anonymous segment ({@link NativeShm#createSealed}) whose descriptor the
 * sender fetches once over the domain socket with the grant id, cut into {@code slotBytes}
 * slots. A WRITE_REF names a message at a slot's start; {@link #copyOut} checks the reference
 * and copies the message into a buffer of the DataNode's own before anything reads it: the
 * sender can write the slot at any time, so what is verified, written and forwarded is only
 * ever the copy. Thread-safe; the memory is unmapped by {@link #close}, never under a copy.
 */
final class WriteShmSegment {
  private final NativeShm.Segment mem;
  private final int slotBytes;
  private final long slots;
  private final String client;
  private final Runnable unmapped;
  private boolean fetched; // guarded by this: the descriptor went to the sender
  private boolean closed;  // guarded by this

  WriteShmSegment(NativeShm.Segment mem, int slotBytes, String client, Runnable unmapped) {
    this.mem = mem;
    this.slotBytes = slotBytes;
    this.slots = mem.bytes() / slotBytes;
    this.client = client;
    this.unmapped = unmapped;
  }

  long bytes() {
    return mem.bytes();
  }

  int slotBytes() {
    return slotBytes;
  }

  String client() {
    return client;
  }

  /** The descriptor for the sender, once; -1 when closed or fetched already. The caller closes it after passing it. */
  synchronized int takeDescriptor() {
    if (closed || fetched) {
      return -1;
    }
    int fd = mem.takeDescriptor();
    fetched = fd >= 0;
    return fd;
  }

  synchronized boolean fetched() {
    return fetched;
  }

  /** The map timeout: closes the segment if its descriptor was not fetched; true if so. */
  boolean closeUnlessFetched() {
    synchronized (this) {
      if (fetched || closed) {
        return false;
      }
    }
    close();
    return true;
  }

  /**
   * Checks WRITE_REF {@code r} and copies the message it names into a buffer from
   * {@code alloc} (its placement hint, when in range, page-aligned as the transport would
   * place it). The copy's position is where the message starts.
   *
   * @throws ProtocolException a reference outside the segment, not at a slot's start, longer than a
   *     slot or shorter than a message, or on a segment not fetched or closed
   * @throws TransportException no buffer for the copy
   */
  RegisteredBuffer copyOut(HrdmaProtos.ShmRef r, BufferAllocator alloc) throws ProtocolException,
      TransportException {
    long offset = r.getOffset();
    long length = Integer.toUnsignedLong(r.getLength());
    if (offset < 0 || offset % slotBytes != 0 || offset / slotBytes >= slots || length < MessageCodec.FIXED_BYTES
        || length > slotBytes) {
      throw new ProtocolException("WRITE_REF of " + length + " bytes at offset " + offset
          + ": not a message at the start of one of the " + slots + " slots of " + slotBytes + " bytes");
    }
    int len = (int) length;
    long place = Integer.toUnsignedLong(r.getPlace()) - 1; // -1: none
    int pad = 0;
    RegisteredBuffer copy = alloc.allocate(len + (place >= 0 && place < len ? RegisteredBuffer.PLACE_PAGE : 0));
    if (place >= 0 && place < len) {
      pad = (int) (-(copy.address() + place) & (RegisteredBuffer.PLACE_PAGE - 1));
    }
    ByteBuffer dst = copy.nio();
    dst.clear().position(pad);
    synchronized (this) {
      if (closed || !fetched) {
        copy.release();
        throw new ProtocolException("WRITE_REF on a connection whose write segment is " + (closed ? "closed"
            : "not handed over yet"));
      }
      dst.put(mem.buffer().slice((int) offset, len)); // the one copy: the slot is the sender's to rewrite
    }
    dst.flip().position(pad);
    return copy;
  }

  /** Frees the segment (the connection closed, or the map timeout). Idempotent. */
  void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      try {
        // the sender may keep the descriptor or its mapping past the connection: it keeps none of our memory
        mem.discard();
      } catch (org.hdfsrdma.nativelib.NativeException | RuntimeException e) {
        org.slf4j.LoggerFactory.getLogger(WriteShmSegment.class).warn(
            "hrdma datanode: cannot free the memory of the write segment of {}: {}", client, e.toString());
      }
      mem.close(); // under the lock: never under a copy; closes the descriptor if never fetched
    }
    unmapped.run();
  }

  synchronized boolean isClosed() {
    return closed;
  }
}
