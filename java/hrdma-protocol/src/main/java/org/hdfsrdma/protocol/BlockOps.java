package org.hdfsrdma.protocol;

import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.PipelineAck;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BaseHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ChecksumProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ClientOperationHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ClientReadStatusProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpReadBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto.BlockConstructionStage;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PacketHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PipelineAckProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReadOpChecksumInfoProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.thirdparty.protobuf.UnknownFieldSet;
import org.apache.hadoop.util.DataChecksum;

/** Builders for the HDFS messages the read and write paths carry, filled as the stock client and DataNode fill them. */
public final class BlockOps {
  /** Longest error message sent; longer ones are cut. */
  public static final int MAX_ERROR_CHARS = 4096;

  private BlockOps() {}

  /** OpReadBlockProto for [offset, offset + len) of {@code block}; {@code token} may be null. */
  public static OpReadBlockProto readBlock(ExtendedBlock block, Token<BlockTokenIdentifier> token,
      String clientName, long offset, long len) {
    return readBlock(block, token, clientName, offset, len, true);
  }

  /**
   * As {@link #readBlock(ExtendedBlock, Token, String, long, long)}; {@code sendChecksums} false
   * (a reader that verifies none, as stock's sets it) asks for the data without its checksums.
   */
  public static OpReadBlockProto readBlock(ExtendedBlock block, Token<BlockTokenIdentifier> token,
      String clientName, long offset, long len, boolean sendChecksums) {
    BaseHeaderProto.Builder base = BaseHeaderProto.newBuilder().setBlock(PBHelperClient.convert(block));
    if (token != null) {
      base.setToken(PBHelperClient.convert(token));
    }
    return OpReadBlockProto.newBuilder()
        .setHeader(ClientOperationHeaderProto.newBuilder().setBaseHeader(base).setClientName(clientName))
        .setOffset(offset)
        .setLen(len)
        .setSendChecksums(sendChecksums)
        .build();
  }

  /** The READ_RESPONSE header: SUCCESS, the replica's checksum and the chunk-aligned start. */
  public static BlockOpResponseProto readResponse(DataChecksum checksum, long chunkOffset) {
    return BlockOpResponseProto.newBuilder()
        .setStatus(Status.SUCCESS)
        .setReadOpChecksumInfo(ReadOpChecksumInfoProto.newBuilder()
            .setChecksum(ChecksumProto.newBuilder()
                .setType(PBHelperClient.convert(checksum.getChecksumType()))
                .setBytesPerChecksum(checksum.getBytesPerChecksum()))
            .setChunkOffset(chunkOffset))
        .build();
  }

  /** The ERROR header: a non-success {@code status} and a message (cut to {@link #MAX_ERROR_CHARS}). */
  public static BlockOpResponseProto error(Status status, String message) {
    if (status == Status.SUCCESS) {
      throw new IllegalArgumentException("an error needs a non-success status");
    }
    String m = message == null ? "" : message;
    if (m.length() > MAX_ERROR_CHARS) {
      m = m.substring(0, MAX_ERROR_CHARS) + "...";
    }
    return BlockOpResponseProto.newBuilder().setStatus(status).setMessage(m).build();
  }

  public static ClientReadStatusProto readStatus(Status status) {
    return ClientReadStatusProto.newBuilder().setStatus(status).build();
  }

  /** The block a read request names. */
  public static ExtendedBlock block(OpReadBlockProto op) {
    return PBHelperClient.convert(op.getHeader().getBaseHeader().getBlock());
  }

  /** The token a read request carries, or null. */
  public static Token<BlockTokenIdentifier> token(OpReadBlockProto op) {
    BaseHeaderProto base = op.getHeader().getBaseHeader();
    return base.hasToken() ? PBHelperClient.convert(base.getToken()) : null;
  }

  // ------------------------------------------------------------------ write

  /**
   * The WRITE_REQUEST a client sends to the first DataNode of a new block's
   * pipeline, filled as the stock {@code Sender.writeBlock} fills it for
   * PIPELINE_SETUP_CREATE: {@code nodes}, {@code storageTypes} and
   * {@code storageIds} are the whole pipeline from {@code addBlock}; the
   * message names the first node's storage in {@code storageType}/{@code storageId}
   * and the rest in {@code targets}/{@code targetStorageTypes}/{@code targetStorageIds}.
   */
  public static OpWriteBlockProto writeBlock(ExtendedBlock block, Token<BlockTokenIdentifier> token,
      String clientName, DatanodeInfo[] nodes, StorageType[] storageTypes, String[] storageIds,
      DataChecksum checksum) {
    return writeBlock(block, token, clientName, nodes, storageTypes, storageIds, checksum,
        BlockConstructionStage.PIPELINE_SETUP_CREATE, block.getNumBytes(), 0, block.getGenerationStamp());
  }

