package org.hdfsrdma.protocol;

import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BaseHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ChecksumProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ClientOperationHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ClientReadStatusProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpReadBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReadOpChecksumInfoProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.DataChecksum;

/** Builders for the HDFS messages the read path carries, filled as the stock client and DataNode fill them. */
public final class BlockOps {
  /** Longest error message sent; longer ones are cut. */
  public static final int MAX_ERROR_CHARS = 4096;

  private BlockOps() {}

  /** OpReadBlockProto for [offset, offset + len) of {@code block}; {@code token} may be null. */
  public static OpReadBlockProto readBlock(ExtendedBlock block, Token<BlockTokenIdentifier> token,
      String clientName, long offset, long len) {
    BaseHeaderProto.Builder base = BaseHeaderProto.newBuilder().setBlock(PBHelperClient.convert(block));
    if (token != null) {
      base.setToken(PBHelperClient.convert(token));
    }
    return OpReadBlockProto.newBuilder()
        .setHeader(ClientOperationHeaderProto.newBuilder().setBaseHeader(base).setClientName(clientName))
        .setOffset(offset)
        .setLen(len)
        .setSendChecksums(true)
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
}
