package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PipelineAckProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
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
    r.downstreamAck(BlockOps.pipelineAck(0, List.of(Status.SUCCESS)));
    assertEquals(List.of("0[SUCCESS, SUCCESS]"), shown(acks));
    assertEquals(null, r.downstreamFailure());
  }

  @Test
  void theDownstreamsOobIsNotRelayedToAnUpstreamThatTakesNone() {
    r.pipeline("blk", null, true, true, false);
    r.processed(0, 512, Status.SUCCESS, false);
    r.downstreamAck(BlockOps.oobRestartAck());
    r.downstreamAck(BlockOps.pipelineAck(0, List.of(Status.SUCCESS)));
    assertEquals(List.of(), oobAcks);
    // not taken for an ack out of order: the packet's own ack pairs with its own
    assertEquals(List.of("0[SUCCESS, SUCCESS]"), shown(acks));
  }

  @Test
  void aStopForABlockRecoverySendsNoAckAfterItNotEvenTheLastOnesOrFinalizes() {
    r.pipeline("blk", null, true, true, true);
    r.processed(0, 512, Status.SUCCESS, false);
    r.processed(1, 700, Status.SUCCESS, true);
    r.downstreamAck(BlockOps.pipelineAck(0, List.of(Status.SUCCESS)));
    assertEquals(List.of("0[SUCCESS, SUCCESS]"), shown(acks));
    r.downstreamAck(BlockOps.pipelineAck(1, List.of(Status.SUCCESS)));
    assertTrue(r.finalizeDue(), "the last packet acked downstream: finalizing is due");
    r.stop();
    assertFalse(r.finalizeDue(), "a stopped write finalizes nothing");
    r.finalized(true);
    r.processed(2, 900, Status.SUCCESS, false);
    r.downstreamAck(BlockOps.pipelineAck(2, List.of(Status.SUCCESS)));
    assertEquals(List.of("0[SUCCESS, SUCCESS]"), shown(acks), "acks after the stop");
    assertTrue(r.ended());
  }
}
