package org.hdfsrdma.protocol;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BaseHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.thirdparty.protobuf.UnknownFieldSet;

/**
 * Short-circuit reads' Unix domain socket: where a DataNode's plugin listens
 * and what is said on it. The exchange, each message a 4-byte big-endian
 * length and a protobuf:
 * <ol>
 *   <li>client: {@code OpRequestShortCircuitAccessProto} (the block, its
 *       length the one the client expects, and its token; maxVersion
 *       {@value #BLOCK_FORMAT_VERSION}), as stock's REQUEST_SHORT_CIRCUIT_FDS;
 *       in field {@value #PROBE_FIELD} (two varints, offset and length; ours)
 *       a client may ask how much of a range of the block is in the page cache;
 *   <li>DataNode: {@code BlockOpResponseProto}: SUCCESS, or an error status
 *       (ERROR_ACCESS_TOKEN for a token refused) and a message; it closes the
 *       socket after an error. A SUCCESS says in field {@value #CACHED_FIELD}
 *       (a varint, 1) that the DataNode caches the replica ({@link #granted});
 *       the field is ours, not in stock's message, so a parser that does not
 *       know it keeps it as an unknown field and ignores it; when the
 *       request asked, field {@value #RESIDENT_FIELD} (a varint) says how many
 *       bytes of the range are in the page cache ({@link #resident});
 *   <li>on SUCCESS, client: an empty message (it reads descriptors now);
 *   <li>DataNode: the block file's then the .meta file's descriptor, each
 *       sent with one byte (SCM_RIGHTS), opened read-only by the DataNode.
 * </ol>
 * No path of a replica leaves the DataNode.
 */
public final class ShortCircuitSocket {
  /**
   * The socket's path; {@code _PORT} becomes the DataNode's xfer port. Empty:
   * {@code dfs.domain.socket.path} with {@value #STOCK_SUFFIX} appended when
   * that is set (the stock DataNode binds that path itself), else
   * {@value #PATH_DEFAULT}. Client and DataNode must agree.
   */
  public static final String PATH_KEY = HrdmaProtocolKeys.DOMAIN_SOCKET_PATH_KEY;
  public static final String PATH_DEFAULT = "/tmp/hrdma-dn-_PORT.sock";
  /** Stock's key, reused when ours is not set. */
  public static final String STOCK_PATH_KEY = "dfs.domain.socket.path";
  public static final String STOCK_SUFFIX = ".hrdma";
  /** Largest message either side accepts. */
  public static final int MAX_MESSAGE_BYTES = 64 * 1024;
  /** The block file format the DataNode serves (stock's DataNode.CURRENT_BLOCK_FORMAT_VERSION). */
  public static final int BLOCK_FORMAT_VERSION = 1;

  /**
   * The SUCCESS reply's field that says the DataNode caches the replica
   * (centralized cache management: mapped and mlocked, its checksums verified
   * when it was cached). Far above stock's field numbers.
   */
  public static final int CACHED_FIELD = 1000;
  /**
   * The request's field asking how much of a range of the block file is in the page cache
   * (offset and length, varints), and the SUCCESS reply's field with the answer (bytes). A
   * client asks when it has other replicas on this host to choose from; an older DataNode
   * leaves the reply without it.
   */
  public static final int PROBE_FIELD = 1001;
  public static final int RESIDENT_FIELD = 1001;
  /**
   * The request's field carrying a write segment's one-time grant id (bytes, from a
   * WRITE_SHM_GRANT on the sender's transport connection): the DataNode then passes that
   * segment's descriptor, one, instead of a replica's two. The id is the capability; the
   * block and token were checked when it was granted.
   */
  public static final int GRANT_FIELD = 1002;

  private ShortCircuitSocket() {}

  /** The SUCCESS reply; {@code cached}: the DataNode caches the replica. */
  public static BlockOpResponseProto granted(boolean cached) {
    return granted(cached, -1);
  }

  /**
   * The SUCCESS reply; {@code cached}: the DataNode caches the replica; {@code resident}: bytes
   * of the range the request asked about that are in the page cache (negative: not said).
   */
  public static BlockOpResponseProto granted(boolean cached, long resident) {
    BlockOpResponseProto.Builder b = BlockOpResponseProto.newBuilder().setStatus(Status.SUCCESS)
        .setShortCircuitAccessVersion(BLOCK_FORMAT_VERSION);
    UnknownFieldSet.Builder ours = UnknownFieldSet.newBuilder();
    if (cached) {
      ours.addField(CACHED_FIELD, UnknownFieldSet.Field.newBuilder().addVarint(1).build());
    }
    if (resident >= 0) {
      ours.addField(RESIDENT_FIELD, UnknownFieldSet.Field.newBuilder().addVarint(resident).build());
    }
    return b.setUnknownFields(ours.build()).build();
  }