  /**
   * The WRITE_REQUEST that sets a pipeline up again after a DataNode failed
   * (stock {@code DataStreamer#createBlockOutputStream} in recovery):
   * {@code block} with its current generation stamp, {@code stage}
   * PIPELINE_SETUP_STREAMING_RECOVERY or PIPELINE_CLOSE_RECOVERY, the bytes
   * every node acknowledged ({@code minBytesRcvd}) and the bytes sent
   * ({@code maxBytesRcvd}), and the generation stamp the NameNode gave for the
   * new pipeline ({@code newGenerationStamp}).
   */
  public static OpWriteBlockProto recoverBlock(ExtendedBlock block, Token<BlockTokenIdentifier> token,
      String clientName, DatanodeInfo[] nodes, StorageType[] storageTypes, String[] storageIds,
      DataChecksum checksum, BlockConstructionStage stage, long minBytesRcvd, long maxBytesRcvd,
      long newGenerationStamp) {
    if (stage != BlockConstructionStage.PIPELINE_SETUP_STREAMING_RECOVERY
        && stage != BlockConstructionStage.PIPELINE_CLOSE_RECOVERY) {
      throw new IllegalArgumentException("not a recovery stage: " + stage);
    }
    if (minBytesRcvd < 0 || maxBytesRcvd < minBytesRcvd || newGenerationStamp <= block.getGenerationStamp()) {
      throw new IllegalArgumentException("bad recovery of " + block + ": acked " + minBytesRcvd + ", sent "
          + maxBytesRcvd + ", new generation stamp " + newGenerationStamp);
    }
    return writeBlock(block, token, clientName, nodes, storageTypes, storageIds, checksum, stage, minBytesRcvd,
        maxBytesRcvd, newGenerationStamp);
  }

  private static OpWriteBlockProto writeBlock(ExtendedBlock block, Token<BlockTokenIdentifier> token,
      String clientName, DatanodeInfo[] nodes, StorageType[] storageTypes, String[] storageIds,
      DataChecksum checksum, BlockConstructionStage stage, long minBytesRcvd, long maxBytesRcvd, long latestGs) {
    if (nodes.length == 0) {
      throw new IllegalArgumentException("a write pipeline needs at least one DataNode");
    }
    BaseHeaderProto.Builder base = BaseHeaderProto.newBuilder().setBlock(PBHelperClient.convert(block));
    if (token != null) {
      base.setToken(PBHelperClient.convert(token));
    }
    OpWriteBlockProto.Builder b = OpWriteBlockProto.newBuilder()
        .setHeader(ClientOperationHeaderProto.newBuilder().setBaseHeader(base).setClientName(clientName))
        .addAllTargets(PBHelperClient.convert(nodes, 1))
        .setStage(stage)
        .setPipelineSize(nodes.length)
        .setMinBytesRcvd(minBytesRcvd)
        .setMaxBytesRcvd(maxBytesRcvd)
        .setLatestGenerationStamp(latestGs)
        .setRequestedChecksum(ChecksumProto.newBuilder()
            .setType(PBHelperClient.convert(checksum.getChecksumType()))
            .setBytesPerChecksum(checksum.getBytesPerChecksum()))
        .setUnknownFields(UnknownFieldSet.newBuilder()
            .addField(OOB_ACKS_FIELD, UnknownFieldSet.Field.newBuilder().addVarint(1).build()).build());
    if (storageTypes != null && storageTypes.length > 0) {
      b.setStorageType(PBHelperClient.convertStorageType(storageTypes[0]));
      b.addAllTargetStorageTypes(PBHelperClient.convertStorageTypes(storageTypes, 1));
    }
    if (storageIds != null && storageIds.length > 0) {
      b.setStorageId(storageIds[0]);
      for (int i = 1; i < storageIds.length; i++) {
        b.addTargetStorageIds(storageIds[i]);
      }
    }
    return b.build();
  }

