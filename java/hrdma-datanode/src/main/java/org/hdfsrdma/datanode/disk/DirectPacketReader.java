package org.hdfsrdma.datanode.disk;

import java.io.EOFException;
import java.io.IOException;
import java.util.function.Supplier;
import org.hdfsrdma.nativelib.NativeDisk;
import org.hdfsrdma.nativelib.NativeException;

/**
 * {@link DirectReads} straight into the packets that go to the transport:
 * the block range is cut into packets of {@code packetBytes} (the last one
 * shorter), each packet's memory is made by the caller's {@link Factory}
 * (registered memory, laid out so the data starts at an aligned address),
 * and O_DIRECT reads the data into it in place; no copy between the disk
 * and the wire. A request of the policy's size covers whole packets (one
 * segment each, at most {@link #MAX_SEGMENTS}); the packets held ahead of
 * the reader (being read, or read and not taken yet) are bounded by the
 * read-ahead window's bytes, and never fewer than one request's.
 *
 * <p>{@link #take} hands the packets over in block order, each once its
 * request has completed; from then on the packet is the caller's. Packets
 * not taken are discarded at close, once no read lands in them any more.
 *
 * @param <T> the caller's packet
 */
public final class DirectPacketReader<T extends DirectPacketReader.Packet> extends DirectReads {
  /** A packet's memory. */
  public interface Packet {
    /** Where the packet's data goes: aligned, with room for the data length rounded up to the alignment. */
    long dataAddress();

    /** Gives the memory back; the packet was not taken (or the reader gives up on it). */
    void discard();
  }

  /** Makes packets; an IOException (no memory now) fails the read only when no packet is held ahead. */
  @FunctionalInterface
  public interface Factory<T extends Packet> {
    /**
     * The packet of the block's bytes [offset, offset + length): {@link Packet#dataAddress()}
     * a multiple of {@code align}, with room for {@code length} rounded up to {@code align}.
     * May be called on an I/O worker; must not wait.
     */
    T allocate(long offset, int length, int align) throws IOException;
  }

  private static final class PacketReq<T> extends Req {
    final T[] packets;
    int taken; // the reader's

    PacketReq(long offset, long[] addrs, int[] lens, T[] packets) {
      super(offset, addrs, lens);
      this.packets = packets;
    }
  }

  private final Factory<T> factory;
  private final int packetBytes;
  private final int windowPackets;
  private int held; // guarded by this: packets in pending not taken yet

  /**
   * @param start       the block offset of the first packet, a multiple of the file's alignment
   * @param limit       the block offset after the last packet's data
   * @param packetBytes data bytes per packet, a multiple of the file's alignment
   * @param windowBytes packets held ahead of the reader, in bytes
   */
  DirectPacketReader(NativeDisk.File file, long start, long limit, int packetBytes, int windowBytes,
      Factory<T> factory, Supplier<NativeDisk.Ring> ring, VolumeScheduler sched, Object streamKey)
      throws NativeException {
    super(file, start, limit, ring, sched, streamKey);
    if (packetBytes < align || packetBytes % align != 0) {
      throw new NativeException("packets of " + packetBytes + " bytes are not whole " + align + "-byte blocks",
          NativeException.ERR_INVALID);
    }
    this.factory = factory;
    this.packetBytes = packetBytes;
    this.windowPackets = Math.max(1, windowBytes / packetBytes);
  }

  /** Data bytes per packet (the last one of the range may be shorter). */
  public int packetBytes() {
    return packetBytes;
  }

  /**
   * The next packet in block order, its data in place; {@code offset} is where the caller
   * expects it to start.
   *
   * @throws EOFException the block file ended before this packet's data
   */
  public T take(long offset) throws IOException {
    @SuppressWarnings("unchecked")
    PacketReq<T> head = (PacketReq<T>) head();
    if (head == null) {
      throw new EOFException("no packet at offset " + offset + " of " + file + ": reading ends at " + limit);
    }
    int i = head.taken;
    long at = head.offset + (long) i * packetBytes; // only the range's last packet is shorter
    if (at != offset) {
      throw new IllegalStateException("packet at " + at + " taken for offset " + offset);
    }
    long want = Math.min(at + head.lens[i], limit) - head.offset;
    if (head.valid < want) {
      throw new EOFException(file + " ended at " + (head.offset + head.valid) + ", before the packet at " + at
          + " (to " + (head.offset + want) + ")");
    }
    T p = head.packets[i];
    boolean last;
    synchronized (this) {
      head.packets[i] = null;
      head.taken = i + 1;
      held--;
      last = head.taken == head.packets.length;
    }
    if (last) {
      consumed(head);
    }
    return p;
  }

  @Override
  Req place(int depth, int requestBytes) throws IOException {
    int n = (int) Math.max(1, Math.min(MAX_SEGMENTS, requestBytes / (long) packetBytes));
    n = (int) Math.max(1, Math.min(n, windowPackets / (depth + 1L)));
    if (held > 0 && held + n > windowPackets) {
      return null; // the reader has not taken what is there yet
    }
    long[] addrs = new long[n];
    int[] lens = new int[n];
    @SuppressWarnings("unchecked")
    T[] packets = (T[]) new Packet[n];
    long at = issuedTo;
    int k = 0;
    try {
      for (; k < n && at < limit; k++) {
        int dataLen = (int) Math.min(packetBytes, limit - at);
        packets[k] = factory.allocate(at, dataLen, align);
        addrs[k] = packets[k].dataAddress();
        lens[k] = dataLen + (align - dataLen % align) % align;
        if (addrs[k] % align != 0) {
          throw new IllegalStateException("packet data at " + Long.toHexString(addrs[k]) + " is not aligned to "
              + align);
        }
        at += dataLen;
      }
    } catch (IOException | RuntimeException e) {
      for (int j = 0; j <= k && j < n; j++) {
        if (packets[j] != null) {
          packets[j].discard();
        }
      }
      if (held > 0 && e instanceof IOException) {
        return null; // out of memory for packets: again once the reader has taken (and sent) some
      }
      throw e;
    }
    if (k < n) {
      addrs = java.util.Arrays.copyOf(addrs, k);
      lens = java.util.Arrays.copyOf(lens, k);
      packets = java.util.Arrays.copyOf(packets, k);
    }
    held += k;
    return new PacketReq<>(issuedTo, addrs, lens, packets);
  }

  @Override
  void discard(Req r) {
    @SuppressWarnings("unchecked")
    PacketReq<T> pr = (PacketReq<T>) r;
    RuntimeException failed = null;
    synchronized (this) {
      for (int i = 0; i < pr.packets.length; i++) {
        T p = pr.packets[i];
        if (p != null) {
          pr.packets[i] = null;
          held--;
          try {
            p.discard();
          } catch (RuntimeException e) {
            failed = e; // the others still go back
          }
        }
      }
    }
    if (failed != null) {
      throw failed;
    }
  }
}
