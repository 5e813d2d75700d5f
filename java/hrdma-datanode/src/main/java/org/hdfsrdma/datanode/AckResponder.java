package org.hdfsrdma.datanode;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.apache.hadoop.hdfs.protocol.datatransfer.PipelineAck;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PipelineAckProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.hdfsrdma.datanode.compat.FaultHooks;
import org.hdfsrdma.datanode.compat.RbwReplica;
import org.hdfsrdma.protocol.BlockOps;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A write's acks upstream (stock: BlockReceiver.PacketResponder). An ack goes up when both
 * this node's result for a packet ({@link #processed}) and the downstream's ack for its seqno
 * are in: statuses are this node's, then the downstream's, in pipeline order; acks leave in
 * seqno order. The last packet's ack waits, as stock's, for the replica to be finalized and
 * the NameNode told ({@link #finalizeDue}, {@link #finalized}), which happens only once the
 * downstream has acked it (or failed: this node's replica is whole all the same, as stock),
 * on the write executor, never on an I/O thread.
 *
 * <p>Thread-safe: called from the write executor and the downstream's I/O thread; never
 * blocks (sends are queued by the transport), and calls nothing that takes another lock.
 */
final class AckResponder {
  private static final Logger LOG = LoggerFactory.getLogger(AckResponder.class);

  /** Sends an ack upstream; never blocks. */
  interface Upstream {
    void ack(PipelineAckProto ack);

    /**
     * Sends {@code ack}, running {@code recordAcked} (the replica's bytes acked) once nothing
     * can fail it any more: stock's responder records them after its fault hook
     * {@code failPipeline} and before {@code delaySendingAckToUpstream} and the write.
     */
    default void ack(PipelineAckProto ack, Runnable recordAcked) {
      recordAcked.run();
      ack(ack);
    }
  }

  private static final Runnable NOTHING_ACKED = () -> { };

  /** A packet processed here, waiting for its downstream ack, then (the last) for finalizing. */
  private static final class Pending {
    final long seqno;
    final long end;
    final boolean last;
    List<Status> statuses; // set once the downstream's part is in
    int[] downHeaders; // the downstream's ack headers as they came (null: no mirror, or it failed)
    boolean finalizeTried;

    final Status local;
    final boolean heartbeat;

    Pending(long seqno, long end, Status local, boolean last, boolean heartbeat) {
      this.seqno = seqno;
      this.end = end;
      this.local = local;
      this.last = last;
      this.heartbeat = heartbeat;
    }
  }

  private final Upstream upstream;
  private final Upstream oobUpstream;
  private String mirrorName; // the next DataNode's xfer address (stock's mirrorAddr), null on the last
  private Supplier<PipelineAck.SLOW> ownSlow = () -> PipelineAck.SLOW.DISABLED;
  private Supplier<PipelineAck.ECN> ownEcn = () -> PipelineAck.ECN.DISABLED;
  private boolean oobAcks; // upstream takes out-of-band acks (BlockOps#OOB_ACKS_FIELD)
  private String what = "a block";
  private final ArrayDeque<Pending> unacked = new ArrayDeque<>();
  private final ArrayDeque<PipelineAckProto> downAcks = new ArrayDeque<>();
  private volatile RbwReplica replica;
  private boolean mirrored;
  private boolean verifies = true;
  private String downFailure;
  private boolean finalizeDue;
  private boolean ended;
  private long forwarded;     // packets (heartbeats included) sent downstream
  private long downstreamAcks; // acks of packets the downstream sent, out-of-band ones not counted
  // nanoTime of the downstream's last ack, or of the packet it began to owe one for when it owed none
  private long owedSinceNanos;

  /** {@code oobUpstream}: how an out-of-band ack goes up (stock sends them past the responder's fault hooks). */
  AckResponder(Upstream upstream, Upstream oobUpstream) {
    this.upstream = upstream;
    this.oobUpstream = oobUpstream;
  }

  /** Set once the pipeline is up: the replica whose acked length moves, and whether a mirror acks too. */
  synchronized void pipeline(String what, RbwReplica replica, boolean mirrored, boolean verifies,
      boolean oobAcks) {
    this.oobAcks = oobAcks;
    this.what = what;
    this.replica = replica;
    this.mirrored = mirrored;
    this.verifies = verifies;
  }

  /**
   * Set with {@link #pipeline}: the next DataNode's xfer address (null: none), which stock's
   * {@code markSlow} hook is told, and this DataNode's SLOW state, read for every ack as stock's
   * PacketResponder reads it (DataNode#getSLOWByBlockPoolId).
   */
  synchronized void slowNodes(String mirrorName, Supplier<PipelineAck.SLOW> ownSlow) {
    this.mirrorName = mirrorName;
    this.ownSlow = ownSlow;
  }

  /**
   * This DataNode's ECN state, read for every ack's own header as stock's PacketResponder reads
   * it (DataNode#getECN: DISABLED unless {@code dfs.pipeline.ecn} is on, then CONGESTED when the
   * load average is over {@code dfs.pipeline.congestion.ratio} times the processors, else
   * SUPPORTED). Unset: DISABLED, as before.
   */
  synchronized void congestion(Supplier<PipelineAck.ECN> ownEcn) {
    this.ownEcn = ownEcn;
  }

  /** This node's result for a packet (write executor). */
  synchronized void processed(long seqno, long end, Status local, boolean last) {
    unacked.add(new Pending(seqno, end, local, last, false));
    sendLocked();
  }

  /** A heartbeat processed here (write executor): acked in its turn, the acked length unchanged. */
  synchronized void processedHeartbeat(Status local) {
    unacked.add(new Pending(BlockOps.HEARTBEAT_SEQNO, -1, local, false, true));
    sendLocked();
  }

  /**
   * This DataNode shuts down for an upgrade (stock PacketResponder#sendOOBResponse): an
   * OOB_RESTART ack goes up now, in place of the acks still owed, and this write acks nothing
   * more. False (nothing sent) when the write had ended or upstream does not take OOB acks.
   */
  synchronized boolean restarting() {
    if (ended || !oobAcks) {
      return false;
    }
    ended = true;
    LOG.info("hrdma datanode: sending an out of band ack of type {} for {}", Status.OOB_RESTART, what);
    // stock: one header, this node's, with its ECN and SLOW states; no markSlow (sendAckUpstreamUnprotected, ack null)
    oobUpstream.ack(BlockOps.pipelineAck(BlockOps.OOB_SEQNO,
        new int[] {BlockOps.ackHeader(Status.OOB_RESTART, ownEcn.get(), ownSlow.get())}));
    return true;
  }

  /**
   * A block recovery stops the write (stock interrupts the PacketResponder with its writer): no
   * ack goes up from now, the last packet's included, and a finalization not begun is not.
   */
  synchronized void stop() {
    ended = true;
    finalizeDue = false;
  }

  /**
   * The downstream's ack (its I/O thread): the ack it completes goes upstream from here. True
   * when the write executor has work because of it: the replica is to be finalized
   * ({@link #finalizeDue}) or the write ended (an error ack went up); false for the acks of the
   * packets in between, so that relaying them wakes no other thread.
   */
  synchronized boolean downstreamAck(PipelineAckProto ack) {
    if (BlockOps.oobIndex(ack) >= 0) {
      // stock (PacketResponder#run): relayed at once, this node's SUCCESS first, out of the seqno
      // order (it acknowledges no packet); the write goes on until the downstream goes away. An
      // upstream that does not take them gets none: it sees the downstream fail as before
      if (oobAcks && !ended) {
        // stock relays it through sendAckUpstreamUnprotected: this node's header, then the
        // downstream's as they came, past markSlow
        int[] down = BlockOps.ackHeaders(ack);
        int[] replies = new int[down.length + 1];
        replies[0] = BlockOps.ackHeader(Status.SUCCESS, ownEcn.get(), ownSlow.get());
        System.arraycopy(down, 0, replies, 1, down.length);
        FaultHooks.markSlow(mirrorName, replies);
        LOG.info("hrdma datanode: relaying an out of band ack {} for {}", statuses(replies), what);
        oobUpstream.ack(BlockOps.pipelineAck(BlockOps.OOB_SEQNO, replies));
      }
      return ended;
    }
    if (ended) {
      return true; // nothing will take it: the write ended
    }
    owedSinceNanos = System.nanoTime(); // progress, as stock's PacketResponder reading an ack
    if (++downstreamAcks > forwarded) {
      // an ack for a packet never sent it: kept, such acks would pile up without bound (stock's
      // PacketResponder reads one ack per packet it waits for, and fails on one out of order)
      if (downFailure == null) {
        downFailure = "the downstream acked " + downstreamAcks + " packets; " + forwarded + " were sent to it";
        LOG.warn("hrdma datanode: downstream of {}: {}", what, downFailure);
        sendLocked();
      }
      return true;
    }
    downAcks.add(ack);
    sendLocked();
    return finalizeDue || ended;
  }

  /** Downstream acks received and not yet paired with this node's packets (tests). */
  synchronized int queuedDownstreamAcks() {
    return downAcks.size();
  }

  /** A packet went downstream (upstream I/O thread, before it is sent): the downstream may ack one more. */
  synchronized void forwarded() {
    if (forwarded == downstreamAcks) {
      owedSinceNanos = System.nanoTime(); // it owed nothing: the wait for an ack starts now
    }
    forwarded++;
  }

  /**
   * For how long the downstream has owed acks without sending one (stock: PacketResponder's read
   * of its mirror's acks, under the mirror socket's read timeout); 0 when it owes none, failed
   * already or the write ended.
   */
  synchronized long downstreamSilentNanos(long now) {
    if (ended || downFailure != null || forwarded <= downstreamAcks) {
      return 0;
    }
    return Math.max(0, now - owedSinceNanos);
  }

  /** The downstream failed; false when it had already. */
  synchronized boolean downstreamFailed(String why) {
    if (downFailure != null) {
      return false;
    }
    downFailure = why;
    sendLocked();
    return true;
  }

  synchronized String downstreamFailure() {
    return downFailure;
  }

  /** Whether the last packet is acked by every node and waits for the replica to be finalized. */
  synchronized boolean finalizeDue() {
    return finalizeDue;
  }

  /** The replica is finalized and the NameNode told ({@code ok}), or that failed: the last ack goes. */
  synchronized void finalized(boolean ok) {
    if (!finalizeDue) {
      return;
    }
    finalizeDue = false;
    Pending p = unacked.peek();
    if (!ok) {
      p.statuses.set(0, Status.ERROR);
    }
    send(p);
    sendLocked();
  }

  /** The write ended: its last ack or an error ack went up. */
  synchronized boolean ended() {
    return ended;
  }

  private void sendLocked() {
    while (!ended && !finalizeDue && !unacked.isEmpty()) {
      Pending p = unacked.peek();
      if (p.statuses == null) {
        List<Status> statuses = new ArrayList<>(4);
        statuses.add(p.local);
        if (mirrored) {
          PipelineAckProto a = downAcks.poll();
          if (a != null) {
            if (a.getSeqno() != p.seqno) {
              downFailure = "ack for seqno " + a.getSeqno() + " while waiting for " + p.seqno;
              LOG.warn("hrdma datanode: downstream of {}: {}", what, downFailure);
              statuses.add(Status.ERROR);
            } else {
              p.downHeaders = BlockOps.ackHeaders(a);
              statuses.addAll(BlockOps.ackStatuses(a));
              if (!verifies && statuses.get(0) == Status.SUCCESS && statuses.size() > 1
                  && statuses.get(1) == Status.ERROR_CHECKSUM) {
                // stock (PacketResponder): the next node found corrupt a packet this one passed
                // on unverified; this node, not the one that checked, is to leave the pipeline:
                // its own status says so (the client takes the first failed node as the bad one)
                // and the write stops here; the recovery truncates to what every node acknowledged
                LOG.warn("hrdma datanode: the next DataNode found a packet of {} corrupt that this one passed on"
                    + " unverified (seqno {})", what, p.seqno);
                statuses.set(0, Status.ERROR);
              }
            }
          } else if (downFailure != null) {
            statuses.add(Status.ERROR);
          } else {
            return; // wait for the downstream ack
          }
        }
        p.statuses = statuses;
      }
      if (p.last && p.local == Status.SUCCESS && !p.finalizeTried) {
        // stock: once the downstream's ack is in (whatever it says), finalize this replica,
        // tell the NameNode, then ack the last packet
        p.finalizeTried = true;
        finalizeDue = true;
        return;
      }
      send(p);
    }
  }

  private void send(Pending p) {
    unacked.poll();
    int[] replies = replies(p);
    List<Status> statuses = statuses(replies);
    boolean ok = allOk(statuses);
    RbwReplica r = replica;
    Runnable record = ok && r != null && !p.heartbeat ? () -> r.setBytesAcked(p.end) : NOTHING_ACKED;
    upstream.ack(BlockOps.pipelineAck(p.seqno, replies), record);
    if (!ok) {
      LOG.warn("hrdma datanode: write of {} failed at seqno {}: acked {}", what, p.seqno, statuses);
    }
    if (!ok || p.last) {
      ended = true;
    }
  }

  /**
   * The ack's per-node headers as stock's PacketResponder#sendAckUpstreamUnprotected makes them:
   * this node's status with its ECN and SLOW states, then the downstream's headers as they came
   * (its nodes' ECN and SLOW flags relayed), and stock's {@code markSlow} hook over them; when the
   * downstream failed, its ERROR with this node's ECN and SLOW states and no hook, as stock's
   * mirror error.
   */
  private int[] replies(Pending p) {
    PipelineAck.SLOW own = ownSlow.get();
    PipelineAck.ECN ecn = ownEcn.get();
    int[] replies = new int[p.statuses.size()];
    replies[0] = BlockOps.ackHeader(p.statuses.get(0), ecn, own);
    if (p.downHeaders != null) {
      System.arraycopy(p.downHeaders, 0, replies, 1, p.downHeaders.length);
      FaultHooks.markSlow(mirrorName, replies);
    } else if (!mirrored) {
      FaultHooks.markSlow(mirrorName, replies);
    } else {
      for (int i = 1; i < replies.length; i++) {
        replies[i] = BlockOps.ackHeader(p.statuses.get(i), ecn, own);
      }
    }
    return replies;
  }

  private static List<Status> statuses(int[] headers) {
    List<Status> out = new ArrayList<>(headers.length);
    for (int h : headers) {
      out.add(BlockOps.headerStatus(h));
    }
    return out;
  }

  private static boolean allOk(List<Status> statuses) {
    return statuses.stream().allMatch(s -> s == Status.SUCCESS);
  }
}
