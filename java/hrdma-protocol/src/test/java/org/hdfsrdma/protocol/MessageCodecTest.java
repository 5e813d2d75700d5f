package org.hdfsrdma.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ProtocolException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.function.Consumer;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.protocol.DatanodeID;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PipelineAckProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpReadBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PacketHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.transport.BufferAllocator;
import org.hdfsrdma.transport.BufferPool;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.SlabAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class MessageCodecTest {
  private final BufferPool pool = new BufferPool(SlabAllocator.DIRECT, 1 << 20, 8 << 20);

  @AfterEach
  void noLeak() {
    assertEquals(0, pool.buffersOutstanding(), "registered buffers leaked");
    pool.close();
  }

  /** Decodes {@code m}, checks it, releases it. */
  private static void decodeAndRelease(RegisteredBuffer m, Consumer<Message> check) throws ProtocolException {
    try {
      Message d = MessageCodec.decode(m);
      check.accept(d);
    } finally {
      m.release();
    }
  }

  @Test
  void infoRoundTrip() throws Exception {
    decodeAndRelease(MessageCodec.encode(pool, MessageKind.INFO_REQUEST, 5, null, null), d -> {
      assertEquals(MessageKind.INFO_REQUEST, d.kind());
      assertEquals(5, d.requestId());
      assertEquals(0, d.payload().remaining());
    });
    InfoReply info = new InfoReply("dn-uuid-\u00e9", 40123, List.of("BP-1", "BP-2"));
    RegisteredBuffer m = MessageCodec.encodeInfoReply(pool, 7, info);
    Message d = MessageCodec.decode(m);
    assertEquals(info, d.infoReply());
    assertEquals(7, d.requestId());
    d.release();
  }

  @Test
  void readOpsRoundTrip() throws Exception {
    ExtendedBlock block = new ExtendedBlock("BP-7", 1073741825L, 1000, 1001);
    Token<BlockTokenIdentifier> token = new Token<>(new byte[] {1, 2, 3}, new byte[] {4, 5},
        new Text("HDFS_BLOCK_TOKEN"), new Text("svc"));
    OpReadBlockProto req = BlockOps.readBlock(block, token, "client-1", 513, 4096);
    decodeAndRelease(MessageCodec.encode(pool, MessageKind.READ_REQUEST, Long.MAX_VALUE, req, null), d -> {
      try {
        assertEquals(req, d.readRequest());
        assertEquals(Long.MAX_VALUE, d.requestId());
        assertEquals(block, BlockOps.block(d.readRequest()));
        assertEquals(token, BlockOps.token(d.readRequest()));
        assertThrows(ProtocolException.class, d::readResponse, "wrong kind accessor");
      } catch (ProtocolException e) {
        throw new AssertionError(e);
      }
    });
    BlockOpResponseProto resp = BlockOps.readResponse(
        DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, 512), 512);
    decodeAndRelease(MessageCodec.encode(pool, MessageKind.READ_RESPONSE, 1, resp, null), d -> {
      try {
        assertEquals(resp, d.readResponse());
      } catch (ProtocolException e) {
        throw new AssertionError(e);
      }
    });
    BlockOpResponseProto err = BlockOps.error(Status.ERROR_ACCESS_TOKEN, "x".repeat(10_000));
    assertEquals(BlockOps.MAX_ERROR_CHARS + 3, err.getMessage().length());
    decodeAndRelease(MessageCodec.encode(pool, MessageKind.ERROR, 2, err, null), d -> {
      try {
        assertEquals(Status.ERROR_ACCESS_TOKEN, d.error().getStatus());
      } catch (ProtocolException e) {
        throw new AssertionError(e);
      }
    });
    decodeAndRelease(MessageCodec.encode(pool, MessageKind.READ_STATUS, 3,
        BlockOps.readStatus(Status.CHECKSUM_OK), null), d -> {
          try {
            assertEquals(Status.CHECKSUM_OK, d.readStatus().getStatus());
          } catch (ProtocolException e) {
            throw new AssertionError(e);
          }
        });
  }

  @Test
  void dataPacketPayloadIsAViewWrittenInPlace() throws Exception {
    PacketHeaderProto h = PacketHeaderProto.newBuilder().setOffsetInBlock(1024).setSeqno(3)
        .setLastPacketInBlock(true).setDataLen(100).build();
    RegisteredBuffer m = MessageCodec.begin(pool, MessageKind.DATA_PACKET, 9, h, 4 + 100);
    for (int i = 0; i < 104; i++) {
      m.nio().put((byte) i);
    }
    MessageCodec.finish(m);
    Message d = MessageCodec.decode(m);
    assertEquals(h, d.packetHeader());
    ByteBuffer p = d.payload();
    assertEquals(104, p.remaining());
    assertTrue(p.isDirect());
    for (int i = 0; i < 104; i++) {
      assertEquals((byte) i, p.get(i));
    }
    // a view, not a copy
    m.nio().put(m.nio().limit() - 1, (byte) 77);
    assertEquals(77, p.get(103));
    assertEquals(0, m.nio().position(), "decode leaves the buffer's position alone");
    d.release();
  }

  @Test
  void packetsAreSizedToFillThePoolsBufferNotToSpillIntoTheNextClass() throws Exception {
    try (BufferPool big = new BufferPool(SlabAllocator.DIRECT, 8 << 20, 64 << 20)) {
      // 1 MiB of data with its CRC32C and headers would take a 2 MiB buffer: 1 MiB - 12 KiB fits 1 MiB
      int fit = MessageCodec.packetDataBytes(big, 1 << 20, 512, 4, 4096);
      assertEquals((1 << 20) - (12 << 10), fit);
      assertEquals(0, fit % 4096, "whole O_DIRECT blocks");
      // the largest message laid out as the DataNode does (aligned data, up to one block of
      // slack before it) takes a 1 MiB buffer
      PacketHeaderProto widest = PacketHeaderProto.newBuilder().setOffsetInBlock(Long.MIN_VALUE)
          .setSeqno(Long.MIN_VALUE).setLastPacketInBlock(true).setDataLen(Integer.MIN_VALUE).setSyncBlock(true).build();
      int message = MessageCodec.FIXED_BYTES + widest.getSerializedSize() + fit / 512 * 4 + fit + 4096;
      assertEquals(1 << 20, big.footprint(message));
      assertEquals(2 << 20, big.footprint(message + (4 << 10)), "one more block would not fit");
      assertEquals((1 << 19) - (8 << 10), MessageCodec.packetDataBytes(big, 1 << 19, 512, 4, 4096));
      // what fits already stays: 1.5 MiB fits the 2 MiB class
      assertEquals(3 << 19, MessageCodec.packetDataBytes(big, 3 << 19, 512, 4, 4096));
      // larger chunks: still whole chunks and whole blocks, and a 1 MiB buffer
      int bpc4k = MessageCodec.packetDataBytes(big, 1 << 20, 4096, 4, 4096);
      assertEquals((1 << 20) - (8 << 10), bpc4k);
      // chunks that share no small multiple with the alignment: nothing near fits, the size stays
      assertEquals(1 << 20, MessageCodec.packetDataBytes(big, 1 << 20, 100_000, 4, 4096));
      // an allocator without size classes: nothing to fit
      BufferAllocator plain = new BufferAllocator() {
        @Override
        public RegisteredBuffer allocate(int size) {
          throw new UnsupportedOperationException();
        }

        @Override
        public long bytesRegistered() {
          return 0;
        }

        @Override
        public long buffersOutstanding() {
          return 0;
        }
      };
      assertEquals(1 << 20, MessageCodec.packetDataBytes(plain, 1 << 20, 512, 4, 4096));
      assertThrows(IllegalArgumentException.class, () -> MessageCodec.packetDataBytes(big, 0, 512, 4, 4096));
    }
  }

  @Test
  void aMessageBegunAtAnOffsetIsTheSameMessageOnTheWire() throws Exception {
    PacketHeaderProto h = PacketHeaderProto.newBuilder().setOffsetInBlock(4096).setSeqno(1)
        .setLastPacketInBlock(false).setDataLen(100).build();
    RegisteredBuffer at0 = MessageCodec.begin(pool, MessageKind.DATA_PACKET, 9, h, 4 + 100);
    RegisteredBuffer later = pool.allocate(8192);
    int start = 1000;
    MessageCodec.beginAt(later, start, MessageKind.DATA_PACKET, 9, h, 4 + 100);
    assertEquals(start + MessageCodec.FIXED_BYTES + h.getSerializedSize(), later.nio().position(),
        "the payload starts after the headers");
    for (int i = 0; i < 104; i++) {
      at0.nio().put((byte) i);
      later.nio().put((byte) i);
    }
    MessageCodec.finish(at0);
    MessageCodec.finish(later, start);
    assertEquals(start, later.nio().position(), "ready to send from where the message begins");
    assertEquals(at0.nio(), later.nio(), "the bytes sent are the same");
    Message d = MessageCodec.decode(later);
    assertEquals(h, d.packetHeader());
    assertEquals(104, d.payload().remaining());
    assertEquals(103, d.payload().get(103));
    d.release();
    at0.release();
    RegisteredBuffer small = pool.allocate(4096);
    try {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> MessageCodec.beginAt(small, 4000, MessageKind.DATA_PACKET, 9, h, 104));
      assertTrue(e.getMessage().contains("does not fit"), e.getMessage());
      assertThrows(IllegalArgumentException.class,
          () -> MessageCodec.beginAt(small, -1, MessageKind.DATA_PACKET, 9, h, 104));
    } finally {
      small.release();
    }
  }

  private ProtocolException bad(byte[] bytes) throws Exception {
    RegisteredBuffer m = pool.allocate(Math.max(1, bytes.length));
    m.nio().put(0, bytes).limit(bytes.length);
    try {
      return assertThrows(ProtocolException.class, () -> MessageCodec.decode(m));
    } finally {
      m.release();
    }
  }

  private static byte[] fixed(int version, int kind, int flags, long headerLen, long id, int extra) {
    ByteBuffer b = ByteBuffer.allocate(MessageCodec.FIXED_BYTES + extra);
    b.put((byte) version).put((byte) kind).putShort((short) flags).putInt((int) headerLen).putLong(id);
    return b.array();
  }

  @Test
  void everyBadInputIsAClearProtocolException() throws Exception {
    assertTrue(bad(new byte[0]).getMessage().contains("shorter than"));
    assertTrue(bad(new byte[15]).getMessage().contains("shorter than"));
    assertTrue(bad(fixed(2, 0x10, 0, 0, 1, 0)).getMessage().contains("version 2"));
    assertTrue(bad(fixed(1, 0x55, 0, 0, 1, 0)).getMessage().contains("unknown message kind 0x55"));
    assertTrue(bad(fixed(1, 0x10, 4, 0, 1, 0)).getMessage().contains("flags"));
    assertTrue(bad(fixed(1, 0x10, 0, 11, 1, 10)).getMessage().contains("runs past the end"));
    ProtocolException big = bad(fixed(1, 0x10, 0, (64 << 10) + 1, 1, 0));
    assertTrue(big.getMessage().contains("exceeds"), big.getMessage());
    assertTrue(bad(fixed(1, 0x10, 0, 0xffffffffL, 1, 0)).getMessage().contains("exceeds"),
        "headerLen as unsigned u32");
    assertTrue(bad(fixed(1, MessageKind.WRITE_REQUEST.code(), 0, 0, 1, 0)).getMessage()
        .contains("not a valid WRITE_REQUEST"));
    assertTrue(bad(fixed(1, MessageKind.PIPELINE_ACK.code(), 0, 0, 1, 0)).getMessage()
        .contains("not a valid PIPELINE_ACK"));
    // a READ_REQUEST with an empty header misses its required fields
    assertTrue(bad(fixed(1, 0x10, 0, 0, 1, 0)).getMessage().contains("not a valid READ_REQUEST"));
    byte[] garbage = fixed(1, 0x12, 0, 4, 1, 4);
    System.arraycopy(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff}, 0, garbage, 16, 4);
    assertTrue(bad(garbage).getMessage().contains("not a valid DATA_PACKET"));
    byte[] info = fixed(1, 0x01, 0, 2, 1, 2);
    assertTrue(bad(info).getMessage().contains("INFO_REQUEST"));
    byte[] infoReply = fixed(1, 0x02, 0, 3, 1, 3);
    infoReply[16] = 0x0a; // field 1, length-delimited
    infoReply[17] = 0x7f; // 127 bytes that are not there
    assertTrue(bad(infoReply).getMessage().contains("INFO_REPLY"));
  }

  @Test
  void everyTruncationOfAValidMessageIsRefused() throws Exception {
    ExtendedBlock block = new ExtendedBlock("BP-7", 42, 0, 1);
    RegisteredBuffer m = MessageCodec.encode(pool, MessageKind.READ_REQUEST, 1,
        BlockOps.readBlock(block, null, "c", 0, 10), null);
    try {
      for (int n = 0; n < m.readableBytes(); n++) {
        ByteBuffer cut = m.nio().duplicate().limit(n);
        assertThrows(ProtocolException.class, () -> MessageCodec.decode(cut), "cut at " + n);
      }
    } finally {
      m.release();
    }
  }

  @Test
  void encodeRefusesOversizedHeadersAndReservedKinds() throws Exception {
    InfoReply huge = new InfoReply("u".repeat(70_000), 1, List.of());
    assertThrows(IllegalArgumentException.class, () -> MessageCodec.encodeInfoReply(pool, 1, huge));
    java.util.Set<MessageKind> reserved = java.util.EnumSet.of(MessageKind.LOCAL_PATH_REQUEST,
        MessageKind.LOCAL_PATH_REPLY); // the old path-handing short-circuit: codes kept, never reused
    for (MessageKind k : MessageKind.values()) {
      assertEquals(!reserved.contains(k), k.implemented(), k + " has a codec unless reserved");
    }
    assertEquals(0x14, MessageKind.LOCAL_PATH_REQUEST.code());
    assertEquals(0x15, MessageKind.LOCAL_PATH_REPLY.code());
    for (MessageKind k : reserved) {
      assertThrows(IllegalArgumentException.class, () -> MessageCodec.encode(pool, k, 1, null), k.toString());
      // a peer that still sends one gets a clear error, not a crash
      ByteBuffer b = ByteBuffer.allocate(MessageCodec.FIXED_BYTES);
      RegisteredBuffer info = MessageCodec.encode(pool, MessageKind.INFO_REQUEST, 7, null);
      try {
        b.put(info.nio().duplicate()).flip();
      } finally {
        info.release();
      }
      b.put(1, (byte) k.code()); // the kind byte
      ProtocolException e = assertThrows(ProtocolException.class, () -> MessageCodec.decode(b), k.toString());
      assertTrue(e.getMessage().contains("reserved"), e.getMessage());
    }
    assertNull(MessageKind.of(0x55));
    assertEquals(MessageKind.ERROR, MessageKind.of(0x7f));
  }

  private static DatanodeInfo dn(int i) {
    return new DatanodeInfo.DatanodeInfoBuilder().setNodeID(new DatanodeID("10.0.0." + i, "host" + i,
        "uuid-" + i, 9866 + i, 9864, 9865, 9867)).build();
  }

  @Test
  void writeRequestRoundTripAndForwarding() throws Exception {
    ExtendedBlock block = new ExtendedBlock("BP-7", 1073741826L, 0, 1002);
    Token<BlockTokenIdentifier> token = new Token<>(new byte[] {9}, new byte[] {8, 7},
        new Text("HDFS_BLOCK_TOKEN"), new Text("svc"));
    DatanodeInfo[] nodes = {dn(1), dn(2), dn(3)};
    StorageType[] types = {StorageType.DISK, StorageType.SSD, StorageType.ARCHIVE};
    String[] ids = {"DS-1", "DS-2", "DS-3"};
    DataChecksum sum = DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, 512);
    OpWriteBlockProto op = BlockOps.writeBlock(block, token, "client-w", nodes, types, ids, sum);
    decodeAndRelease(MessageCodec.encode(pool, MessageKind.WRITE_REQUEST, 11, op, null), d -> {
      try {
        OpWriteBlockProto w = d.writeRequest();
        assertEquals(op, w);
        assertEquals(block, BlockOps.block(w));
        assertEquals(token, BlockOps.token(w));
        assertEquals(OpWriteBlockProto.BlockConstructionStage.PIPELINE_SETUP_CREATE, w.getStage());
        assertEquals(3, w.getPipelineSize());
        assertEquals(1002, w.getLatestGenerationStamp());
        assertEquals(0, w.getMinBytesRcvd());
        assertEquals(0, w.getMaxBytesRcvd());
        assertEquals(sum, BlockOps.requestedChecksum(w));
        assertEquals(2, BlockOps.targets(w).length);
        assertEquals("uuid-2", BlockOps.targets(w)[0].getDatanodeUuid());
        assertEquals(StorageType.DISK, BlockOps.storageType(w));
        assertEquals("DS-1", BlockOps.storageId(w));
        assertEquals(List.of(types), List.of(BlockOps.pipelineStorageTypes(w)));
        assertEquals(List.of(ids), List.of(BlockOps.pipelineStorageIds(w)));
      } catch (ProtocolException e) {
        throw new AssertionError(e);
      }
    });
    OpWriteBlockProto second = BlockOps.forwardWriteBlock(op);
    assertEquals(1, second.getTargetsCount());
    assertEquals("uuid-3", BlockOps.targets(second)[0].getDatanodeUuid());
    assertEquals(StorageType.SSD, BlockOps.storageType(second));
    assertEquals("DS-2", BlockOps.storageId(second));
    assertEquals(List.of(StorageType.SSD, StorageType.ARCHIVE), List.of(BlockOps.pipelineStorageTypes(second)));
    assertEquals(List.of("DS-2", "DS-3"), List.of(BlockOps.pipelineStorageIds(second)));
    OpWriteBlockProto third = BlockOps.forwardWriteBlock(second);
    assertEquals(0, third.getTargetsCount());
    assertEquals("DS-3", BlockOps.storageId(third));
    assertEquals(StorageType.ARCHIVE, BlockOps.storageType(third));
    assertEquals(0, BlockOps.pipelineStorageIds(third).length);
    assertEquals(op.getHeader(), third.getHeader());
    assertThrows(IllegalArgumentException.class, () -> BlockOps.forwardWriteBlock(third));
  }

  @Test
  void writeResponsePacketAndAckRoundTrip() throws Exception {
    BlockOpResponseProto ok = BlockOps.writeResponse(Status.SUCCESS, "", null);
    decodeAndRelease(MessageCodec.encode(pool, MessageKind.WRITE_RESPONSE, 3, ok, null), d -> {
      try {
        assertEquals(Status.SUCCESS, d.writeResponse().getStatus());
        assertEquals("", d.writeResponse().getFirstBadLink());
      } catch (ProtocolException e) {
        throw new AssertionError(e);
      }
    });
    BlockOpResponseProto bad = BlockOps.writeResponse(Status.ERROR, "10.0.0.2:9868", "x".repeat(5000));
    decodeAndRelease(MessageCodec.encode(pool, MessageKind.WRITE_RESPONSE, 3, bad, null), d -> {
      try {
        assertEquals(Status.ERROR, d.writeResponse().getStatus());
        assertEquals("10.0.0.2:9868", d.writeResponse().getFirstBadLink());
        assertTrue(d.writeResponse().getMessage().length() <= BlockOps.MAX_ERROR_CHARS + 3);
      } catch (ProtocolException e) {
        throw new AssertionError(e);
      }
    });
    // a write packet: checksums then data, syncBlock carried
    PacketHeaderProto h = BlockOps.packetHeader(7, 65536, false, 513, true);
    ByteBuffer body = ByteBuffer.allocate(8 + 513);
    body.putInt(0x01020304).putInt(0x05060708).position(body.capacity());
    decodeAndRelease(MessageCodec.encode(pool, MessageKind.DATA_PACKET, 3, h, body.flip()), d -> {
      try {
        PacketHeaderProto p = d.packetHeader();
        assertEquals(7, p.getSeqno());
        assertEquals(65536, p.getOffsetInBlock());
        assertEquals(513, p.getDataLen());
        assertTrue(p.getSyncBlock());
        assertEquals(8 + 513, d.payload().remaining());
        assertEquals(0x01020304, d.payload().getInt(0));
      } catch (ProtocolException e) {
        throw new AssertionError(e);
      }
    });
    PipelineAckProto ack = BlockOps.pipelineAck(7, List.of(Status.SUCCESS, Status.ERROR_CHECKSUM, Status.SUCCESS));
    decodeAndRelease(MessageCodec.encode(pool, MessageKind.PIPELINE_ACK, 3, ack, null), d -> {
      try {
        PipelineAckProto a = d.pipelineAck();
        assertEquals(7, a.getSeqno());
        assertEquals(List.of(Status.SUCCESS, Status.ERROR_CHECKSUM, Status.SUCCESS), a.getReplyList());
        assertEquals(List.of(Status.SUCCESS, Status.ERROR_CHECKSUM, Status.SUCCESS), BlockOps.ackStatuses(a));
        // the stock reader of flags sees the same statuses
        org.apache.hadoop.hdfs.protocol.datatransfer.PipelineAck stock =
            new org.apache.hadoop.hdfs.protocol.datatransfer.PipelineAck();
        java.io.ByteArrayOutputStream bo = new java.io.ByteArrayOutputStream();
        a.writeDelimitedTo(bo);
        stock.readFields(new java.io.ByteArrayInputStream(bo.toByteArray()));
        assertEquals(Status.ERROR_CHECKSUM,
            org.apache.hadoop.hdfs.protocol.datatransfer.PipelineAck.getStatusFromHeader(stock.getHeaderFlag(1)));
        assertEquals(7, stock.getSeqno());
      } catch (java.io.IOException e) {
        throw new AssertionError(e);
      }
    });
    assertEquals(List.of(Status.ERROR), BlockOps.ackStatuses(PipelineAckProto.newBuilder().setSeqno(1)
        .addReply(Status.ERROR).build()));
  }

  @Test
  void heartbeatsAndTheWriteResponseThatOffersThem() throws Exception {
    // stock's heartbeat: seqno -1, offset 0, no data, not the last; no payload
    decodeAndRelease(MessageCodec.encode(pool, MessageKind.DATA_PACKET, 5, BlockOps.heartbeatHeader(), null), d -> {
      try {
        PacketHeaderProto p = d.packetHeader();
        assertTrue(BlockOps.isHeartbeat(p));
        assertEquals(org.apache.hadoop.hdfs.DFSPacket.HEART_BEAT_SEQNO, p.getSeqno());
        assertEquals(0, p.getOffsetInBlock());
        assertEquals(0, p.getDataLen());
        assertEquals(false, p.getLastPacketInBlock());
        assertEquals(0, d.payload().remaining());
      } catch (ProtocolException e) {
        throw new AssertionError(e);
      }
    });
    assertEquals(false, BlockOps.isHeartbeat(BlockOps.packetHeader(0, 0, false, 0, false)));
    // the offer survives the wire; a response without it (an earlier DataNode's) and an error offer nothing
    decodeAndRelease(MessageCodec.encode(pool, MessageKind.WRITE_RESPONSE, 3, BlockOps.writeResponseOk(true), null),
        d -> {
          try {
            assertEquals(Status.SUCCESS, d.writeResponse().getStatus());
            assertTrue(BlockOps.takesHeartbeats(d.writeResponse()));
          } catch (ProtocolException e) {
            throw new AssertionError(e);
          }
        });
    assertEquals(false, BlockOps.takesHeartbeats(BlockOps.writeResponseOk(false)));
    assertEquals(false, BlockOps.takesHeartbeats(BlockOps.writeResponse(Status.SUCCESS, "", null)));
    assertEquals(false, BlockOps.takesHeartbeats(BlockOps.writeResponse(Status.ERROR, "a:1", "no")));
    // a parser that does not know the field (stock's, an earlier version's) reads the response as before
    BlockOpResponseProto stock = BlockOpResponseProto.parseFrom(BlockOps.writeResponseOk(true).toByteArray());
    assertEquals(Status.SUCCESS, stock.getStatus());
    assertEquals("", stock.getFirstBadLink());
  }

  @Test
  void outOfBandAcksAreOfferedByTheWriterAndNamedByIndex() throws Exception {
    ExtendedBlock block = new ExtendedBlock("BP-7", 1073741827L, 0, 1003);
    DatanodeInfo[] nodes = {dn(1), dn(2), dn(3)};
    DataChecksum sum = DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, 512);
    OpWriteBlockProto op = BlockOps.writeBlock(block, null, "client-o", nodes, null, null, sum);
    OpWriteBlockProto rec = BlockOps.recoverBlock(block, null, "client-o", nodes, null, null, sum,
        OpWriteBlockProto.BlockConstructionStage.PIPELINE_SETUP_STREAMING_RECOVERY, 0, 0, 1004);
    assertTrue(BlockOps.takesOobAcks(op));
    assertTrue(BlockOps.takesOobAcks(rec));
    // the offer survives the wire and each DataNode's forwarding (the whole chain upstream takes them)
    decodeAndRelease(MessageCodec.encode(pool, MessageKind.WRITE_REQUEST, 12, op, null), d -> {
      try {
        OpWriteBlockProto w = d.writeRequest();
        assertTrue(BlockOps.takesOobAcks(w));
        assertTrue(BlockOps.takesOobAcks(BlockOps.forwardWriteBlock(BlockOps.forwardWriteBlock(w))));
      } catch (ProtocolException e) {
        throw new AssertionError(e);
      }
    });
    // an earlier writer's request (no such field) takes none; a stock parser reads ours as before
    OpWriteBlockProto earlier = op.toBuilder().setUnknownFields(
        org.apache.hadoop.thirdparty.protobuf.UnknownFieldSet.getDefaultInstance()).build();
    assertEquals(false, BlockOps.takesOobAcks(earlier));
    assertEquals(op.getStage(), OpWriteBlockProto.parseFrom(op.toByteArray()).getStage());
    // a DataNode's own OOB_RESTART, and one relayed by the node before it
    PipelineAckProto own = BlockOps.oobRestartAck();
    assertEquals(BlockOps.OOB_SEQNO, own.getSeqno());
    assertEquals(List.of(Status.OOB_RESTART), BlockOps.ackStatuses(own));
    assertEquals(0, BlockOps.oobIndex(own));
    PipelineAckProto relayed = BlockOps.pipelineAck(BlockOps.OOB_SEQNO, List.of(Status.SUCCESS, Status.OOB_RESTART));
    assertEquals(1, BlockOps.oobIndex(PipelineAckProto.parseFrom(relayed.toByteArray())));
    // an ordinary ack names none, whatever its statuses; nor does an error at seqno -2
    assertEquals(-1, BlockOps.oobIndex(BlockOps.pipelineAck(5, List.of(Status.SUCCESS, Status.ERROR))));
    assertEquals(-1, BlockOps.oobIndex(BlockOps.pipelineAck(BlockOps.OOB_SEQNO, List.of(Status.ERROR))));
    assertTrue(BlockOps.isOob(Status.OOB_RESERVED3));
    assertEquals(false, BlockOps.isOob(Status.ERROR_CHECKSUM));
  }
}
