package org.hdfsrdma.bench.fs;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.stream.Stream;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.datanode.compat.DataNodeAccess.Volume;
import org.hdfsrdma.datanode.disk.DirectPacketReader;
import org.hdfsrdma.datanode.disk.DiskIo;
import org.hdfsrdma.transport.BufferAllocator;
import org.hdfsrdma.transport.RegisteredBuffer;

/**
 * {@code hrdma bench disk}'s disk stage: the DataNode's I/O of a client read
 * alone. The plugin's own {@link DiskIo} (the volume's scheduler and policy,
 * on ssd volumes O_DIRECT through io_uring straight into the packets) reads
 * block files as it does for a READ_REQUEST: per packet, the checksums from
 * the .meta file and the data from the block file, in a buffer of the
 * transport's registered allocator; then the packet is handed to a sink (the
 * bench discards it) instead of being sent.
 */
final class DiskStage {
  private DiskStage() {}

  /** Where a packet goes instead of the transport: checksums then data, position to limit. */
  interface Sink {
    void accept(ByteBuffer packet) throws IOException;
  }

  /**
   * Reads the block files, whole, one after the other, again from the first
   * until {@code minNanos} have passed (at least once); MB/s (10^6) of block data.
   */
  static double run(DiskIo io, Volume v, List<Path> blocks, BufferAllocator alloc, int packetBytes, long minNanos,
      Sink sink) throws IOException {
    long bytes = 0;
    long t0 = System.nanoTime();
    do {
      for (Path b : blocks) {
        bytes += readBlock(io, v, b, alloc, packetBytes, sink);
      }
    } while (System.nanoTime() - t0 < minNanos);
    return bytes / 1e6 / ((System.nanoTime() - t0) / 1e9);
  }

  /** The .meta file beside a block file ({@code blk_<id>_<genstamp>.meta}). */
  static Path metaFile(Path block) throws IOException {
    String prefix = block.getFileName() + "_";
    try (Stream<Path> s = Files.list(block.getParent())) {
      return s.filter(p -> p.getFileName().toString().startsWith(prefix) && p.getFileName().toString()
          .endsWith(".meta")).findFirst().orElseThrow(() -> new IOException("no .meta file for " + block));
    }
  }

  /** One block file, whole, as a client's read of it is served; the data bytes read. */
  static long readBlock(DiskIo io, Volume v, Path block, BufferAllocator alloc, int packetBytes, Sink sink)
      throws IOException {
    long length = Files.size(block);
    try (FileChannel metaCh = FileChannel.open(metaFile(block), StandardOpenOption.READ)) {
      // the .meta header as BlockReadTask reads it: u16 version, u8 type, u32 bytesPerChecksum
      DataInputStream header = new DataInputStream(Channels.newInputStream(metaCh));
      header.readShort();
      int type = header.readByte() & 0xff;
      int bpc = header.readInt();
      int sumSize = DataChecksum.newDataChecksum(DataChecksum.Type.valueOf(type), bpc).getChecksumSize();
      int whole = Math.max(bpc, packetBytes - packetBytes % bpc);
      int dataPerPacket = org.hdfsrdma.protocol.MessageCodec.packetDataBytes(alloc, whole, bpc, sumSize, 1);
      DiskIo.ReadStream rs = io.openRead(v, block);
      try (rs) {
        // as BlockReadTask: O_DIRECT into the packets where it can, else through the read-ahead channel;
        // packets of whole chunks that fit the pool's buffer for that much data
        DirectPacketReader<StagePacket> packets = rs.packets(0, length,
            align -> org.hdfsrdma.protocol.MessageCodec.packetDataBytes(alloc, whole, bpc, sumSize, align),
            (offset, len, align) -> StagePacket.allocate(alloc, (len + bpc - 1) / bpc * sumSize, len, align));
        if (packets != null) {
          try (packets) {
            long next = 0;
            while (next < length) {
              StagePacket sp = packets.take(next);
              try {
                ByteBuffer b = sp.buffer.nio();
                b.clear().position(sp.start);
                readFully(metaCh, b, sp.sumLen, block);
                b.limit(sp.start + sp.sumLen + sp.dataLen).position(sp.start);
                sink.accept(b);
              } finally {
                sp.buffer.release();
              }
              next += sp.dataLen;
            }
            return next;
          }
        }
        try (ReadableByteChannel blockCh = rs.direct(FileChannel.open(block, StandardOpenOption.READ), 0, length)) {
          long next = 0;
          while (next < length) {
            int dataLen = (int) Math.min(dataPerPacket, length - next);
            int sumLen = (dataLen + bpc - 1) / bpc * sumSize;
            RegisteredBuffer p = alloc.allocate(sumLen + dataLen);
            try {
              ByteBuffer b = p.nio();
              b.clear();
              rs.read(next, dataLen, () -> {
                readFully(metaCh, b, sumLen, block);
                readFully(blockCh, b, dataLen, block);
                return null;
              });
              b.flip();
              sink.accept(b);
            } finally {
              p.release();
            }
            next += dataLen;
          }
          return next;
        }
      }
    }
  }

  /** A packet's checksums then data, the data at an aligned address (as BlockReadTask lays a DATA_PACKET out). */
  private record StagePacket(RegisteredBuffer buffer, int start, int sumLen, int dataLen)
      implements DirectPacketReader.Packet {
    static StagePacket allocate(BufferAllocator alloc, int sumLen, int dataLen, int align) throws IOException {
      int readLen = dataLen + (align - dataLen % align) % align;
      RegisteredBuffer b = alloc.allocate(sumLen + readLen + align);
      int start = (int) Math.floorMod(-(b.address() + sumLen), (long) align);
      return new StagePacket(b, start, sumLen, dataLen);
    }

    @Override
    public long dataAddress() {
      return buffer.address() + start + sumLen;
    }

    @Override
    public void discard() {
      buffer.release();
    }
  }

  private static void readFully(ReadableByteChannel ch, ByteBuffer b, int n, Path what) throws IOException {
    int limit = b.limit();
    b.limit(b.position() + n);
    try {
      while (b.hasRemaining()) {
        if (ch.read(b) < 0) {
          throw new EOFException(what + " ended " + b.remaining() + " bytes early");
        }
      }
    } finally {
      b.limit(limit);
    }
  }
}
