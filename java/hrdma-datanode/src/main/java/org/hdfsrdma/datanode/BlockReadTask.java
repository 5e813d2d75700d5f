package org.hdfsrdma.datanode;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.ProtocolException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpReadBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PacketHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier.AccessMode;
import org.apache.hadoop.io.IOUtils;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.datanode.compat.DataNodeAccess;
import org.hdfsrdma.datanode.compat.FaultHooks;
import org.hdfsrdma.datanode.disk.DirectPacketReader;
import org.hdfsrdma.datanode.disk.DiskIo;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.transport.BufferAllocator;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves one READ_REQUEST: checks the block token and the range, opens the
 * replica's block and .meta files, answers READ_RESPONSE, then streams
 * DATA_PACKETs (checksums from the .meta file as they are on disk, then the
 * data; the last one flagged {@code lastPacketInBlock}). A request with
 * {@code sendChecksums} false (a client that verifies none) is answered, as
 * stock's BlockSender answers it, with checksum type NULL and packets of data only.
 *
 * <p>Threading: all disk work runs on the plugin's read executor, never on
 * the transport's I/O thread. At most one {@link #run} executes at a time
 * ({@code scheduled}). Flow control: at most {@code packetsInFlight} packets
 * whose send futures have not completed; when the window is full the task
 * leaves the executor thread, and the completion of a send (on the I/O
 * thread) schedules it again. The transport's credits hold those sends back
 * while the client keeps its packets, so a slow client pins a bounded number
 * of packets and no thread. For a client on this host the packets are made in
 * the connection's shared-memory segment and sent by reference
 * ({@link ShmSegment}); such a send completes when the client gives the
 * packet's slot back.
 *
 * <p>Ahead of its turn ({@link #prepare}) the task checks the request, opens
 * the files and starts its O_DIRECT reads, but sends nothing, not even a
 * refusal: its READ_RESPONSE (or error) goes when it {@link #start}s, after
 * the last packet of the read before it on the connection. Once all of its
 * own disk reads are issued it tells the connection ({@code ahead}), so the
 * next request's reads follow its own on the device without a gap.
 *
 * <p>The task owns the request message's buffer until it completes.
 */
final class BlockReadTask implements ReadQueue.Read {
  private static final Logger LOG = LoggerFactory.getLogger(BlockReadTask.class);
  /** BlockMetadataHeader: u16 version (1), then the checksum header (u8 type, u32 bytesPerChecksum). */
  private static final int META_VERSION = 1;
  private static final int META_HEADER_BYTES = 2 + 1 + 4;

  private final OpContext ctx;
  private final Connection conn;
  private final DataNodeAccess dn;
  private final Endpoint ep;
  private final Message request;
  private final long id;

  // touched only inside run(), which is serialized by `scheduled`
  private boolean opened;
  private ExtendedBlock block;
  private ReadableByteChannel blockCh;
  private ReadableByteChannel metaCh;
  private DiskIo.ReadStream disk; // hrdma disk: this read's I/O on its volume's scheduler
  private DirectPacketReader<DirectPacket> packets; // hrdma disk: O_DIRECT into the packets, or null
  private long firstOffset;
  private int bytesPerChecksum;
  private int checksumSize;
  private int packetBytes;
  private long next;
  private long end;
  private DataChecksum checksum;
  private Status declined;       // open() refused the request: sent when it starts, with...
  private String declinedWhy;    // ...this message
  private boolean answered;      // READ_RESPONSE or the refusal sent
  private boolean openedEarly;   // open() ran before the task's turn
  private boolean lastSent;
  private boolean handedOn;

  /** The front executor until the replica's volume is known, then that volume's own. */
  private volatile ExecutorService exec;

  private final Object lock = new Object();
  private int inflight;          // guarded by lock
  private boolean scheduled;     // guarded by lock
  private boolean started;       // guarded by lock: its turn came (start)
  private boolean preparing;     // guarded by lock: asked to prepare before its turn
  private boolean cancelled;     // guarded by lock
  private boolean finished;      // guarded by lock
  private Throwable sendFailure; // guarded by lock

  BlockReadTask(OpContext ctx, Connection conn, Message request) {
    this.ctx = ctx;
    this.conn = conn;
    this.dn = ctx.dn();
    this.ep = conn.endpoint();
    this.request = request;
    this.id = request.requestId();
  }

  @Override
  public long requestId() {
    return id;
  }

  /** Starts serving (called by the connection when it is this request's turn). */
  @Override
  public void start() {
    synchronized (lock) {
      started = true;
    }
    schedule();
  }

  /** Its turn is near: open and start the disk reads, send nothing yet. */
  @Override
  public void prepare() {
    synchronized (lock) {
      preparing = true;
    }
    schedule();
  }

  /** Stops early: the client cancelled or the connection closed. */
  @Override
  public void cancel() {
    synchronized (lock) {
      cancelled = true;
    }
    schedule();
  }

  /** Never started, never will: the connection closed or the client withdrew the request. */
  @Override
  public void abandon() {
    boolean prepared;
    synchronized (lock) {
      prepared = preparing;
      if (prepared) { // files and reads may be open: a run undoes them, sending nothing
        cancelled = true;
      } else {
        finished = true;
      }
    }
    if (prepared) {
      schedule();
    } else {
      request.release();
    }
  }

  /** Never started: answered with an error. */
  @Override
  public void refuse(Status status, String message) {
    Replies.error(ep, id, status, message);
    abandon();
  }

  private void schedule() {
    synchronized (lock) {
      if (scheduled || finished) {
        return;
      }
      scheduled = true;
    }
    try {
      exec().execute(this::run);
    } catch (RejectedExecutionException e) {
      boolean turn;
      synchronized (lock) { // looked at again: start() may have come meanwhile and left it to this run
        turn = started;
        if (!turn && !cancelled) {
          scheduled = false; // not its turn: nothing may be sent yet, start() tries again
          return;
        }
      }
      if (!turn) { // withdrawn before its turn: undone without a word on the wire
        completeElsewhere();
        return;
      }
      Replies.error(ep, id, Status.ERROR, "DataNode " + dn.datanodeUuid()
          + " is stopping or overloaded; read of " + (block == null ? "the block" : block) + " not served");
      completeElsewhere();
    }
  }

  private void sent(Void v, Throwable t) {
    synchronized (lock) {
      inflight--;
      if (t != null && sendFailure == null) {
        sendFailure = t;
      }
      if (scheduled || finished) {
        return;
      }
      scheduled = true;
    }
    try {
      exec().execute(this::run);
    } catch (RejectedExecutionException e) {
      completeElsewhere(); // called on an I/O thread: closing may wait for disk reads
    }
  }

  private ExecutorService exec() {
    ExecutorService e = exec;
    return e != null ? e : ctx.readExecutor();
  }

  /**
   * The executor of the volume that holds the requested replica (a lookup in memory), or the
   * front one when there is none (the read is then refused by {@link #open}).
   */
  private ExecutorService volumeExecutor() {
    try {
      DataNodeAccess.Volume v = dn.volumeOf(BlockOps.block(request.readRequest()));
      return v == null ? ctx.readExecutor() : ctx.volumeExecutor(v.storageId());
    } catch (IOException | RuntimeException e) {
      return ctx.readExecutor();
    }
  }

  private void run() {
    if (exec == null) {
      ExecutorService v = volumeExecutor();
      exec = v;
      if (v != ctx.readExecutor()) {
        try {
          v.execute(this::run); // `scheduled` stays set: the run moves to the volume's threads
          return;
        } catch (RejectedExecutionException e) {
          // that volume's queue is full or the plugin stops: the run goes on here and finds out
        }
      }
    }
    try {
      if (!opened) {
        if (cancelled()) { // abandoned before it began
          complete();
          return;
        }
        opened = true;
        try {
          open();
        } catch (IOException | RuntimeException | Error e) {
          // an Error too (the dataset and Hadoop's token parse are other code; stock's DataXceiver ends on any
          // Throwable): unanswered, the connection's reads would wait behind this one for ever
          LOG.warn("hrdma datanode: reading {} for {} failed: {}", what(), ep.remoteAddress(), e.toString());
          decline(Status.ERROR, "DataNode " + dn.datanodeUuid() + " failed reading " + what() + ": " + e);
          openedEarly = false; // files may be half open: complete() closes them, no second try
        }
      }
      synchronized (lock) {
        if (!started && !cancelled) {
          scheduled = false; // prepared: start() brings the task back
          return;
        }
      }
      if (!answered) {
        answered = true;
        if (cancelled()) {
          complete(); // abandoned after preparing, or cancelled before a word was sent
          return;
        }
        if (declined != null && openedEarly) {
          // refused ahead of its turn (a replica being written may have grown, a token been
          // renewed since): asked again now, as a read that was not prepared would be
          declined = null;
          openedEarly = false;
          open(); // a refusal comes before any file is opened: nothing to undo
        }
        if (declined != null) {
          Replies.error(ep, id, declined, declinedWhy);
          complete();
          return;
        }
        ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.READ_RESPONSE, id,
            BlockOps.readResponse(checksum, firstOffset), null));
        if (packets != null && ctx.settings().prepareAhead()) {
          // its turn: once its disk reads are all issued (now, if they already are), however far
          // the sending has got, the connection's next read may prepare. Told from the read
          // executor, not the I/O worker that issued the last read: the connection's lock may be
          // held by a thread that waits for that worker (a close waiting for reads in flight)
          packets.whenAllIssued(this::aheadLater);
        }
      }
      while (true) {
        synchronized (lock) {
          if (cancelled || sendFailure != null) {
            if (sendFailure != null) {
              LOG.debug("hrdma datanode: sending {} to {} failed: {}", block, ep.remoteAddress(),
                  sendFailure.toString());
            }
            break;
          }
          if (lastSent) {
            if (inflight > 0) {
              scheduled = false; // the last completion brings us back to finish
              return;
            }
            break;
          }
          if (inflight >= ctx.settings().packetsInFlight()) {
            scheduled = false;
            return;
          }
          inflight++;
        }
        RegisteredBuffer p;
        try {
          p = nextPacket();
        } catch (IOException | RuntimeException | Error e) {
          synchronized (lock) {
            inflight--;
          }
          throw e;
        }
        ShmSegment.send(ep, id, p).whenComplete(this::sent); // by reference when p is in the connection's segment
        if (lastSent && !handedOn) {
          handedOn = true;
          conn.handOn(this); // the connection's next read may start while these packets drain
        }
      }
    } catch (IOException | RuntimeException | Error e) {
      LOG.warn("hrdma datanode: reading {} for {} failed: {}", what(), ep.remoteAddress(), e.toString());
      Replies.error(ep, id, Status.ERROR, "DataNode " + dn.datanodeUuid() + " failed reading "
          + what() + ": " + e);
    }
    complete();
  }

  private void aheadLater() {
    try {
      ctx.readExecutor().execute(() -> conn.ahead(this));
    } catch (RejectedExecutionException e) {
      // stopping or overloaded: the next read starts in its turn, unprepared
    }
  }

  private String what() {
    return block == null ? "request " + id : block + " at offset " + next;
  }

  private boolean started() {
    synchronized (lock) {
      return started;
    }
  }

  private boolean cancelled() {
    synchronized (lock) {
      return cancelled;
    }
  }

  /** The answer to send when the task starts, instead of READ_RESPONSE; false. */
  private boolean decline(Status status, String why) {
    declined = status;
    declinedWhy = why;
    return false;
  }

  /**
   * Checks the request, opens the files and (on the O_DIRECT path) starts the disk reads;
   * sends nothing. A refusal is {@link #decline}d, to be sent when the task starts.
   */
  private boolean open() throws IOException {
    openedEarly = !started();
    OpReadBlockProto op;
    try {
      op = request.readRequest();
    } catch (ProtocolException e) {
      throw new AssertionError(e); // the dispatcher checked the kind
    }
    block = BlockOps.block(op);
    Token<BlockTokenIdentifier> token = BlockOps.token(op);
    try {
      dn.checkBlockToken(token, block, AccessMode.READ);
    } catch (InvalidToken e) {
      // the stock DataXceiver's words, so logs and clients read the same
      String msg = "Block token verification failed: op=READ_BLOCK, remoteAddress=" + ep.remoteAddress()
          + ", message=" + e.getMessage();
      LOG.warn("hrdma datanode: {}", msg);
      return decline(Status.ERROR_ACCESS_TOKEN, msg);
    }
    long offset = op.getOffset();
    long len = op.getLen();
    long visible;
    try {
      visible = dn.replicaVisibleLength(block);
    } catch (IOException e) {
      return decline(Status.ERROR, "DataNode " + dn.datanodeUuid() + " cannot read " + block + ": "
          + e.getMessage());
    }
    if (offset < 0 || len < 0 || offset > visible || len > visible - offset) {
      return decline(Status.ERROR, "Offset " + offset + " and length " + len + " don't match block " + block
          + " ( blockLen " + visible + " )");
    }
    try {
      FaultHooks.throwTooManyOpenFiles(); // stock's hook where its BlockSender opens the files
    } catch (IOException e) {
      return decline(Status.ERROR, "opReadBlock " + block + " received exception " + e); // stock's words
    }
    DataNodeAccess.MetaStream meta = dn.metaInputStream(block);
    if (meta == null) {
      return decline(Status.ERROR, "DataNode " + dn.datanodeUuid() + ": replica " + block + " has no .meta file");
    }
    boolean ok = false;
    try {
      InputStream in = meta.in();
      DataInputStream header = new DataInputStream(in); // unbuffered: the channel continues where it stops
      int version = header.readShort();
      int type = header.readByte() & 0xff;
      int bpc = header.readInt();
      if (version != META_VERSION) {
        throw new IOException("unsupported .meta version " + version + " in " + block);
      }
      try {
        checksum = DataChecksum.newDataChecksum(DataChecksum.Type.valueOf(type), bpc);
      } catch (IllegalArgumentException e) {
        checksum = null;
      }
      if (checksum == null || bpc <= 0) {
        throw new IOException("bad checksum header in the .meta of " + block + ": type " + type
            + ", bytesPerChecksum " + bpc);
      }
      if (!op.getSendChecksums()) {
        // as the stock BlockSender asked for no checksums: type NULL, no sums read or sent (the
        // replica's chunk size still aligns the range)
        checksum = DataChecksum.newDataChecksum(DataChecksum.Type.NULL, bpc);
      }
      bytesPerChecksum = bpc;
      checksumSize = checksum.getChecksumSize();
      // as the stock BlockSender: start at the chunk holding offset, end at a chunk
      // boundary (or the visible end)
      long chunkOffset = offset - offset % bpc;
      long stop = offset + len;
      if (stop % bpc != 0) {
        stop = Math.min(visible, stop + (bpc - stop % bpc));
      }
      next = chunkOffset;
      end = stop;
      int pb = ctx.settings().packetBytes();
      int whole = Math.max(bpc, pb - pb % bpc);
      BufferAllocator alloc = conn.packetAllocator();
      // whole chunks, and no more than fits the pool's buffer for that much data (on the O_DIRECT
      // path, below, with the file's alignment)
      packetBytes = MessageCodec.packetDataBytes(alloc, whole, bpc, checksumSize, 1);
      IOUtils.skipFully(in, (chunkOffset / bpc) * checksumSize);
      metaCh = meta.channel();
      blockCh = DataNodeAccess.channelOf(dn.blockInputStream(block, chunkOffset));
      firstOffset = chunkOffset;
      disk = ctx.disk().openRead(dn, block); // hrdma disk: the volume's scheduler
      // hrdma disk: O_DIRECT + io_uring on ssd volumes, into the packets where the start is aligned
      // (an empty range is one empty packet: the channel's path sends it)
      packets = end > chunkOffset ? disk.packets(chunkOffset, end,
          align -> MessageCodec.packetDataBytes(alloc, whole, bpc, checksumSize, align), this::allocatePacket) : null;
      if (packets != null) {
        packetBytes = packets.packetBytes();
      }
      if (packets == null) {
        blockCh = disk.direct(blockCh, chunkOffset, end);
      } else if (!started()) { // prepared ahead of its turn: the device reads while the read before drains
        packets.prefetch();
        ctx.preparedAhead();
      }
      ok = true;
      return true;
    } finally {
      if (!ok) {
        meta.close();
      }
    }
  }

  private RegisteredBuffer nextPacket() throws IOException {
    if (packets != null) {
      return nextDirectPacket();
    }
    int dataLen = (int) Math.min(packetBytes, end - next);
    int sumLen = sumBytes(dataLen);
    PacketHeaderProto h = packetHeader(next, dataLen);
    RegisteredBuffer p = MessageCodec.begin(conn.packetAllocator(), MessageKind.DATA_PACKET, id, h,
        sumLen + dataLen);
    try {
      disk.read(next, dataLen, () -> { // hrdma disk: on the volume's scheduler
        readFully(metaCh, p.nio(), sumLen, "the .meta file");
        readFully(blockCh, p.nio(), dataLen, "the block file");
        return null;
      });
      MessageCodec.finish(p);
    } catch (IOException | RuntimeException e) {
      p.release();
      throw e;
    }
    next += dataLen;
    lastSent = h.getLastPacketInBlock();
    return p;
  }

  /**
   * A DATA_PACKET laid out for O_DIRECT: the message starts {@code start} bytes into its
   * registered buffer, so that its data (after the headers and the checksums) starts at an
   * aligned address, with room behind it for the data rounded up to the alignment.
   */
  private record DirectPacket(RegisteredBuffer buffer, int start, int dataAt, int sumLen, int dataLen,
      boolean last) implements DirectPacketReader.Packet {
    @Override
    public long dataAddress() {
      return buffer.address() + dataAt;
    }

    @Override
    public void discard() {
      buffer.release();
    }
  }

  /** The packet of [offset, offset + length), headers written, for {@link #packets} to read the data into. */
  private DirectPacket allocatePacket(long offset, int length, int align) throws IOException {
    int sumLen = sumBytes(length);
    PacketHeaderProto h = packetHeader(offset, length);
    int before = MessageCodec.FIXED_BYTES + h.getSerializedSize() + sumLen;
    int readLen = length + (align - length % align) % align;
    RegisteredBuffer b = conn.packetAllocator().allocate(before + readLen + align);
    try {
      int start = (int) Math.floorMod(-(b.address() + before), (long) align);
      MessageCodec.beginAt(b, start, MessageKind.DATA_PACKET, id, h, sumLen + length);
      return new DirectPacket(b, start, start + before, sumLen, length, h.getLastPacketInBlock());
    } catch (RuntimeException e) {
      b.release();
      throw e;
    }
  }

  /** The next packet from {@link #packets}: its data is in place; the checksums come from the .meta file. */
  private RegisteredBuffer nextDirectPacket() throws IOException {
    DirectPacket d = packets.take(next);
    RegisteredBuffer p = d.buffer();
    try {
      ByteBuffer b = p.nio();
      readFully(metaCh, b, d.sumLen(), "the .meta file");
      b.position(b.position() + d.dataLen());
      MessageCodec.finish(p, d.start());
    } catch (IOException | RuntimeException e) {
      p.release();
      throw e;
    }
    next += d.dataLen();
    lastSent = d.last();
    return p;
  }

  /** Checksum bytes of {@code dataLen} bytes of data. */
  private int sumBytes(int dataLen) {
    return (dataLen + bytesPerChecksum - 1) / bytesPerChecksum * checksumSize;
  }

  /**
   * The header of the packet of [offset, offset + dataLen): every packet but the last holds
   * {@code packetBytes}, so its seqno follows from its offset.
   */
  private PacketHeaderProto packetHeader(long offset, int dataLen) {
    return PacketHeaderProto.newBuilder()
        .setOffsetInBlock(offset)
        .setSeqno((offset - firstOffset) / packetBytes)
        .setLastPacketInBlock(offset + dataLen >= end)
        .setDataLen(dataLen)
        .build();
  }

  private void readFully(ReadableByteChannel ch, ByteBuffer b, int n, String what) throws IOException {
    int limit = b.limit();
    b.limit(b.position() + n);
    try {
      while (b.hasRemaining()) {
        if (ch.read(b) < 0) {
          throw new EOFException(what + " of " + block + " ended " + b.remaining() + " bytes early");
        }
      }
    } finally {
      b.limit(limit);
    }
  }

  /** Closes the files, gives back the request's buffer, lets the connection go on. Once. */
  /**
   * {@link #complete} off the calling thread, which may be a transport I/O thread (a send's
   * completion, a close): closing the direct reads waits for those in flight on the disk.
   */
  private void completeElsewhere() {
    java.util.concurrent.CompletableFuture.runAsync(this::complete);
  }

  private void complete() {
    synchronized (lock) {
      if (finished) {
        return;
      }
      finished = true;
      scheduled = false;
    }
    if (packets != null) {
      try {
        packets.close(); // hrdma disk: waits for its reads, gives back the packets not sent
      } catch (IOException e) {
        LOG.debug("hrdma datanode: closing the direct reads of {}: {}", block, e.toString());
      }
    }
    if (disk != null) {
      disk.close(); // hrdma disk
    }
    closeQuietly(blockCh);
    closeQuietly(metaCh);
    request.release();
    conn.done(this);
  }

  private static void closeQuietly(ReadableByteChannel ch) {
    if (ch != null) {
      try {
        ch.close();
      } catch (IOException e) {
        // nothing to do
      }
    }
  }
}