  /**
   * What a DataNode forwards to the next one (as the stock DataXceiver does):
   * the same request with the first downstream target as the receiver
   * (its storage type and id move to {@code storageType}/{@code storageId}).
   *
   * @throws IllegalArgumentException the request has no downstream target
   */
  public static OpWriteBlockProto forwardWriteBlock(OpWriteBlockProto op) {
    if (op.getTargetsCount() == 0) {
      throw new IllegalArgumentException("no downstream target to forward to");
    }
    OpWriteBlockProto.Builder b = op.toBuilder()
        .clearTargets().addAllTargets(op.getTargetsList().subList(1, op.getTargetsCount()))
        .clearTargetStorageTypes().clearTargetStorageIds().clearStorageId();
    if (op.getTargetStorageTypesCount() > 0) {
      b.setStorageType(op.getTargetStorageTypes(0));
      b.addAllTargetStorageTypes(op.getTargetStorageTypesList().subList(1, op.getTargetStorageTypesCount()));
    } else {
      b.clearStorageType();
    }
    if (op.getTargetStorageIdsCount() > 0) {
      b.setStorageId(op.getTargetStorageIds(0));
      b.addAllTargetStorageIds(op.getTargetStorageIdsList().subList(1, op.getTargetStorageIdsCount()));
    }
    return b.build();
  }

  /** The block a write request names. */
  public static ExtendedBlock block(OpWriteBlockProto op) {
    return PBHelperClient.convert(op.getHeader().getBaseHeader().getBlock());
  }

  /** The token a write request carries, or null. */
  public static Token<BlockTokenIdentifier> token(OpWriteBlockProto op) {
    BaseHeaderProto base = op.getHeader().getBaseHeader();
    return base.hasToken() ? PBHelperClient.convert(base.getToken()) : null;
  }

  /** The downstream DataNodes of a write request, in pipeline order. */
  public static DatanodeInfo[] targets(OpWriteBlockProto op) {
    return PBHelperClient.convert(op.getTargetsList());
  }

  /** The receiver's storage type (DISK when not named, as the proto's default). */
  public static StorageType storageType(OpWriteBlockProto op) {
    return PBHelperClient.convertStorageType(op.getStorageType());
  }

  /** The receiver's storage id, or null when the request names none (old clients). */
  public static String storageId(OpWriteBlockProto op) {
    return op.hasStorageId() && !op.getStorageId().isEmpty() ? op.getStorageId() : null;
  }

  /**
   * The storage types of the whole pipeline from the receiver on (receiver
   * first), as the stock DataXceiver passes them to the token check.
   */
  public static StorageType[] pipelineStorageTypes(OpWriteBlockProto op) {
    StorageType[] t = new StorageType[op.getTargetStorageTypesCount() + 1];
    t[0] = storageType(op);
    for (int i = 0; i < op.getTargetStorageTypesCount(); i++) {
      t[i + 1] = PBHelperClient.convertStorageType(op.getTargetStorageTypes(i));
    }
    return t;
  }

  /**
   * The storage ids of the pipeline from the receiver on, for the token check:
   * empty when the request names no target storage ids (as stock, for old clients).
   */
  public static String[] pipelineStorageIds(OpWriteBlockProto op) {
    int n = op.getTargetStorageIdsCount();
    if (n == 0) {
      return new String[0];
    }
    String[] ids = new String[n + 1];
    ids[0] = op.getStorageId();
    for (int i = 0; i < n; i++) {
      ids[i + 1] = op.getTargetStorageIds(i);
    }
    return ids;
  }

  /** The checksum a write request asks for. */
  public static DataChecksum requestedChecksum(OpWriteBlockProto op) {
    ChecksumProto c = op.getRequestedChecksum();
    return DataChecksum.newDataChecksum(PBHelperClient.convert(c.getType()), c.getBytesPerChecksum());
  }

  /** The WRITE_RESPONSE header: {@code status} and, as stock, {@code firstBadLink} ("" when none). */
  public static BlockOpResponseProto writeResponse(Status status, String firstBadLink, String message) {
    BlockOpResponseProto.Builder b = BlockOpResponseProto.newBuilder().setStatus(status)
        .setFirstBadLink(firstBadLink == null ? "" : firstBadLink);
    if (message != null) {
      b.setMessage(message.length() > MAX_ERROR_CHARS ? message.substring(0, MAX_ERROR_CHARS) + "..." : message);
    }
    return b.build();
  }

