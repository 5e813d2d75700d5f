package org.hdfsrdma.datanode;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import org.hdfsrdma.nativelib.NativeShm;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.SlottedSegment;
import org.hdfsrdma.transport.BufferAllocator;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One connection's shared-memory segment: the read packets of a client on
 * this host go by reference. The segment is a file in shared memory that the
 * DataNode maps read-write and the client read-only; it is cut into slots of
 * {@code slotBytes}, each holding one DATA_PACKET message. A read's packets
 * are allocated in free slots ({@link #allocate}: the O_DIRECT reads land
 * there), and {@link #send} tells the client where the message is (DATA_REF)
 * instead of sending it; the slot stays the client's until its SHM_RELEASE
 * ({@link #released}), and the send's future completes then, so a read's
 * packets in flight are bounded as on the transport, by what the client has
 * not given back. When no slot is free, or before the client has mapped the
 * segment, packets come from the transport's allocator and go by value: the
 * segment never blocks a read.
 *
 * <p>Closing (the connection ended) fails the references the client still
 * held and has the file removed off the calling thread (a connection closes on
 * its transport's I/O thread, and the directory may be on a disk); the memory
 * is unmapped once every slot is back (packets read ahead are given back by
 * their reads), never under a packet being written or read. Thread-safe.
 */
final class ShmSegment extends SlottedSegment {
  private static final Logger LOG = LoggerFactory.getLogger(ShmSegment.class);

  private final NativeShm.Segment mem;
  private final BufferAllocator fallback;
  private final HashMap<Long, Ref> refs = new HashMap<>();    // guarded by this: offset -> held by the client
  private boolean mapped;    // guarded by this: the client mapped it; packets go by reference
  /** nanoTime of the last release, or of the first reference sent while the client held none; guarded by this. */
  private long refsProgressNanos;
  private volatile boolean fileRemoved; // removeFile() did: closing touches no directory
  private final AtomicLong byReference;
  /** Where the file is removed when the segment closes before it was: never an I/O thread. */
  private final Executor files;

  private record Ref(Slot slot, CompletableFuture<Void> done) {}

  /**
   * @param mem the mapped segment (the segment unmaps it)
   * @param fallback where packets come from when no slot is free
   * @param byReference counts the packets sent by reference
   * @param unmapped run once, after the segment's memory is unmapped
   * @param files where the file is removed if the segment closes before {@link #removeFile}
   *     (off any transport's I/O thread: the directory may be on a disk)
   */
  ShmSegment(NativeShm.Segment mem, BufferAllocator fallback, int slotBytes, AtomicLong byReference,
      Runnable unmapped, Executor files) {
    super(mem.buffer(), mem.address(), mem.bytes(), checkedSlotBytes(mem.bytes(), slotBytes), mem::close, unmapped);
    this.mem = mem;
    this.fallback = fallback;
    this.byReference = byReference;
    this.files = files;
  }

  private static int checkedSlotBytes(long bytes, int slotBytes) {
    if (slotBytes < 1 || bytes / slotBytes < 1) {
      throw new IllegalArgumentException("segment of " + bytes + " bytes with slots of " + slotBytes);
    }
    return slotBytes;
  }

  Path path() {
    return mem.path();
  }

  long bytes() {
    return mem.bytes();
  }

  /**
   * The client has mapped the segment (SHM_MAPPED): packets allocated from now on go by
   * reference. Called on the connection's I/O thread as the message arrives, so that every
   * request the client sends after SHM_MAPPED (its first read follows at once) finds the
   * segment mapped; false when the segment has closed meanwhile.
   */
  synchronized boolean clientMapped() {
    if (isClosed()) {
      return false;
    }
    mapped = true;
    return true;
  }

  /**
   * Removes the segment's file once the client has mapped it (nobody else needs it then). Off
   * the I/O thread: the directory ({@value ReadSettings#SHM_DIR_KEY}) may be on a disk.
   */
  void removeFile() throws IOException {
    Files.deleteIfExists(mem.path());
    fileRemoved = true;
  }

  private void removeFileQuietly() {
    try {
      removeFile();
    } catch (IOException e) {
      LOG.warn("hrdma datanode: cannot remove shared-memory segment {}: {}", mem.path(), e.toString());
    }
  }

  /** Closes the segment if the client has not mapped it (the map timeout); true if it did. */
  boolean closeUnlessMapped() {
    synchronized (this) {
      if (mapped || isClosed()) {
        return false;
      }
    }
    close();
    return true;
  }

  synchronized boolean isMapped() {
    return mapped;
  }

  @Override
  public RegisteredBuffer allocate(int size) throws TransportException {
    RegisteredBuffer s = takeSlot(size);
    return s != null ? s : fallback.allocate(size);
  }

  @Override
  protected boolean usable() {
    return mapped; // packets go by value until the client has mapped the segment
  }

  @Override
  public long footprint(int size) {
    return size <= slotBytes ? slotBytes : fallback.footprint(size);
  }

  @Override
  public long bytesRegistered() {
    return fallback.bytesRegistered();
  }

  @Override
  public long buffersOutstanding() {
    return fallback.buffersOutstanding();
  }

  /**
   * Sends the message {@code p} (position to limit) of request {@code id}: by reference
   * when it lies in a segment, else over the endpoint. Takes over the reference to
   * {@code p}. The future completes when the client has the message and, for a reference,
   * has given its slot back.
   */
  static CompletableFuture<Void> send(Endpoint ep, long id, RegisteredBuffer p) {
    return p instanceof Slot s && s.owner() instanceof ShmSegment seg ? seg.sendRef(ep, id, s) : ep.send(p);
  }

  private CompletableFuture<Void> sendRef(Endpoint ep, long id, Slot s) {
    long offset = s.offset() + s.nio().position();
    HrdmaProtos.ShmRef ref = HrdmaProtos.ShmRef.newBuilder().setOffset(offset).setLength(s.readableBytes())
        .build();
    Ref r = new Ref(s, new CompletableFuture<>());
    synchronized (this) {
      if (isClosed()) {
        s.release();
        return CompletableFuture.failedFuture(new TransportException("connection to " + ep.remoteAddress()
            + " closed"));
      }
      if (refs.isEmpty()) {
        refsProgressNanos = System.nanoTime();
      }
      refs.put(offset, r);
    }
    byReference.incrementAndGet();
    try {
      ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.DATA_REF, id, ref))
          .whenComplete((v, t) -> {
            if (t != null) {
              broken(ep, t);
            }
          });
    } catch (TransportException | RuntimeException e) {
      broken(ep, e);
    }
    return r.done();
  }

  /**
   * A DATA_REF could not be sent: the client may have it or not, and may be reading a slot of
   * it, so no slot may be written again. The segment closes (what the client held fails, no slot
   * is handed out again) and so does the connection (its reads end with it, the client's too).
   */
  private void broken(Endpoint ep, Throwable why) {
    LOG.warn("hrdma datanode: cannot send a packet reference to {}, closing the connection: {}",
        ep.remoteAddress(), why.toString());
    close();
    ep.close();
  }

  /**
   * For how long, at {@code now}, the client has held packets sent by reference and given none
   * back: 0 while it holds none. Such a send completes only at its release, so a same-host
   * client that takes its DATA_REFs (their credits come back) and never releases a slot stalls
   * its reads as one that takes nothing ({@link Endpoint#sendStallNanos}).
   */
  synchronized long stallNanos(long now) {
    return refs.isEmpty() ? 0 : Math.max(0, now - refsProgressNanos);
  }

  /**
   * The client's SHM_RELEASE of the packet at {@code offset}.
   *
   * @return false when the client holds no packet there (a bad or repeated release)
   */
  boolean released(long offset) {
    Ref r;
    synchronized (this) {
      r = refs.remove(offset);
      if (r != null) {
        refsProgressNanos = System.nanoTime();
      }
    }
    if (r == null) {
      return false;
    }
    r.slot().release();
    r.done().complete(null);
    return true;
  }

  /**
   * The connection ended (or the segment cannot be used): fails what the client held, hands out
   * no slot again, removes the file, unmaps when all slots are back. Idempotent.
   */
  void close() {
    List<Ref> outstanding;
    synchronized (this) {
      if (!markClosed()) {
        return;
      }
      outstanding = new ArrayList<>(refs.values());
      refs.clear();
    }
    // a connection's close runs on its I/O thread, and hrdma.datanode.read.shm.dir may be on a
    // disk: no unlink here. Once removeFile has run there is nothing to remove; else (never mapped,
    // or closed between the client's SHM_MAPPED and the read executor's removeFile) it goes on
    // the files executor
    if (!fileRemoved) {
      try {
        files.execute(this::removeFileQuietly);
      } catch (RejectedExecutionException e) {
        LOG.warn("hrdma datanode: cannot remove shared-memory segment {} (stopping): {}", mem.path(),
            e.toString());
      }
    }
    TransportException closedWhy = new TransportException("the connection closed");
    for (Ref r : outstanding) {
      r.slot().release();
      r.done().completeExceptionally(closedWhy);
    }
    unmapIfIdle();
  }
}