  /** The bytes of the asked range a SUCCESS reply says are in the page cache; -1: not said. */
  public static long resident(BlockOpResponseProto reply) {
    UnknownFieldSet.Field f = reply.getUnknownFields().getField(RESIDENT_FIELD);
    return f == null || f.getVarintList().size() != 1 || f.getVarintList().get(0) < 0 ? -1
        : f.getVarintList().get(0);
  }

  /** Whether a SUCCESS reply says the DataNode caches the replica. */
  public static boolean cached(BlockOpResponseProto reply) {
    UnknownFieldSet.Field f = reply.getUnknownFields().getField(CACHED_FIELD);
    return f != null && f.getVarintList().contains(1L);
  }

  /** The socket path of the DataNode whose xfer port is {@code xferPort}. */
  public static String path(Configuration conf, int xferPort) {
    String p = conf.getTrimmed(PATH_KEY, "");
    if (p.isEmpty()) {
      String stock = conf.getTrimmed(STOCK_PATH_KEY, "");
      p = stock.isEmpty() ? PATH_DEFAULT : stock + STOCK_SUFFIX;
    }
    return p.replace("_PORT", Integer.toString(xferPort));
  }

  /** The request for {@code block}'s descriptors; {@code token} may be null (tokens off). */
  public static OpRequestShortCircuitAccessProto request(ExtendedBlock block, Token<BlockTokenIdentifier> token) {
    BaseHeaderProto.Builder base = BaseHeaderProto.newBuilder().setBlock(PBHelperClient.convert(block));
    if (token != null) {
      base.setToken(PBHelperClient.convert(token));
    }
    return OpRequestShortCircuitAccessProto.newBuilder().setHeader(base).setMaxVersion(BLOCK_FORMAT_VERSION)
        .build();
  }

  /**
   * As {@link #request(ExtendedBlock, Token)}, asking too how much of {@code [offset, offset +
   * length)} of the block is in the DataNode's page cache.
   */
  public static OpRequestShortCircuitAccessProto request(ExtendedBlock block, Token<BlockTokenIdentifier> token,
      long offset, long length) {
    if (offset < 0 || length < 0) {
      throw new IllegalArgumentException("bad range to probe: " + offset + " + " + length);
    }
    return request(block, token).toBuilder().setUnknownFields(UnknownFieldSet.newBuilder()
        .addField(PROBE_FIELD, UnknownFieldSet.Field.newBuilder().addVarint(offset).addVarint(length).build())
        .build()).build();
  }

  /** The request for the write segment granted as {@code grant} (see {@link #GRANT_FIELD}). */
  public static OpRequestShortCircuitAccessProto segmentRequest(ExtendedBlock block,
      Token<BlockTokenIdentifier> token, byte[] grant) {
    return request(block, token).toBuilder().setUnknownFields(UnknownFieldSet.newBuilder()
        .addField(GRANT_FIELD, UnknownFieldSet.Field.newBuilder()
            .addLengthDelimited(org.apache.hadoop.thirdparty.protobuf.ByteString.copyFrom(grant)).build())
        .build()).build();
  }

  /** The write segment's grant id a request presents, or null (a request for a replica's files). */
  public static byte[] grant(OpRequestShortCircuitAccessProto op) {
    UnknownFieldSet.Field f = op.getUnknownFields().getField(GRANT_FIELD);
    return f == null || f.getLengthDelimitedList().size() != 1 ? null
        : f.getLengthDelimitedList().get(0).toByteArray();
  }

  /** The range {offset, length} a request asks the residency of, or null (none asked, or malformed). */
  public static long[] probe(OpRequestShortCircuitAccessProto op) {
    UnknownFieldSet.Field f = op.getUnknownFields().getField(PROBE_FIELD);
    if (f == null || f.getVarintList().size() != 2) {
      return null;
    }
    long offset = f.getVarintList().get(0);
    long length = f.getVarintList().get(1);
    return offset < 0 || length < 0 ? null : new long[] {offset, length};
  }

  public static ExtendedBlock block(OpRequestShortCircuitAccessProto op) {
    return PBHelperClient.convert(op.getHeader().getBlock());
  }

  /** The request's token, or null. */
  public static Token<BlockTokenIdentifier> token(OpRequestShortCircuitAccessProto op) {
    return op.getHeader().hasToken() ? PBHelperClient.convert(op.getHeader().getToken()) : null;
  }
}