  /**
   * The seqno of a heartbeat packet (stock: DFSPacket.HEART_BEAT_SEQNO): a DATA_PACKET with no data,
   * offset 0, not the last, that a writer sends when no packet went out for half the socket timeout;
   * every DataNode relays it downstream and acks it upstream, without touching the replica.
   */
  public static final long HEARTBEAT_SEQNO = -1;

  /** A heartbeat packet's header (stock DataStreamer#createHeartbeatPacket). */
  public static PacketHeaderProto heartbeatHeader() {
    return packetHeader(HEARTBEAT_SEQNO, 0, false, 0, false);
  }

  /**
   * The field of a SUCCESS WRITE_RESPONSE (varint 1) by which a DataNode says that it and every
   * DataNode downstream of it relay and ack heartbeats; far above stock's field numbers, so that
   * parsers that do not know it keep it as an unknown field. A client sends heartbeats only on a
   * pipeline whose response has it: DataNodes of earlier versions fail a write on a heartbeat
   * (its seqno is not the next one) and do not set it.
   */
  public static final int HEARTBEATS_FIELD = 1001;

  /** A SUCCESS WRITE_RESPONSE; {@code heartbeats}: this DataNode and its downstream take heartbeats. */
  public static BlockOpResponseProto writeResponseOk(boolean heartbeats) {
    BlockOpResponseProto.Builder b = BlockOpResponseProto.newBuilder().setStatus(Status.SUCCESS)
        .setFirstBadLink("");
    if (heartbeats) {
      b.setUnknownFields(UnknownFieldSet.newBuilder()
          .addField(HEARTBEATS_FIELD, UnknownFieldSet.Field.newBuilder().addVarint(1).build()).build());
    }
    return b.build();
  }

  /** Whether a WRITE_RESPONSE says that the whole pipeline from its sender on takes heartbeats. */
  public static boolean takesHeartbeats(BlockOpResponseProto resp) {
    UnknownFieldSet.Field f = resp.getUnknownFields().getField(HEARTBEATS_FIELD);
    return resp.getStatus() == Status.SUCCESS && f != null && f.getVarintList().contains(1L);
  }

  /** Whether {@code h} is a heartbeat's header (its seqno; the rest is checked by the receiver). */
  public static boolean isHeartbeat(PacketHeaderProto h) {
    return h.getSeqno() == HEARTBEAT_SEQNO;
  }

  /** A write packet's header (stock PacketHeaderProto). */
  public static PacketHeaderProto packetHeader(long seqno, long offsetInBlock, boolean last, int dataLen,
      boolean syncBlock) {
    PacketHeaderProto.Builder b = PacketHeaderProto.newBuilder()
        .setOffsetInBlock(offsetInBlock)
        .setSeqno(seqno)
        .setLastPacketInBlock(last)
        .setDataLen(dataLen);
    if (syncBlock) {
      b.setSyncBlock(true);
    }
    return b.build();
  }

  /**
   * A PIPELINE_ACK header: one status per DataNode from the sender on, in
   * pipeline order, both as the {@code reply} list and as the {@code flag}
   * headers newer stock readers look at (ECN disabled).
   */
  public static PipelineAckProto pipelineAck(long seqno, List<Status> replies) {
    PipelineAckProto.Builder b = PipelineAckProto.newBuilder().setSeqno(seqno).setDownstreamAckTimeNanos(0);
    for (Status s : replies) {
      b.addReply(s);
      b.addFlag(PipelineAck.combineHeader(PipelineAck.ECN.DISABLED, s));
    }
    return b.build();
  }

  /**
   * A PIPELINE_ACK from per-node headers as stock's PipelineAck carries them (status, ECN and
   * SLOW bits, {@code PipelineAck#combineHeader}): each as a {@code flag}, its status also as
   * the {@code reply}, as stock's {@code new PipelineAck(seqno, replies)} writes them.
   */
  public static PipelineAckProto pipelineAck(long seqno, int[] headers) {
    PipelineAckProto.Builder b = PipelineAckProto.newBuilder().setSeqno(seqno).setDownstreamAckTimeNanos(0);
    for (int h : headers) {
      b.addReply(PipelineAck.getStatusFromHeader(h));
      b.addFlag(h);
    }
    return b.build();
  }

