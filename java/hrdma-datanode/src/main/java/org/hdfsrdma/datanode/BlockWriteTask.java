package org.hdfsrdma.datanode;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto.BlockConstructionStage;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PacketHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PipelineAckProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.hdfsrdma.datanode.compat.DataNodeAccess;
import org.hdfsrdma.datanode.compat.FaultHooks;
import org.hdfsrdma.datanode.compat.RbwReplica;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One block written through this DataNode (a WRITE_REQUEST, then DATA_PACKETs with the same
 * request id), as one stage of a write pipeline, split as HDFS splits it:
 * {@link PipelineSetup} (stock DataXceiver#writeBlock: token, replica, mirror, WRITE_RESPONSE),
 * {@link PacketReceiver} (stock BlockReceiver: verify, write, sync), {@link AckResponder}
 * (stock PacketResponder: acks in order, with the downstream's; finalize and tell the NameNode
 * after the downstream acked the last packet) and a {@link DownstreamMirror} (the link to the
 * next DataNode: {@link WriteMirror} over our transports, {@link StockMirror} over stock's
 * protocol). This task runs them: on arrival (transport I/O thread) each packet is
 * forwarded downstream at once (cut-through) and queued; the write executor runs the set-up,
 * then the packets, then the finalization.
 *
 * <p>Failure (checksum mismatch: ERROR_CHECKSUM, disk error: ERROR, a downstream node gone:
 * ERROR in its place): the ack of the packet concerned carries the error, the write stops,
 * the streams are closed and the replica stays RBW (the NameNode's block recovery deals with
 * it). No packet for {@value DataNodeLimits#PACKET_TIMEOUT_KEY}: as stock's socket timeout,
 * the write fails, the replica stays RBW and the connection is closed.
 *
 * <p>Memory: packets waiting here keep their buffers, which hold the upstream sender's
 * credits, so the transport bounds how many can pile up. Thread-safe.
 */
final class BlockWriteTask implements WriteMirror.Listener {
  private static final Logger LOG = LoggerFactory.getLogger(BlockWriteTask.class);

  private final OpContext ctx;
  private final Connection conn;
  private final DataNodeAccess dn;
  private final Endpoint up;
  private final Message request;
  private final long id;
  private final PipelineSetup setup;
  private final AckResponder responder;
  private volatile long lastPacketNanos = System.nanoTime();
  // when this node last sent a packet downstream (stock BlockReceiver#lastSentTime)
  private volatile long lastSentNanos = System.nanoTime();

  // set by the executor before `ready`, read afterwards
  private volatile DownstreamMirror mirror;
  private PacketReceiver receiver;
  private volatile boolean ready;
  // null until set-up: then the executor of the replica's volume, where the packets are written
  private volatile ExecutorService volumeExecutor;

  // touched only by the executor (serialized by `scheduled`)
  private boolean setupDone;
  // whether this node verifies the packets' checksums (stock BlockReceiver#shouldVerifyChecksum): in a
  // client's pipeline only the last node does (the node before it leaves the pipeline when it finds
  // a packet corrupt, AckResponder); a write from a DataNode is verified everywhere
  private boolean verifies = true;

  private final Object lock = new Object();
  private final ArrayDeque<Message> packets = new ArrayDeque<>(); // guarded by lock
  private boolean scheduled;      // guarded by lock
  private boolean aborted;        // guarded by lock: upstream gone, timed out or plugin stopping
  private boolean finished;       // guarded by lock: cleaned up
  private long restartMarkerUntil; // guarded by lock: > 0 once the DataNode shuts down for an upgrade
  private volatile boolean finalizedHere; // the replica was finalized: no restart marker then
  private final java.util.concurrent.CountDownLatch cleanedUp = new java.util.concurrent.CountDownLatch(1);
  // the thread recorded as the replica's writer, which a block recovery interrupts; null before
  // the replica exists and for a close recovery (no write follows)
  private volatile ReplicaWriterThread writerThread;

  BlockWriteTask(OpContext ctx, Connection conn, Message request) {
    this.ctx = ctx;
    this.conn = conn;
    this.dn = ctx.dn();
    this.up = conn.endpoint();
    this.request = request;
    this.id = request.requestId();
    this.setup = new PipelineSetup(ctx, this, up, request, this);
    this.responder = new AckResponder(new AckResponder.Upstream() {
      @Override
      public void ack(PipelineAckProto ack) {
        ackUp(ack, () -> { });
      }

      @Override
      public void ack(PipelineAckProto ack, Runnable recordAcked) {
        ackUp(ack, recordAcked);
      }
    }, ack -> sendUp(MessageKind.PIPELINE_ACK, ack));
  }

  long requestId() {
    return id;
  }

  /** Starts the set-up (called once by the connection). */
  void start() {
    schedule();
  }

  // ------------------------------------------------------------ I/O thread

  /** The next node's placement hint for a DATA_PACKET (the data ends the message); -1 where the header does not say. */
  private static int dataOffset(Message m) {
    try {
      PacketHeaderProto h = m.packetHeader();
      int data = h.getDataLen();
      int n = m.buffer().readableBytes();
      return data >= 0 && data <= n ? MessageCodec.packetPlacement(n - data, h.getOffsetInBlock(), data) : -1;
    } catch (java.net.ProtocolException e) {
      return -1;
    }
  }

  /** Whether {@code m} is a heartbeat packet: seqno -1, no data, not the last (see {@link BlockOps#HEARTBEAT_SEQNO}). */
  private static boolean heartbeat(Message m) {
    try {
      PacketHeaderProto h = m.packetHeader();
      return BlockOps.isHeartbeat(h) && h.getDataLen() == 0 && !h.getLastPacketInBlock();
    } catch (java.net.ProtocolException e) {
      return false;
    }
  }

  /**
   * A DATA_PACKET for this write (upstream I/O thread): forward it, queue it. Takes over the message.
   * A heartbeat goes the same way, so that its ack leaves in order with the data packets' (the
   * executor acks it without touching the replica, {@link PacketReceiver}); it resets the packet
   * timeout as any packet does.
   */
  void onPacket(Message m) {
    DownstreamMirror d = mirror;
    lastPacketNanos = System.nanoTime();
    // stock (BlockReceiver#receivePacket): a dropped heartbeat is not relayed; a node with a mirror
    // has queued it for its ack already (it waits for the downstream's), the last node never acks it
    boolean drop = heartbeat(m) && FaultHooks.dropHeartbeatPacket();
    if (drop && d == null) {
      m.release();
      return;
    }
    synchronized (lock) {
      if (aborted || finished) {
        m.release();
        return;
      }
      if (!ready) {
        m.release();
        failUnlocked("DATA_PACKET before the pipeline was set up");
        return;
      }
      if (d != null && !drop && responder.downstreamFailure() == null) {
        // stock's hooks around mirroring a packet; an injected failure is the mirror's
        long begin = System.nanoTime();
        try {
          FaultHooks.stopSendingPacketDownstream(d.name());
          responder.forwarded(); // before it goes: its ack may come back before forward returns
          d.forward(m, dataOffset(m));
          lastSentNanos = System.nanoTime();
          FaultHooks.logDelaySendingPacketDownstream(d.name(), TimeUnit.NANOSECONDS.toMillis(System.nanoTime()
              - begin));
        } catch (IOException e) {
          d.failed("sending a packet to " + d.name() + " failed: " + e.getMessage());
        }
      }
      packets.add(m);
    }
    schedule();
  }

  /**
   * Refused before it starts (the plugin's bound on open writes): an ERROR WRITE_RESPONSE naming
   * this DataNode as the bad link, so the client sets up its pipeline without it, as for the
   * set-up bound; {@link #start} then only cleans up.
   */
  void refuseOpen(String why) {
    sendUp(MessageKind.WRITE_RESPONSE, BlockOps.writeResponse(Status.ERROR, selfAddress(), why));
    synchronized (lock) {
      aborted = true;
    }
  }

  /** Upstream closed, or the plugin is stopping: give up, clean up. */
  void abort() {
    synchronized (lock) {
      aborted = true;
    }
    schedule();
  }

  /**
   * The timer: an open write that received no packet for {@code timeoutNs} fails as stock's
   * does on its socket timeout: the replica stays RBW for recovery and the connection closes.
   * Only a write that waits for the peer times out: one whose packets wait for a slow disk does
   * not (stock's timeout, too, is on the socket read, not on the disk write).
   */
  void checkPacketTimeout(long now, long timeoutNs) {
    if (!ready || responder.ended() || now - lastPacketNanos <= timeoutNs) {
      return;
    }
    DownstreamMirror d = mirror;
    if (d != null && d.sendsWaiting(now) && responder.downstreamSilentNanos(now) > 0) {
      // held up by the downstream, which takes nothing (stock's receiver, blocked writing to its mirror,
      // reads nothing upstream meanwhile): its ack timeout decides (checkDownstreamAckTimeout), and names
      // it rather than this node; once it failed, or owes nothing, this timeout applies again
      return;
    }
    synchronized (lock) {
      if (aborted || finished || scheduled) {
        return;
      }
    }
    LOG.warn("hrdma datanode: write of {} from {} received no packet for {} ms ({}); failing it and closing the"
        + " connection", setup.block, up.remoteAddress(), TimeUnit.NANOSECONDS.toMillis(timeoutNs),
        DataNodeLimits.PACKET_TIMEOUT_KEY);
    abort();
    up.close();
  }

  /**
   * The timer, for a write with a downstream, as stock's DataXceiver and PacketResponder time out
   * their mirror: a downstream that has owed acks and sent none for the packet timeout and 5 s per
   * DataNode downstream (stock: the mirror's ack read timeout, dfs.client.socket-timeout and 5 s
   * per target), or that took none of what it was sent for {@code writeTimeoutNs} and 5 s per
   * DataNode downstream (stock: the mirror socket's write timeout, dfs.datanode.socket.write.timeout
   * and 5 s per target; 0: none) fails: this node's acks upstream carry ERROR in its place and the
   * write ends, so the client drops the downstream. Without the first the client's own ack timeout
   * (5 s per DataNode of the whole pipeline) came first and dropped the first DataNode, whoever was
   * silent; without the second a downstream that took nothing but acked a packet now and then
   * held the write, and the upstream's window, for as long as it had packets to ack.
   */
  void checkDownstreamTimeouts(long now, long packetTimeoutNs, long writeTimeoutNs) {
    DownstreamMirror d = mirror;
    if (!ready || d == null) {
      return;
    }
    long timeoutNs = packetTimeoutNs
        + org.apache.hadoop.hdfs.protocol.HdfsConstants.READ_TIMEOUT_EXTENSION * 1_000_000L * setup.downstream;
    long silentNs = responder.downstreamSilentNanos(now);
    if (silentNs > timeoutNs) {
      d.failed("no ack from " + d.name() + " for " + TimeUnit.NANOSECONDS.toMillis(silentNs) + " ms ("
          + DataNodeLimits.PACKET_TIMEOUT_KEY + " and 5 s per DataNode downstream: "
          + TimeUnit.NANOSECONDS.toMillis(timeoutNs) + " ms)");
      return;
    }
    if (writeTimeoutNs <= 0 || responder.ended() || responder.downstreamFailure() != null) {
      return;
    }
    long writeNs = writeTimeoutNs
        + org.apache.hadoop.hdfs.protocol.HdfsConstants.WRITE_TIMEOUT_EXTENSION * 1_000_000L * setup.downstream;
    long stalledNs = d.sendStallNanos(now);
    if (stalledNs > writeNs) {
      d.failed(d.name() + " took none of what it was sent for " + TimeUnit.NANOSECONDS.toMillis(stalledNs)
          + " ms (" + DataNodeLimits.WRITE_TIMEOUT_KEY + " and 5 s per DataNode downstream: "
          + TimeUnit.NANOSECONDS.toMillis(writeNs) + " ms)");
    }
  }

  /**
   * {@code dfsadmin -evictWriters}: as stock's DataXceiver#stopWriter interrupting the xceiver
   * of a write, the write stops, its connection closes (the client, or the DataNode upstream,
   * sees this node fail and the client recovers its pipeline without it) and the replica stays
   * RBW. The connection is closed whole, as on a packet timeout: every write on it is being
   * evicted too, and reads on it are retried by the client.
   *
   * @return false when the write had ended already
   */
  boolean evict() {
    synchronized (lock) {
      if (aborted || finished) {
        return false;
      }
    }
    LOG.info("hrdma datanode: evicting the write of {} from {} (evictWriters)",
        setup.block == null ? "request " + id : setup.block, up.remoteAddress());
    abort();
    up.close();
    return true;
  }

  /**
   * The DataNode shuts down for an upgrade ({@code dfsadmin -shutdownDatanode <dn> upgrade}), as
   * stock's BlockReceiver does then for a client's write in progress: an OOB_RESTART ack goes
   * upstream at once (when upstream takes them), the write stops, and the replica is left RBW
   * with a restart marker valid until {@code markerUntilMs} (wall clock), so that the DataNode,
   * started again, loads it as RBW and the client's recovery can keep this node. Writes from a
   * DataNode (replication, a copy for a pipeline) are left to end as on any stop, as stock's.
   *
   * @return false when the write was not one to restart (ended, not set up, not a client's)
   */
  boolean restartForUpgrade(long markerUntilMs) {
    synchronized (lock) {
      if (aborted || finished || !ready || !setup.fromClient || responder.ended()) {
        return false;
      }
      restartMarkerUntil = markerUntilMs;
      aborted = true;
    }
    responder.restarting();
    schedule();
    return true;
  }

  /** Waits up to {@code timeoutMs} for this write to be cleaned up (its restart marker written, its files closed). */
  boolean awaitCleanedUp(long timeoutMs) throws InterruptedException {
    return cleanedUp.await(timeoutMs, TimeUnit.MILLISECONDS);
  }

  /**
   * Stops this write for a pipeline recovery of the same block (stock:
   * ReplicaInPipeline#stopWriter): no more packets are processed and the replica's streams are
   * closed, here when no executor thread runs the task, else by that thread, which this call
   * waits for.
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

  /**
   * Records a thread standing for this write as the replica's writer, in place of the set-up
   * thread the dataset recorded (set-up executor, after createRbw or recoverRbw): a block
   * recovery of the replica then stops this write ({@link ReplicaWriterThread}).
   *
   * @throws IOException a recovery took the replica over meanwhile: the write does not start
   */
  void registerWriter(RbwReplica replica) throws IOException {
    ReplicaWriterThread w = new ReplicaWriterThread(this, "hrdma-writer-" + setup.block);
    w.start();
    // false only where the dataset records no writer (SimulatedFSDataset: its recoveries stop none)
    boolean mine = replica.handOverWriter(w);
    // a recovery that came between the dataset's recording this thread and now interrupted it
    // (and waits for it in vain: it is a pooled thread): the replica is the recovery's
    boolean interrupted = Thread.interrupted();
    if (!mine || interrupted) {
      if (mine) {
        replica.releaseWriter(w);
      }
      w.release();
      if (interrupted) {
        throw new IOException("a block recovery took over " + setup.block + " while its write was being set up");
      }
      return;
    }
    writerThread = w;
  }

  /**
   * A block recovery stops this write (the replica's writer thread was interrupted, as stock's
   * xceiver is by {@code ReplicaInPipeline#stopWriter}): no ack goes upstream from now; a write
   * still going gets an ERROR for its request id (the client, or the DataNode upstream, sees
   * this node fail the write, as stock's upstream sees the interrupted xceiver's socket close,
   * while the other writes and reads sharing the connection go on; the client's pipeline
   * recovery then asks the NameNode, which refuses it when the lease was recovered); no packet
   * is written after the one in flight; and this returns once the replica's files are closed:
   * the caller's thread ending is what tells the recovery the replica is quiescent. Waits
   * without a bound, as a writer stuck in a disk write does: the recovery's own timeout
   * ({@code dfs.datanode.xceiver.stop.timeout.millis}) fails that recovery meanwhile.
   */
  void stopForRecovery() {
    boolean live = !responder.ended();
    responder.stop();
    synchronized (lock) {
      live &= !aborted && !finished;
      aborted = true; // no packet is taken from the queue from now
    }
    LOG.info("hrdma datanode: a block recovery stops the {}write of {} from {}", live ? "" : "ending ",
        setup.block, up.remoteAddress());
    if (live) {
      // a write that ended (done, failed, replaced by a pipeline recovery) told its upstream already
      Replies.error(up, id, Status.ERROR, "DataNode " + dn.datanodeUuid() + " stopped the write of "
          + setup.block + ": the block is being recovered");
    }
    while (true) {
      Thread.interrupted(); // another recovery attempt asking again: this one is stopping already
      if (stop(ctx.setupTimeoutMs())) {
        break;
      }
      LOG.warn("hrdma datanode: the write of {} has not stopped yet for a block recovery (a disk write in"
          + " flight?)", setup.block);
    }
    while (true) {
      try {
        cleanedUp.await();
        return;
      } catch (InterruptedException e) {
        // as above
      }
    }
  }

  private void failUnlocked(String why) {
    LOG.warn("hrdma datanode: write {} from {} aborted: {}", setup.block == null ? "request " + id : setup.block,
        up.remoteAddress(), why);
    aborted = true;
  }

  @Override
  public void onDownstreamAck(PipelineAckProto ack) {
    // the ack goes upstream from this thread; the executor is woken only to finalize the replica
    // or clean up an ended write, not for every packet's ack. An ack is progress (as stock's
    // PacketResponder counts it): after the client's last packet no packet or heartbeat comes,
    // and a slow but acking downstream must not make this write time out
    lastPacketNanos = System.nanoTime();
    if (responder.downstreamAck(ack)) {
      schedule();
    }
  }

  /**
   * The downstream closed its connection. As stock's PacketResponder on an EOF from downstream:
   * when this node had sent it nothing for 0.9 of the packet timeout (no packet, no heartbeat:
   * the downstream timed out waiting, so the delay is upstream's, this node's included), the
   * error goes up by closing the upstream connection and the client takes the first node as bad;
   * otherwise the downstream is the bad one (an ERROR in its place).
   */
  @Override
  public void onDownstreamClosed(String why) {
    long idleNs = System.nanoTime() - lastSentNanos;
    if (ready && !responder.ended() && !abandoned() && idleNs > ctx.limits().packetTimeoutMs() * 900_000L) {
      LOG.warn("hrdma datanode: downstream {} of {} closed ({}) after this node sent it nothing for {} ms: the"
          + " delay may be upstream's, this node's included; closing the upstream connection", setup.mirrorName,
          setup.block, why, TimeUnit.NANOSECONDS.toMillis(idleNs));
      abort();
      up.close();
      return;
    }
    onDownstreamFailed(why);
  }

  @Override
  public void onDownstreamFailed(String why) {
    if (responder.downstreamFailed(why)) {
      if (ready && !responder.ended()) {
        LOG.warn("hrdma datanode: downstream {} of {} failed: {}", setup.mirrorName, setup.block, why);
      }
      schedule();
    }
  }

  /**
   * An ack upstream, between stock's PacketResponder hooks: an injected failure before it is
   * sent fails the write as a failed responder does stock's (the connection closes, the client
   * recovers its pipeline). The replica's bytes acked are recorded in stock's place, between
   * {@code failPipeline} (which sees the previous ack's, as stock's) and the ack's delay hook.
   */
  private void ackUp(PipelineAckProto ack, Runnable recordAcked) {
    long begin = System.nanoTime();
    try {
      FaultHooks.failPipeline(setup.replica, setup.mirrorName);
      recordAcked.run();
      FaultHooks.delaySendingAckToUpstream(String.valueOf(up.remoteAddress()));
    } catch (IOException e) {
      LOG.warn("hrdma datanode: ack of {} seqno {} to {} failed: {}", setup.block, ack.getSeqno(),
          up.remoteAddress(), e.toString());
      abort();
      up.close();
      return;
    }
    sendUp(MessageKind.PIPELINE_ACK, ack);
    try {
      FaultHooks.logDelaySendingAckToUpstream(setup.mirrorName, TimeUnit.NANOSECONDS.toMillis(System.nanoTime()
          - begin));
    } catch (IOException e) {
      LOG.warn("hrdma datanode: after the ack of {} seqno {}: {}", setup.block, ack.getSeqno(), e.toString());
    }
  }

  /** Sends {@code kind} upstream; never blocks. A failure closes the connection. */
  void sendUp(MessageKind kind, org.apache.hadoop.thirdparty.protobuf.MessageLite header) {
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
      ExecutorService v = volumeExecutor;
      (v != null ? v : ctx.writeExecutor()).execute(this::run);
    } catch (RejectedExecutionException e) {
      synchronized (lock) {
        scheduled = false;
        aborted = true;
      }
      if (!setupDone) {
        // as stock's DataXceiverServer over dfs.datanode.max.transfer.threads: this node refuses,
        // named as the bad link so that the client builds its pipeline without it
        sendUp(MessageKind.WRITE_RESPONSE, BlockOps.writeResponse(Status.ERROR, selfAddress(), "DataNode "
            + dn.datanodeUuid() + " is stopping or has " + HrdmaDataNodeKeys.WRITE_MAX_SETUPS_KEY
            + " write set-ups in progress; write not served"));
      }
      // no executor thread will come: clean up on another thread (closing the replica's files
      // touches its volume; this may be an I/O thread); nothing else runs on this task
      java.util.concurrent.CompletableFuture.runAsync(this::cleanup);
    }
  }

  /** This DataNode's xfer address in the request's block pool, or "" when it has none. */
  private String selfAddress() {
    try {
      return dn.registeredXferAddr(BlockOps.block(request.writeRequest()).getBlockPoolId());
    } catch (IOException | RuntimeException e) {
      return "";
    }
  }

  /** Upstream went away, the write timed out or the plugin is stopping (the set-up stops early). */
  boolean abandoned() {
    synchronized (lock) {
      return aborted;
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
        } else if (!setup.run()) {
          synchronized (lock) {
            aborted = true;
          }
        } else {
          mirror = setup.mirror;
          if (setup.stage == BlockConstructionStage.PIPELINE_CLOSE_RECOVERY) {
            synchronized (lock) {
              aborted = true; // the replica is finalized: no packets follow, nothing to ack
            }
          } else {
            verifies = mirror == null || !setup.fromClient;
            responder.pipeline(String.valueOf(setup.block), setup.replica, mirror != null, verifies,
                setup.oobAcks);
            String bpid = setup.block.getBlockPoolId();
            responder.slowNodes(setup.mirrorName, () -> dn.slowState(bpid));
            responder.congestion(dn::ecnState);
            volumeExecutor = ctx.volumeWriteExecutor(setup.replica.storageUuid());
            lastPacketNanos = System.nanoTime();
            lastSentNanos = lastPacketNanos;
            synchronized (lock) {
              ready = true;
            }
          }
          // this node takes heartbeats; the client sends them if every node downstream does too
          sendUp(MessageKind.WRITE_RESPONSE, BlockOps.writeResponseOk(setup.downstreamHeartbeats));
          setup.mapSegmentLater(ctx.writeExecutor());
          try {
            FaultHooks.writeBlockAfterFlush(); // stock's hook once the connect ack is out
          } catch (IOException e) {
            // as stock's writeBlock ending on it: the write stops, the connection closes
            synchronized (lock) {
              failUnlocked(e.toString());
            }
            up.close();
          }
          if (volumeExecutor != null) {
            synchronized (lock) {
              scheduled = false;
            }
            schedule(); // on to the volume's threads: everything from here touches its disk
            return;
          }
        }
      }
      boolean abortedNow;
      synchronized (lock) {
        abortedNow = aborted;
      }
      if (receiver == null && volumeExecutor != null && !abortedNow) {
        setup.openDisk();
        receiver = new PacketReceiver(setup.block, setup.replica, setup.disk, setup.checksum,
            setup.startOffset, dn.syncOnClose(), ctx.limits().maxPacketBytes(), responder,
            String.valueOf(up.remoteAddress()), verifies);
      }
      while (true) {
        if (responder.finalizeDue()) {
          responder.finalized(finalizeReplica());
          continue;
        }
        Message m;
        synchronized (lock) {
          if (aborted || responder.ended()) {
            break;
          }
          if (responder.finalizeDue()) {
            continue; // the downstream's last ack came in meanwhile
          }
          m = packets.poll();
          if (m == null) {
            scheduled = false;
            lastPacketNanos = System.nanoTime(); // idle from now: the peer's turn
            return;
          }
        }
        try {
          receiver.receive(m);
        } finally {
          m.release();
        }
      }
    } catch (RuntimeException | Error e) {
      LOG.error("hrdma datanode: write of {} failed unexpectedly", setup.block, e);
      synchronized (lock) {
        aborted = true;
      }
    }
    cleanup();
  }

  /**
   * Every node has the last packet: the replica becomes FINALIZED and the NameNode is told
   * (stock PacketResponder#finalizeBlock), on this executor thread. False when that failed
   * (the last ack then carries ERROR).
   */
  private boolean finalizeReplica() {
    ExtendedBlock fin = new ExtendedBlock(setup.block);
    try {
      fin.setNumBytes(setup.replica.numBytes());
      dn.finalizeBlock(fin, dn.syncOnClose());
      dn.blockReceived(fin, setup.replica.storageUuid(), setup.replica.onTransientStorage());
      LOG.info("hrdma datanode: received {} of {} bytes from {}", fin, fin.getNumBytes(), up.remoteAddress());
      dn.lastPacketFinalized();
      finalizedHere = true;
      return true;
    } catch (IOException | RuntimeException e) {
      LOG.warn("hrdma datanode: finalizing {} failed: {}", fin, e.toString());
      return false;
    }
  }

  /** Once: closes the streams (the replica stays RBW unless finalized), the downstream, the queue. */
  private void cleanup() {
    List<Message> left;
    long markerUntil;
    synchronized (lock) {
      if (finished) {
        return;
      }
      markerUntil = restartMarkerUntil;
      finished = true;
      scheduled = false;
      left = new ArrayList<>(packets);
      packets.clear();
      lock.notifyAll(); // stop() waits for this
    }
    for (Message m : left) {
      m.release();
    }
    DownstreamMirror d = setup.mirror;
    if (d != null) {
      d.close(finalizedHere); // finalized: the downstream acked the last packet, its connection may serve another write
    }
    if (setup.disk != null) {
      setup.disk.close(); // hrdma disk
    }
    if (markerUntil > 0 && setup.replica != null && !finalizedHere) {
      // every packet written here went to the file already (each is flushed to the OS)
      try {
        setup.replica.writeRestartMarker(markerUntil);
        LOG.info("hrdma datanode: left {} RBW with a restart marker for the upgrade", setup.block);
      } catch (IOException e) {
        // as stock: the worst case is that the replica comes back RWR and the client recovers without it
        LOG.warn("hrdma datanode: cannot write the restart marker of {}: {}", setup.block, e.toString());
      }
    }
    if (setup.replica != null) {
      try {
        setup.replica.close();
      } catch (IOException e) {
        LOG.warn("hrdma datanode: closing {} failed: {}", setup.block, e.toString());
      }
    }
    ReplicaWriterThread w = writerThread;
    if (w != null) {
      setup.replica.releaseWriter(w);
      w.release();
    }
    if (setup.registered) {
      ctx.writers().release(setup.block, this);
    }
    request.release();
    conn.writeDone(this);
    cleanedUp.countDown();
  }
}
