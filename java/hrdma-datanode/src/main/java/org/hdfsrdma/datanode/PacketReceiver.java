package org.hdfsrdma.datanode;

import java.io.IOException;
import java.net.ProtocolException;
import java.nio.ByteBuffer;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PacketHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.datanode.compat.FaultHooks;
import org.hdfsrdma.datanode.compat.RbwReplica;
import org.hdfsrdma.datanode.disk.DiskIo;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.ChunkSums;
import org.hdfsrdma.protocol.Message;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A write's packets into its replica (stock: BlockReceiver#receivePacket): checks each
 * packet's place and size, verifies its chunk checksums where asked (the failure reads as
 * Hadoop's; as stock's shouldVerifyChecksum, only the last DataNode of a client's pipeline
 * verifies, see {@link BlockWriteTask}),
 * writes data and checksums through the volume's disk scheduler, fsyncs where the client
 * asked (syncBlock: hsync, and a SYNC_BLOCK file's last packet) and closes the streams after
 * the last packet; then hands its result to the {@link AckResponder}. Finalizing is the
 * responder's, after the downstream ack.
 *
 * <p>Not thread-safe: one write executor thread at a time (the task serializes its runs).
 * Reads the packet from the message's buffer, which the caller releases after.
 */
final class PacketReceiver {
  private static final Logger LOG = LoggerFactory.getLogger(PacketReceiver.class);

  private final ExtendedBlock block;
  private final RbwReplica replica;
  private final DiskIo.WriteStream disk;
  private final DataChecksum checksum;
  private final int bytesPerChecksum;
  private final int checksumSize;
  private final boolean syncOnClose;
  private final int maxPacketBytes;
  private final AckResponder responder;
  private final String from;
  private final boolean verify;

  private long expectedSeqno = -1; // -1: taken from the first packet (a recovered pipeline resends old seqnos)
  private long expectedOffset;
  private byte[] sumBuf = new byte[0];
  private boolean stopped;  // a packet failed: no more local processing

  PacketReceiver(ExtendedBlock block, RbwReplica replica, DiskIo.WriteStream disk, DataChecksum checksum,
      long startOffset, boolean syncOnClose, int maxPacketBytes, AckResponder responder, String from,
      boolean verify) {
    this.block = block;
    this.replica = replica;
    this.disk = disk;
    this.checksum = checksum;
    this.bytesPerChecksum = checksum.getBytesPerChecksum();
    this.checksumSize = checksum.getChecksumSize();
    this.expectedOffset = startOffset;
    this.syncOnClose = syncOnClose;
    this.maxPacketBytes = maxPacketBytes;
    this.responder = responder;
    this.from = from;
    this.verify = verify;
  }

  boolean stopped() {
    return stopped;
  }

  /** Verifies and writes one packet, then gives its result to the responder. */
  void receive(Message m) {
    if (stopped) {
      return;
    }
    PacketHeaderProto h;
    try {
      h = m.packetHeader();
    } catch (ProtocolException e) {
      throw new AssertionError(e); // the dispatcher checked the kind
    }
    long seqno = h.getSeqno();
    if (BlockOps.isHeartbeat(h)) {
      heartbeat(h, m.payload());
      return;
    }
    Status local = Status.SUCCESS;
    long end = h.getOffsetInBlock() + h.getDataLen();
    boolean last = h.getLastPacketInBlock();
    try {
      int dataLen = h.getDataLen();
      if (dataLen < 0 || dataLen > maxPacketBytes) {
        throw new ProtocolException("packet seqno " + seqno + " with " + dataLen + " data bytes; at most "
            + maxPacketBytes + " (" + DataNodeLimits.MAX_PACKET_BYTES_KEY + ")");
      }
      int sumLen = (int) (((long) dataLen + bytesPerChecksum - 1) / bytesPerChecksum) * checksumSize;
      ByteBuffer payload = m.payload();
      // a packet may start before the end of the data on disk, always at a chunk boundary: after
      // an hflush/hsync that ended mid-chunk the client sends that chunk again; after a pipeline
      // recovery it sends again what it had not seen acknowledged (as stock, what is on disk stays)
      if (expectedSeqno < 0) {
        expectedSeqno = seqno;
      }
      long overlap = expectedOffset - h.getOffsetInBlock();
      if (seqno != expectedSeqno || overlap < 0 || (overlap > 0 && h.getOffsetInBlock() % bytesPerChecksum != 0)
          || payload.remaining() != sumLen + dataLen) {
        throw new ProtocolException("packet seqno " + seqno + " at " + h.getOffsetInBlock() + " with "
            + dataLen + " data bytes and a " + payload.remaining() + "-byte payload; expected seqno "
            + expectedSeqno + " at " + expectedOffset + " with " + (sumLen + dataLen) + " bytes");
      }
      expectedSeqno++;
      expectedOffset = Math.max(expectedOffset, end);
      if (dataLen > overlap) {
        ByteBuffer sums = payload.slice(payload.position(), sumLen);
        ByteBuffer data = payload.slice(payload.position() + sumLen, dataLen);
        if (verify) {
          ChunkSums.verify(checksum, data, sums, block.toString(), h.getOffsetInBlock());
        }
        if (sumBuf.length < sumLen) {
          sumBuf = new byte[sumLen];
        }
        sums.get(sumBuf, 0, sumLen);
        byte[] lastSum = new byte[checksumSize];
        System.arraycopy(sumBuf, sumLen - checksumSize, lastSum, 0, checksumSize);
        int skip = (int) overlap;
        int skipSums = skip / bytesPerChecksum * checksumSize;
        // the data goes to the file straight from the buffer it arrived in (the message is
        // released only after this returns: disk.write waits for the volume's worker)
        ByteBuffer fresh = data.position(skip);
        FaultHooks.delayWriteToDisk(); // stock's hook before the data is written
        disk.write(h.getOffsetInBlock() + skip, dataLen - skip, () -> { // hrdma disk: on the volume's scheduler
          if (skip % bytesPerChecksum != 0) {
            replica.rewindLastChecksum(checksumSize); // that chunk's checksum is rewritten whole
          }
          replica.writePacket(fresh, sumBuf, skipSums, sumLen - skipSums, end, lastSum);
          return null;
        });
      }
      if (h.getSyncBlock() && !last) {
        disk.write(end, 0, () -> { // hsync: on disk before the ack
          replica.sync();
          return null;
        });
      }
      if (last) {
        // stock: a SYNC_BLOCK file's client flags the last packet syncBlock, and the block is
        // fsynced as it is closed, as with dfs.datanode.synconclose
        boolean sync = syncOnClose || h.getSyncBlock();
        disk.write(end, 0, () -> { // hrdma disk: then trim the preallocated tail, count extents
          replica.closeStreams(sync);
          disk.finish();
          return null;
        });
      }
    } catch (ChecksumException e) {
      LOG.warn("hrdma datanode: checksum error in {} from {} (seqno {}): {}", block, from, seqno, e.getMessage());
      local = Status.ERROR_CHECKSUM;
    } catch (IOException | RuntimeException e) {
      LOG.warn("hrdma datanode: writing {} (seqno {}) failed: {}", block, seqno, e.toString());
      local = Status.ERROR;
    }
    if (local != Status.SUCCESS) {
      stopped = true;
    }
    responder.processed(seqno, end, local, last);
  }

  /**
   * A heartbeat (stock: a packet of seqno -1 without data): acked in its turn, nothing written,
   * the replica untouched, the expected seqno and offset unchanged. One with data or marked last
   * is a protocol error, as any malformed packet (an ERROR ack; the write stops).
   */
  private void heartbeat(PacketHeaderProto h, ByteBuffer payload) {
    Status local = Status.SUCCESS;
    if (h.getDataLen() != 0 || h.getLastPacketInBlock() || payload.hasRemaining()) {
      LOG.warn("hrdma datanode: writing {}: a heartbeat (seqno {}) with {} data bytes, a {}-byte payload{}; failing"
          + " the write", block, h.getSeqno(), h.getDataLen(), payload.remaining(),
          h.getLastPacketInBlock() ? ", marked last" : "");
      local = Status.ERROR;
      stopped = true;
    }
    responder.processedHeartbeat(local);
  }
}