  /**
   * The per-node headers of an ack in pipeline order, as stock's PipelineAck#getHeaderFlag reads
   * them: the flags when present, else each reply with ECN disabled.
   */
  public static int[] ackHeaders(PipelineAckProto ack) {
    if (ack.getFlagCount() > 0) {
      return ack.getFlagList().stream().mapToInt(Integer::intValue).toArray();
    }
    return ack.getReplyList().stream()
        .mapToInt(s -> PipelineAck.combineHeader(PipelineAck.ECN.DISABLED, s)).toArray();
  }

  /** One node's ack header: {@code status} and its SLOW state, ECN disabled. */
  public static int ackHeader(Status status, PipelineAck.SLOW slow) {
    return ackHeader(status, PipelineAck.ECN.DISABLED, slow);
  }

  /** One node's ack header as stock's PacketResponder combines it: {@code status}, its ECN and SLOW states. */
  public static int ackHeader(Status status, PipelineAck.ECN ecn, PipelineAck.SLOW slow) {
    return PipelineAck.combineHeader(ecn, status, slow);
  }

  /** Whether an ack header flags its node CONGESTED (stock PipelineAck#getECNFromHeader). */
  public static boolean isCongested(int header) {
    return PipelineAck.getECNFromHeader(header) == PipelineAck.ECN.CONGESTED;
  }

  /** Whether an ack header flags its node SLOW (stock PipelineAck#getSLOWFromHeader). */
  public static boolean isSlow(int header) {
    return PipelineAck.getSLOWFromHeader(header) == PipelineAck.SLOW.SLOW;
  }

  /** The status of an ack header. */
  public static Status headerStatus(int header) {
    return PipelineAck.getStatusFromHeader(header);
  }

  /**
   * The field of a WRITE_REQUEST (varint 1) by which its sender says that it takes out-of-band
   * acks (an OOB_RESTART from a DataNode shutting down for an upgrade, {@link #oobRestartAck}):
   * a client that waits for the DataNode or takes it as failed, or a DataNode that relays them
   * because its own request had it. A DataNode forwards the request with its unknown fields, so
   * the whole chain upstream of a node takes them when its request has it. Writers of earlier
   * versions do not set it: they would take the OOB ack (seqno -2) as out of order and drop the
   * first DataNode, whichever sent it; they are sent none, and see the connection close as before.
   */
  public static final int OOB_ACKS_FIELD = 1002;

  /** Stock's PipelineAck.UNKOWN_SEQNO: the seqno of an out-of-band ack, which acknowledges no packet. */
  public static final long OOB_SEQNO = -2;

  /** Whether the sender of {@code op} takes out-of-band acks ({@link #OOB_ACKS_FIELD}). */
  public static boolean takesOobAcks(OpWriteBlockProto op) {
    UnknownFieldSet.Field f = op.getUnknownFields().getField(OOB_ACKS_FIELD);
    return f != null && f.getVarintList().contains(1L);
  }

  /**
   * A DataNode's own OOB_RESTART ack (stock PacketResponder#sendOOBResponse): seqno
   * {@link #OOB_SEQNO} and one status, this node's, whatever the nodes downstream.
   */
  public static PipelineAckProto oobRestartAck() {
    return pipelineAck(OOB_SEQNO, List.of(Status.OOB_RESTART));
  }

  /** Whether {@code s} is one of the out-of-band statuses (stock PipelineAck: OOB_RESTART to OOB_RESERVED3). */
  public static boolean isOob(Status s) {
    return s.getNumber() >= Status.OOB_RESTART.getNumber() && s.getNumber() <= Status.OOB_RESERVED3.getNumber();
  }

  /**
   * The pipeline index of the out-of-band status of {@code ack} (stock PipelineAck#getOOBStatus:
   * only an ack of seqno {@link #OOB_SEQNO}, its first such status), or -1.
   */
  public static int oobIndex(PipelineAckProto ack) {
    if (ack.getSeqno() != OOB_SEQNO) {
      return -1;
    }
    List<Status> statuses = ackStatuses(ack);
    for (int i = 0; i < statuses.size(); i++) {
      if (isOob(statuses.get(i))) {
        return i;
      }
    }
    return -1;
  }

  /** The statuses of an ack in pipeline order: from the flags when present (as stock), else the replies. */
  public static List<Status> ackStatuses(PipelineAckProto ack) {
    List<Status> out = new ArrayList<>();
    if (ack.getFlagCount() > 0) {
      for (int f : ack.getFlagList()) {
        out.add(PipelineAck.getStatusFromHeader(f));
      }
    } else {
      out.addAll(ack.getReplyList());
    }
    return out;
  }
}
