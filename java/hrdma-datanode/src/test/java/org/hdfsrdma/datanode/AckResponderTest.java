package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hdfs.protocol.datatransfer.PipelineAck;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PipelineAckProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.server.datanode.DataNodeFaultInjector;
import org.hdfsrdma.protocol.BlockOps;
import org.junit.jupiter.api.Test;

/**
 * The out-of-band acks of a write (stock PacketResponder#sendOOBResponse and its relaying in
 * PacketResponder#run): what goes upstream, in which order, and only to an upstream that takes them.
 */
class AckResponderTest {
  private final List<PipelineAckProto> acks = new ArrayList<>();   // through the responder's hooks
  private final List<PipelineAckProto> oobAcks = new ArrayList<>(); // past them
  private final AckResponder r = new AckResponder(acks::add, oobAcks::add);

  private static String show(PipelineAckProto a) {
    return a.getSeqno() + BlockOps.ackStatuses(a).toString();
  }

  private List<String> shown(List<PipelineAckProto> l) {
    return l.stream().map(AckResponderTest::show).toList();
  }

  /** The downstream's ack of a packet this node forwarded to it. */
  private boolean down(PipelineAckProto ack) {
    r.forwarded();
    return r.downstreamAck(ack);
  }

  @Test
  void aDownstreamAckingMoreThanWasForwardedFailsTheWriteAndQueuesNothing() {
    // a downstream (a client may name any host as a target, and under dfs.data.transfer.protection
    // it can answer the handshake with the write's own token) sends acks for packets never sent it
    r.pipeline("blk", null, true, true, true);
    r.forwarded();
    r.processed(0, 512, Status.SUCCESS, false);
    assertFalse(r.downstreamAck(BlockOps.pipelineAck(0, List.of(Status.SUCCESS))));
    assertEquals(List.of("0[SUCCESS, SUCCESS]"), shown(acks));
    for (int i = 1; i <= 100_000; i++) {
      r.downstreamAck(BlockOps.pipelineAck(i, List.of(Status.SUCCESS)));
    }
    assertEquals(0, r.queuedDownstreamAcks(), "acks for nothing are not kept");
    assertTrue(r.downstreamFailure() != null && r.downstreamFailure().contains("acked"), r.downstreamFailure());
    r.forwarded();
    r.processed(1, 1024, Status.SUCCESS, false);
    assertEquals(List.of("0[SUCCESS, SUCCESS]", "1[SUCCESS, ERROR]"), shown(acks), "the downstream named as failed");
    assertTrue(r.ended());
  }

  @Test
  void aRestartSendsOneOobRestartAckInPlaceOfTheAcksStillOwed() {
    r.pipeline("blk", null, false, true, true);
    r.processed(0, 512, Status.SUCCESS, false);
    assertTrue(r.restarting());
    r.processed(1, 1024, Status.SUCCESS, false);
    assertFalse(r.restarting(), "a second time");
    assertEquals(List.of("0[SUCCESS]"), shown(acks));
    assertEquals(List.of("-2[OOB_RESTART]"), shown(oobAcks));
    assertTrue(r.ended());
  }

  @Test
  void anUpstreamThatTakesNoOobAcksIsSentNone() {
    r.pipeline("blk", null, false, true, false);
    assertFalse(r.restarting());
    r.processed(0, 512, Status.SUCCESS, false);
    assertEquals(List.of("0[SUCCESS]"), shown(acks));
    assertEquals(List.of(), oobAcks);
  }

  @Test
  void theDownstreamsOobIsRelayedAtOnceWithThisNodesSuccessFirst() {
    r.pipeline("blk", null, true, true, true);
    r.processed(0, 512, Status.SUCCESS, false);
    r.downstreamAck(BlockOps.oobRestartAck());
    assertEquals(List.of("-2[SUCCESS, OOB_RESTART]"), shown(oobAcks));
    assertEquals(List.of(), acks, "packet 0 still waits for the downstream's ack");
    down(BlockOps.pipelineAck(0, List.of(Status.SUCCESS)));
    assertEquals(List.of("0[SUCCESS, SUCCESS]"), shown(acks));
    assertEquals(null, r.downstreamFailure());
  }

