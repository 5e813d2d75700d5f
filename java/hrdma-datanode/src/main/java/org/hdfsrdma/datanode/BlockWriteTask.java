package org.hdfsrdma.datanode;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto.BlockConstructionStage;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PacketHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PipelineAckProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier.AccessMode;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.datanode.compat.DataNodeAccess;
import org.hdfsrdma.datanode.compat.RbwReplica;
import org.hdfsrdma.datanode.disk.DiskIo;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.ChunkSums;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.RdmaPorts;
import org.hdfsrdma.protocol.wire.ClientGate;
import org.hdfsrdma.protocol.wire.WireProtection;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;
import org.hdfsrdma.transport.select.HrdmaConnector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Receives one block written through this DataNode (a WRITE_REQUEST, then
 * DATA_PACKETs with the same request id), as one stage of a write pipeline.
 *
 * <p>Setup (on the plugin's write executor): the block token is checked as
 * the stock DataXceiver checks it (mode WRITE, the storage types and ids of
 * this node and those downstream); the replica is created with
 * {@code createRbw} on the storage the request names; when the request names
 * downstream targets, a connection to the next DataNode's plugin is opened,
 * the request is forwarded with the remaining targets and its WRITE_RESPONSE
 * awaited; then WRITE_RESPONSE goes upstream ({@code firstBadLink} names the
 * node that failed, as stock).
 *
 * <p>Packets: on arrival (transport I/O thread) each packet is forwarded
 * downstream at once (the same received buffer, retained, when the
 * downstream transport can send from it: cut-through) and queued; the write
 * executor then verifies its chunk checksums, writes data and checksums into
 * the replica and records it as waiting for its ack. An ack goes upstream
 * when both this node's result and the downstream ack for that seqno are in:
 * statuses are this node's, then the downstream's, in pipeline order; acks
 * leave in seqno order. The last packet (lastPacketInBlock) finalizes the
 * replica and tells the NameNode before it is acked.
 *
 * <p>Failure (checksum mismatch: ERROR_CHECKSUM, disk error: ERROR, a
 * downstream node gone: ERROR in its place): the ack of the packet concerned
 * carries the error, the write stops, the streams are closed and the replica
 * stays RBW (the NameNode's block recovery deals with it). The connection
 * and the plugin keep serving.
 *
 * <p>Memory: packets waiting here keep their buffers, which hold the
 * upstream sender's credits, so the transport bounds how many can pile up.
 * The data is forwarded downstream from the buffer it arrived in and
 * written to the block file from it: through the file's channel, or with
 * O_DIRECT after one copy into an aligned buffer (see DiskIo#writeDirect).
 */
final class BlockWriteTask {
  private static final Logger LOG = LoggerFactory.getLogger(BlockWriteTask.class);

  private final RequestDispatcher owner;
  private final DataNodeAccess dn;
  private final Endpoint up;
  private final Message request;
  private final long id;

  // set during setup (before `ready`), read afterwards
  private ExtendedBlock block;
  private RbwReplica replica;
  private DiskIo.WriteStream disk; // hrdma disk: this block's I/O on its volume's scheduler
  private DataChecksum checksum;
  private int bytesPerChecksum;
  private int checksumSize;
  private String mirrorName;
  private volatile Downstream down;
  private volatile boolean ready;
  private BlockConstructionStage stage;
  private boolean registered;  // this task is the block's registered writer on this DataNode

  // touched only by the executor (serialized by `scheduled`)
  private boolean setupDone;
  private long expectedSeqno = -1; // -1: taken from the first packet (a recovered pipeline resends old seqnos)
  private long expectedOffset;
  private byte[] sumBuf = new byte[0];
  private boolean stopped;  // no more local processing

  private final Object lock = new Object();
  private final ArrayDeque<Message> packets = new ArrayDeque<>(); // guarded by lock
  private final ArrayDeque<Pending> unacked = new ArrayDeque<>(); // guarded by lock
  private final ArrayDeque<PipelineAckProto> downAcks = new ArrayDeque<>(); // guarded by lock
  private String downFailure;     // guarded by lock
  private boolean scheduled;      // guarded by lock
  private boolean done;           // guarded by lock: the write ended (last ack or error ack sent)
  private boolean aborted;        // guarded by lock: upstream gone or plugin stopping
  private boolean finished;       // guarded by lock: cleaned up

  /** A packet processed here, waiting for its downstream ack. */
  private record Pending(long seqno, long end, Status local, boolean last) {}

  BlockWriteTask(RequestDispatcher owner, Endpoint up, Message request) {
    this.owner = owner;
    this.dn = owner.dn();
    this.up = up;
    this.request = request;
    this.id = request.requestId();
  }

  long requestId() {
    return id;
  }

  /** Starts the setup (called once by the dispatcher). */
  void start() {
    schedule();
  }

  // ------------------------------------------------------------ I/O thread

  /** A DATA_PACKET for this write (upstream I/O thread): forward it, queue it. Takes over the message. */
  void onPacket(Message m) {
    Downstream d = down;
    synchronized (lock) {
      if (done || aborted || finished) {
        m.release();
        return;
      }
      if (!ready) {
        m.release();
        failUnlocked("DATA_PACKET before the pipeline was set up");
        return;
      }
      if (d != null && downFailure == null) {
        d.forward(m.buffer());
      }
      packets.add(m);
    }
    schedule();
  }

  /** Upstream closed, or the plugin is stopping: give up, clean up. */
  void abort() {
    synchronized (lock) {
      aborted = true;
    }
    schedule();
  }

  /**
   * Stops this write for a pipeline recovery of the same block (stock:
   * ReplicaInPipeline#stopWriter): no more packets are processed and the
   * replica's streams are closed, here when no executor thread runs the task,
   * else by that thread, which this call waits for.
   *
   * @return false when the task did not stop within {@code timeoutMs}
   */
  boolean stop(long timeoutMs) {
    boolean inline;
    synchronized (lock) {
      aborted = true;
      if (finished) {
        return true;
      }
      inline = !scheduled;
      if (inline) {
        scheduled = true; // no executor run starts now: cleaning up is ours
      }
    }
    if (inline) {
      cleanup();
      return true;
    }
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    synchronized (lock) {
      while (!finished) {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (left <= 0) {
          return false;
        }
        try {
          lock.wait(left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      }
    }
    return true;
  }

  private void failUnlocked(String why) {
    LOG.warn("hrdma datanode: write {} from {} aborted: {}", block == null ? "request " + id : block,
        up.remoteAddress(), why);
    aborted = true;
  }

  private void onDownstreamAck(PipelineAckProto ack) {
    synchronized (lock) {
      downAcks.add(ack);
      sendAcksLocked();
    }
    schedule(); // ends the write when the ack ended it
  }

  private void onDownstreamFailed(String why) {
    synchronized (lock) {
      if (downFailure != null) {
        return;
      }
      downFailure = why;
      if (!done && !finished && ready) {
        LOG.warn("hrdma datanode: downstream {} of {} failed: {}", mirrorName, block, why);
      }
      sendAcksLocked();
    }
    schedule();
  }

  /**
   * Sends every ack whose local result and downstream ack are both in, in
   * order. Sends never block; holding the lock keeps them in order.
   */
  private void sendAcksLocked() {
    while (!done && !unacked.isEmpty()) {
      Pending p = unacked.peek();
      List<Status> statuses = new ArrayList<>(4);
      statuses.add(p.local());
      if (down != null) {
        PipelineAckProto a = downAcks.poll();
        if (a != null) {
          if (a.getSeqno() != p.seqno()) {
            downFailure = "ack for seqno " + a.getSeqno() + " while waiting for " + p.seqno();
            LOG.warn("hrdma datanode: downstream {} of {}: {}", mirrorName, block, downFailure);
            statuses.add(Status.ERROR);
          } else {
            statuses.addAll(BlockOps.ackStatuses(a));
          }
        } else if (downFailure != null) {
          statuses.add(Status.ERROR);
        } else {
          return; // wait for the downstream ack
        }
      }
      unacked.poll();
      boolean ok = statuses.stream().allMatch(s -> s == Status.SUCCESS);
      if (ok && replica != null) {
        replica.setBytesAcked(p.end());
      }
      sendUp(MessageKind.PIPELINE_ACK, BlockOps.pipelineAck(p.seqno(), statuses));
      if (!ok) {
        LOG.warn("hrdma datanode: write of {} failed at seqno {}: acked {}", block, p.seqno(), statuses);
      }
      if (!ok || p.last()) {
        done = true;
      }
    }
  }

  private void sendUp(MessageKind kind, org.apache.hadoop.thirdparty.protobuf.MessageLite header) {
    try {
      up.send(MessageCodec.encode(up.transport().allocator(), kind, id, header, null));
    } catch (TransportException | RuntimeException e) {
      LOG.warn("hrdma datanode: cannot send {} to {}, closing the connection: {}", kind, up.remoteAddress(),
          e.toString());
      up.close();
    }
  }

  // -------------------------------------------------------------- executor

  private void schedule() {
    synchronized (lock) {
      if (scheduled || finished) {
        return;
      }
      scheduled = true;
    }
    try {
      owner.writeExecutor().execute(this::run);
    } catch (RejectedExecutionException e) {
      synchronized (lock) {
        scheduled = false;
        aborted = true;
      }
      if (!setupDone) {
        sendUp(MessageKind.WRITE_RESPONSE, BlockOps.writeResponse(Status.ERROR, "", "DataNode "
            + dn.datanodeUuid() + " is stopping or overloaded; write not served"));
      }
      cleanup(); // no thread will come: clean up here (nothing else runs on this task)
    }
  }

  private void run() {
    try {
      if (!setupDone) {
        setupDone = true;
        boolean early;
        synchronized (lock) {
          early = aborted;
        }
        if (early) {
          // refused or abandoned before it started
        } else if (!setup()) {
          synchronized (lock) {
            aborted = true;
          }
        } else {
          synchronized (lock) {
            ready = true;
            if (stage == BlockConstructionStage.PIPELINE_CLOSE_RECOVERY) {
              done = true; // the replica is finalized: no packets follow
            }
          }
          sendUp(MessageKind.WRITE_RESPONSE, BlockOps.writeResponse(Status.SUCCESS, "", null));
        }
      }
      while (true) {
        Message m;
        synchronized (lock) {
          if (done || aborted) {
            break;
          }
          m = packets.poll();
          if (m == null) {
            scheduled = false;
            return;
          }
        }
        try {
          if (!stopped) {
            process(m);
          }
        } finally {
          m.release();
        }
      }
    } catch (RuntimeException | Error e) {
      LOG.error("hrdma datanode: write of {} failed unexpectedly", block, e);
      synchronized (lock) {
        aborted = true;
      }
    }
    cleanup();
  }

  /** Checks, creates the replica, sets up the downstream. On refusal answers WRITE_RESPONSE and returns false. */
  private boolean setup() {
    OpWriteBlockProto op;
    try {
      op = request.writeRequest();
    } catch (ProtocolException e) {
      throw new AssertionError(e); // the dispatcher checked the kind
    }
    block = BlockOps.block(op);
    try {
      dn.checkBlockToken(BlockOps.token(op), block, AccessMode.WRITE, BlockOps.pipelineStorageTypes(op),
          BlockOps.pipelineStorageIds(op));
    } catch (InvalidToken e) {
      // stock: status ERROR_ACCESS_TOKEN, firstBadLink = this node's registered xfer address
      String msg = "Block token verification failed: op=WRITE_BLOCK, remoteAddress=" + up.remoteAddress()
          + ", message=" + e.getMessage();
      LOG.warn("hrdma datanode: {}", msg);
      String self = "";
      try {
        self = dn.registeredXferAddr(block.getBlockPoolId());
      } catch (IOException ignored) {
        // not registered: no address to name
      }
      sendUp(MessageKind.WRITE_RESPONSE, BlockOps.writeResponse(Status.ERROR_ACCESS_TOKEN, self, msg));
      return false;
    } catch (IOException e) {
      return refuse(Status.ERROR, "cannot check the block token of " + block + ": " + e.getMessage(), true);
    }
    stage = op.getStage();
    if (stage != BlockConstructionStage.PIPELINE_SETUP_CREATE
        && stage != BlockConstructionStage.PIPELINE_SETUP_STREAMING_RECOVERY
        && stage != BlockConstructionStage.PIPELINE_CLOSE_RECOVERY) {
      return refuse(Status.ERROR_UNSUPPORTED, "stage " + stage + " is not supported over hrdma (PIPELINE_SETUP_CREATE"
          + ", PIPELINE_SETUP_STREAMING_RECOVERY, PIPELINE_CLOSE_RECOVERY; appends take the stock path)", false);
    }
    try {
      checksum = BlockOps.requestedChecksum(op);
    } catch (RuntimeException e) {
      checksum = null;
    }
    if (checksum == null || checksum.getChecksumSize() == 0 || checksum.getBytesPerChecksum() <= 0) {
      return refuse(Status.ERROR_INVALID, "unsupported requested checksum " + op.getRequestedChecksum(), false);
    }
    bytesPerChecksum = checksum.getBytesPerChecksum();
    checksumSize = checksum.getChecksumSize();
    // one writer per replica: a recovery takes over from the write it replaces (stock: stopWriter)
    registered = true;
    if (!owner.takeOverBlock(block, this)) {
      return refuse(Status.ERROR, "the earlier write of " + block + " on DataNode " + dn.datanodeUuid()
          + " did not stop within " + owner.setupTimeoutMs() + " ms", true);
    }
    try {
      openReplica(op);
    } catch (IOException | RuntimeException e) {
      return refuse(Status.ERROR, "DataNode " + dn.datanodeUuid() + " cannot " + (stage
          == BlockConstructionStage.PIPELINE_SETUP_CREATE ? "create " : "recover (" + stage + ") ") + block + ": "
          + e, true);
    }
    DatanodeInfo[] targets = BlockOps.targets(op);
    if (targets.length > 0) {
      DatanodeInfo next = targets[0];
      mirrorName = next.getXferAddr();
      Downstream d = new Downstream();
      BlockOpResponseProto resp;
      try {
        HrdmaConnector connector = owner.connector();
        InetSocketAddress a = new InetSocketAddress(next.getIpAddr(), RdmaPorts.pluginPort(next, dn.conf()));
        ClientGate gate = new ClientGate(d);
        HrdmaConnector.Connection c = connector.connect(a, gate);
        // downstream, this DataNode proves itself as stock's does: its own encryption key, the write's token
        WireProtection wire = WireProtection.forClient(dn.conf(), dn.conf().getBoolean(
            "dfs.encrypt.data.transfer", false), a.getPort());
        Endpoint e = gate.handshake(c.endpoint(), wire, new ClientGate.Credentials(
            wire.mode() == WireProtection.Mode.ENCRYPT ? dn.dataEncryptionKey(block) : null, BlockOps.token(op)),
            owner.setupTimeoutMs());
        d.ep = e;
        down = d;
        e.send(MessageCodec.encode(e.transport().allocator(), MessageKind.WRITE_REQUEST,
            id, BlockOps.forwardWriteBlock(op), null));
        resp = d.response.get(owner.setupTimeoutMs(), TimeUnit.MILLISECONDS);
      } catch (IOException | ExecutionException | TimeoutException | RuntimeException e) {
        Throwable t = e instanceof ExecutionException ? e.getCause() : e;
        LOG.warn("hrdma datanode: cannot set up the pipeline of {} to {}: {}", block, mirrorName, t.toString());
        sendUp(MessageKind.WRITE_RESPONSE, BlockOps.writeResponse(Status.ERROR, mirrorName,
            "DataNode " + dn.datanodeUuid() + " cannot reach " + mirrorName + ": " + t.getMessage()));
        return false;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return refuse(Status.ERROR, "DataNode " + dn.datanodeUuid() + " is stopping", true);
      }
      if (resp.getStatus() != Status.SUCCESS) {
        // as stock: pass the downstream's status and firstBadLink up
        sendUp(MessageKind.WRITE_RESPONSE, BlockOps.writeResponse(resp.getStatus(), resp.getFirstBadLink(),
            resp.getMessage()));
        return false;
      }
    }
    LOG.info("hrdma datanode: receiving {} from {}{}", block, up.remoteAddress(),
        mirrorName == null ? "" : ", mirror " + mirrorName);
    return true;
  }

  /**
   * The replica this write goes to, by stage (stock BlockReceiver's
   * constructor, DataXceiver for PIPELINE_CLOSE_RECOVERY).
   */
  private void openReplica(OpWriteBlockProto op) throws IOException {
    long newGs = op.getLatestGenerationStamp();
    switch (stage) {
      case PIPELINE_SETUP_CREATE -> {
        ExtendedBlock reserve = new ExtendedBlock(block);
        if (reserve.getNumBytes() == 0) {
          reserve.setNumBytes(dn.estimatedBlockSize()); // stock reserves the block size for a new replica
        }
        replica = dn.createRbw(BlockOps.storageType(op), BlockOps.storageId(op), reserve, false);
        replica.clearWriter();
        replica.openStreams(checksum);
        disk = owner.disk().openWrite(replica, reserve.getNumBytes()); // hrdma disk: preallocate, volume scheduler
        replica.setDirectWriter(disk); // hrdma disk: O_DIRECT where it can
      }
      case PIPELINE_SETUP_STREAMING_RECOVERY -> {
        // truncated to what every node acknowledged; the client sends the unacknowledged packets again
        replica = dn.recoverRbw(block, newGs, op.getMinBytesRcvd(), op.getMaxBytesRcvd());
        replica.clearWriter();
        block.setGenerationStamp(newGs);
        replica.openStreamsForRecovery(checksum);
        disk = owner.disk().openWrite(replica, dn.estimatedBlockSize()); // hrdma disk: as for a new replica
        replica.setDirectWriter(disk);
        expectedOffset = replica.bytesOnDisk();
        LOG.info("hrdma datanode: recovered {} at {} bytes for a new pipeline", block, expectedOffset);
      }
      case PIPELINE_CLOSE_RECOVERY -> {
        // every byte was acknowledged; only the close failed: finalize with the new generation stamp
        DataNodeAccess.ClosedReplica c = dn.recoverClose(block, newGs, op.getMinBytesRcvd());
        block.setGenerationStamp(newGs);
        block.setNumBytes(op.getMinBytesRcvd());
        dn.blockReceived(block, c.storageUuid(), c.onTransientStorage());
        LOG.info("hrdma datanode: finalized {} in a close recovery", block);
      }
      default -> throw new AssertionError(stage);
    }
  }

  /**
   * Answers WRITE_RESPONSE with {@code status}; {@code local}: the problem is
   * this DataNode's, which it names as firstBadLink (as stock names a node
   * that refuses a token) so that the client leaves it out of the next pipeline.
   */
  private boolean refuse(Status status, String message, boolean local) {
    LOG.warn("hrdma datanode: refusing write of {}: {}", block, message);
    String self = "";
    if (local) {
      try {
        self = dn.registeredXferAddr(block.getBlockPoolId());
      } catch (IOException ignored) {
        // not registered: no address to name
      }
    }
    sendUp(MessageKind.WRITE_RESPONSE, BlockOps.writeResponse(status, self, message));
    return false;
  }

  /**
   * Verifies a packet's chunks against the checksums it carries: CRC32C (what
   * HDFS clients send) straight on the received buffer, other types through
   * Hadoop's verifier. The failure reads as Hadoop's.
   */
  private void verify(ByteBuffer data, ByteBuffer sums, long offsetInBlock) throws ChecksumException {
    ChunkSums.verify(checksum, data, sums, block.toString(), offsetInBlock);
  }

  /** Verifies and writes one packet, then queues it for its ack. */
  private void process(Message m) {
    PacketHeaderProto h;
    try {
      h = m.packetHeader();
    } catch (ProtocolException e) {
      throw new AssertionError(e); // the dispatcher checked the kind
    }
    long seqno = h.getSeqno();
    Status local = Status.SUCCESS;
    long end = h.getOffsetInBlock() + h.getDataLen();
    boolean last = h.getLastPacketInBlock();
    try {
      int dataLen = h.getDataLen();
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
          || dataLen < 0 || payload.remaining() != sumLen + dataLen) {
        throw new ProtocolException("packet seqno " + seqno + " at " + h.getOffsetInBlock() + " with "
            + dataLen + " data bytes and a " + payload.remaining() + "-byte payload; expected seqno "
            + expectedSeqno + " at " + expectedOffset + " with " + (sumLen + dataLen) + " bytes");
      }
      expectedSeqno++;
      expectedOffset = Math.max(expectedOffset, end);
      if (dataLen > overlap) {
        ByteBuffer sums = payload.slice(payload.position(), sumLen);
        ByteBuffer data = payload.slice(payload.position() + sumLen, dataLen);
        verify(data, sums, h.getOffsetInBlock());
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
        disk.write(end, 0, () -> { // hrdma disk: then trim the preallocated tail, count extents
          replica.closeStreams(dn.syncOnClose());
          disk.finish();
          return null;
        });
        ExtendedBlock fin = new ExtendedBlock(block);
        fin.setNumBytes(replica.numBytes());
        dn.finalizeBlock(fin, dn.syncOnClose());
        dn.blockReceived(fin, replica.storageUuid(), replica.onTransientStorage());
        LOG.info("hrdma datanode: received {} of {} bytes from {}", fin, fin.getNumBytes(), up.remoteAddress());
        dn.lastPacketFinalized();
      }
    } catch (ChecksumException e) {
      LOG.warn("hrdma datanode: checksum error in {} from {} (seqno {}): {}", block, up.remoteAddress(), seqno,
          e.getMessage());
      local = Status.ERROR_CHECKSUM;
    } catch (IOException | RuntimeException e) {
      LOG.warn("hrdma datanode: writing {} (seqno {}) failed: {}", block, seqno, e.toString());
      local = Status.ERROR;
    }
    if (local != Status.SUCCESS) {
      stopped = true;
    }
    synchronized (lock) {
      unacked.add(new Pending(seqno, end, local, last));
      sendAcksLocked();
    }
  }

  /** Once: closes the streams (the replica stays RBW unless finalized), the downstream, the queue. */
  private void cleanup() {
    List<Message> left;
    synchronized (lock) {
      if (finished) {
        return;
      }
      finished = true;
      scheduled = false;
      left = new ArrayList<>(packets);
      packets.clear();
      lock.notifyAll(); // stop() waits for this
    }
    for (Message m : left) {
      m.release();
    }
    Downstream d = down;
    if (d != null && d.ep != null) {
      d.ep.close();
    }
    if (disk != null) {
      disk.close(); // hrdma disk
    }
    if (replica != null) {
      try {
        replica.close();
      } catch (IOException e) {
        LOG.warn("hrdma datanode: closing {} failed: {}", block, e.toString());
      }
    }
    if (registered) {
      owner.releaseBlock(block, this);
    }
    request.release();
    owner.writeDone(up, this);
  }

  /** The connection to the next DataNode of the pipeline (its handler runs on the connector's I/O thread). */
  private final class Downstream implements EndpointHandler {
    final CompletableFuture<BlockOpResponseProto> response = new CompletableFuture<>();
    volatile Endpoint ep;

    /** Sends the received packet on; never blocks. */
    void forward(RegisteredBuffer received) {
      Endpoint e = ep;
      RegisteredBuffer out;
      ByteBuffer src = received.nio();
      if (e.transport() == up.transport() || "tcp".equals(e.transport().name())) {
        out = received.retain(); // cut-through: the very buffer we received
      } else {
        // another transport's registered memory: copy into one of ours
        try {
          out = e.transport().allocator().allocate(src.remaining());
        } catch (TransportException ex) {
          onDownstreamFailed("out of registered memory forwarding to " + mirrorName + ": " + ex.getMessage());
          return;
        }
        ByteBuffer o = out.nio();
        o.clear();
        o.put(src.duplicate());
        o.flip();
      }
      e.send(out).whenComplete((v, t) -> {
        if (t != null) {
          onDownstreamFailed("forwarding to " + mirrorName + " failed: " + t.getMessage());
        }
      });
    }

    @Override
    public void onMessage(Endpoint endpoint, RegisteredBuffer buffer) {
      Message m;
      try {
        m = MessageCodec.decode(buffer);
      } catch (ProtocolException e) {
        buffer.release();
        String why = "bad message from " + mirrorName + ": " + e.getMessage();
        response.completeExceptionally(new IOException(why));
        onDownstreamFailed(why);
        endpoint.close();
        return;
      }
      try {
        switch (m.kind()) {
          case WRITE_RESPONSE -> response.complete(m.writeResponse());
          case PIPELINE_ACK -> onDownstreamAck(m.pipelineAck());
          case ERROR -> {
            String why = mirrorName + " answered " + m.error().getStatus() + ": " + m.error().getMessage();
            response.completeExceptionally(new IOException(why));
            onDownstreamFailed(why);
          }
          default -> onDownstreamFailed(mirrorName + " sent an unexpected " + m.kind());
        }
      } catch (ProtocolException e) {
        throw new AssertionError(e); // the kind was checked
      } finally {
        m.release();
      }
    }

    @Override
    public void onClosed(Endpoint endpoint, Throwable cause) {
      String why = "connection to " + mirrorName + " closed" + (cause == null ? "" : ": " + cause.getMessage());
      response.completeExceptionally(new IOException(why));
      onDownstreamFailed(why);
    }
  }
}