  @Test
  void theDownstreamsOobIsNotRelayedToAnUpstreamThatTakesNone() {
    r.pipeline("blk", null, true, true, false);
    r.processed(0, 512, Status.SUCCESS, false);
    r.downstreamAck(BlockOps.oobRestartAck());
    down(BlockOps.pipelineAck(0, List.of(Status.SUCCESS)));
    assertEquals(List.of(), oobAcks);
    // not taken for an ack out of order: the packet's own ack pairs with its own
    assertEquals(List.of("0[SUCCESS, SUCCESS]"), shown(acks));
  }

  @Test
  void aStopForABlockRecoverySendsNoAckAfterItNotEvenTheLastOnesOrFinalizes() {
    r.pipeline("blk", null, true, true, true);
    r.processed(0, 512, Status.SUCCESS, false);
    r.processed(1, 700, Status.SUCCESS, true);
    down(BlockOps.pipelineAck(0, List.of(Status.SUCCESS)));
    assertEquals(List.of("0[SUCCESS, SUCCESS]"), shown(acks));
    down(BlockOps.pipelineAck(1, List.of(Status.SUCCESS)));
    assertTrue(r.finalizeDue(), "the last packet acked downstream: finalizing is due");
    r.stop();
    assertFalse(r.finalizeDue(), "a stopped write finalizes nothing");
    r.finalized(true);
    r.processed(2, 900, Status.SUCCESS, false);
    down(BlockOps.pipelineAck(2, List.of(Status.SUCCESS)));
    assertEquals(List.of("0[SUCCESS, SUCCESS]"), shown(acks), "acks after the stop");
    assertTrue(r.ended());
  }

  @Test
  void anAckGoesUpOnlyOnceThisNodesWriteAndTheDownstreamsAckAreBothIn() {
    r.pipeline("blk", null, true, true, true);
    // the downstream may ack before this node's disk write has ended: the ack waits for it
    assertFalse(down(BlockOps.pipelineAck(0, List.of(Status.SUCCESS))), "nothing for the executor");
    assertEquals(List.of(), acks, "packet 0 is not written here yet");
    r.processed(0, 512, Status.SUCCESS, false);
    assertEquals(List.of("0[SUCCESS, SUCCESS]"), shown(acks));
    // and the other way round: written here, the ack waits for the downstream's
    r.processed(1, 1024, Status.SUCCESS, false);
    assertEquals(1, acks.size(), "packet 1 is not acked downstream yet");
    assertFalse(down(BlockOps.pipelineAck(1, List.of(Status.SUCCESS))), "relayed on this thread");
    assertEquals(List.of("0[SUCCESS, SUCCESS]", "1[SUCCESS, SUCCESS]"), shown(acks));
    // the last packet: its downstream ack wakes the executor to finalize, and its ack waits for that
    r.processed(2, 1500, Status.SUCCESS, true);
    assertTrue(down(BlockOps.pipelineAck(2, List.of(Status.SUCCESS))), "finalizing is the executor's");
    assertTrue(r.finalizeDue());
    assertEquals(2, acks.size(), "the last ack waits for the replica to be finalized");
    r.finalized(true);
    assertEquals(List.of("0[SUCCESS, SUCCESS]", "1[SUCCESS, SUCCESS]", "2[SUCCESS, SUCCESS]"), shown(acks));
    assertTrue(r.ended());
  }

  @Test
  void aDownstreamErrorEndsTheWriteAndWakesTheExecutorToCleanUp() {
    r.pipeline("blk", null, true, true, true);
    r.processed(0, 512, Status.SUCCESS, false);
    assertTrue(down(BlockOps.pipelineAck(0, List.of(Status.ERROR))));
    assertEquals(List.of("0[SUCCESS, ERROR]"), shown(acks));
    assertTrue(r.ended());
  }

  private static String slow(PipelineAckProto a) {
    List<String> out = new ArrayList<>();
    for (int h : BlockOps.ackHeaders(a)) {
      out.add(PipelineAck.getStatusFromHeader(h) + "/" + PipelineAck.getSLOWFromHeader(h));
    }
    return a.getSeqno() + out.toString();
  }

  @Test
  void ackHeadersCarryThisNodesSlowStateRelayTheDownstreamsAndGoPastMarkSlow() {
    // stock PacketResponder#sendAckUpstreamUnprotected: this node's header with its SLOW state,
    // the downstream's as they came, markSlow(mirror, replies) over them; on a mirror error the
    // ERROR carries this node's SLOW state and no markSlow
    List<String> seen = new ArrayList<>();
    DataNodeFaultInjector old = DataNodeFaultInjector.get();
    DataNodeFaultInjector.set(new DataNodeFaultInjector() {
      @Override
      public void markSlow(String mirrorAddr, int[] replies) {
        seen.add(mirrorAddr + " " + replies.length);
      }
    });
    try {
      r.pipeline("blk", null, true, true, true);
      r.slowNodes("10.0.0.2:9866", () -> PipelineAck.SLOW.SLOW);
      r.forwarded();
      r.processed(0, 512, Status.SUCCESS, false);
      r.downstreamAck(BlockOps.pipelineAck(0, new int[] {
          BlockOps.ackHeader(Status.SUCCESS, PipelineAck.SLOW.NORMAL),
          BlockOps.ackHeader(Status.SUCCESS, PipelineAck.SLOW.SLOW)}));
      assertEquals(List.of("0[SUCCESS/SLOW, SUCCESS/NORMAL, SUCCESS/SLOW]"),
          acks.stream().map(AckResponderTest::slow).toList());
      assertEquals(List.of("10.0.0.2:9866 3"), seen);
      r.forwarded();
      r.downstreamFailed("gone");
      r.processed(1, 1024, Status.SUCCESS, false);
      assertEquals("1[SUCCESS/SLOW, ERROR/SLOW]", slow(acks.get(1)));
      assertEquals(List.of("10.0.0.2:9866 3"), seen, "no markSlow on a mirror error");
    } finally {
      DataNodeFaultInjector.set(old);
    }
  }

  private static String ecn(PipelineAckProto a) {
    List<String> out = new ArrayList<>();
    for (int h : BlockOps.ackHeaders(a)) {
      out.add(PipelineAck.getStatusFromHeader(h) + "/" + PipelineAck.getECNFromHeader(h) + "/"
          + PipelineAck.getSLOWFromHeader(h));
    }
    return a.getSeqno() + out.toString();
  }

  @Test
  void ackHeadersCarryThisNodesEcnStateAndRelayTheDownstreams() {
    // stock PacketResponder: this node's header combines DataNode#getECN() (read for every ack),
    // the downstream's headers go up as they came; a mirror error's ERROR carries this node's ECN
    PipelineAck.ECN[] now = {PipelineAck.ECN.CONGESTED};
    r.pipeline("blk", null, true, true, true);
    r.slowNodes("10.0.0.2:9866", () -> PipelineAck.SLOW.NORMAL);
    r.congestion(() -> now[0]);
    r.forwarded();
    r.processed(0, 512, Status.SUCCESS, false);
    r.downstreamAck(BlockOps.pipelineAck(0, new int[] {
        BlockOps.ackHeader(Status.SUCCESS, PipelineAck.ECN.SUPPORTED, PipelineAck.SLOW.NORMAL),
        BlockOps.ackHeader(Status.SUCCESS, PipelineAck.ECN.CONGESTED, PipelineAck.SLOW.DISABLED)}));
    assertEquals("0[SUCCESS/CONGESTED/NORMAL, SUCCESS/SUPPORTED/NORMAL, SUCCESS/CONGESTED/DISABLED]",
        ecn(acks.get(0)));
    now[0] = PipelineAck.ECN.SUPPORTED;
    r.forwarded();
    r.processed(1, 1024, Status.SUCCESS, false);
    r.downstreamAck(BlockOps.pipelineAck(1, new int[] {
        BlockOps.ackHeader(Status.SUCCESS, PipelineAck.ECN.DISABLED, PipelineAck.SLOW.NORMAL),
        BlockOps.ackHeader(Status.SUCCESS, PipelineAck.ECN.CONGESTED, PipelineAck.SLOW.NORMAL)}));
    assertEquals("1[SUCCESS/SUPPORTED/NORMAL, SUCCESS/DISABLED/NORMAL, SUCCESS/CONGESTED/NORMAL]",
        ecn(acks.get(1)));
    now[0] = PipelineAck.ECN.CONGESTED;
    r.forwarded();
    r.downstreamFailed("gone");
    r.processed(2, 1536, Status.SUCCESS, false);
    assertEquals("2[SUCCESS/CONGESTED/NORMAL, ERROR/CONGESTED/NORMAL]", ecn(acks.get(2)));
  }

  @Test
  void withoutAnEcnStateTheAcksSayDisabled() {
    r.pipeline("blk", null, false, true, true);
    r.processed(0, 512, Status.SUCCESS, false);
    assertEquals("0[SUCCESS/DISABLED/DISABLED]", ecn(acks.get(0)));
  }
}
