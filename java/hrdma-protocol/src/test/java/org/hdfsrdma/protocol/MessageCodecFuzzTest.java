package org.hdfsrdma.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.net.ProtocolException;
import java.nio.ByteBuffer;
import java.util.List;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpReadBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.thirdparty.protobuf.MessageLite;
import org.hdfsrdma.transport.BufferPool;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.SlabAllocator;
import org.junit.jupiter.api.AfterAll;

/**
 * Coverage-guided fuzzing of {@link MessageCodec#decode} and of what the DataNode and the
 * client read out of a decoded header before they act on it. Properties: bytes from a peer
 * are a message or a {@link ProtocolException}, nothing else; a decoded message encodes back
 * to one that decodes equal (kind, request id, header, payload); the accessors the
 * DataNode's request checks and the client's ack handling call give an answer (or, where
 * the caller catches it, the documented refusal) for every decodable header; every buffer
 * goes back to the pool. Seeds: {@code MessageCodecFuzzTestInputs/decode/}.
 */
class MessageCodecFuzzTest {
  /** Messages here are at most a fuzzer input plus the fixed header: 1 MiB classes suffice. */
  private static final BufferPool POOL = new BufferPool(SlabAllocator.DIRECT, 1 << 20, 64 << 20);

  @AfterAll
  static void closePool() {
    assertEquals(0, POOL.buffersOutstanding(), "buffers leaked");
    POOL.close();
  }

  @FuzzTest(maxDuration = "30s")
  void decode(byte[] input) throws Exception {
    RegisteredBuffer wire = POOL.allocate(Math.max(1, input.length));
    try {
      wire.nio().put(input).flip();
      Message m;
      try {
        m = MessageCodec.decode(wire);
      } catch (ProtocolException expected) {
        return;
      }
      assertEquals(0, wire.nio().position(), "decode moved the buffer's position");
      act(m);
      roundTrip(m);
    } finally {
      wire.release();
      assertEquals(0, POOL.buffersOutstanding(), "buffers leaked");
    }
  }

  /** What the receivers do with a header before acting on it. */
  private static void act(Message m) throws ProtocolException {
    switch (m.kind()) {
      case READ_REQUEST -> {
        OpReadBlockProto op = m.readRequest();
        assertNotNull(BlockOps.block(op));
        BlockOps.token(op);
      }
      case WRITE_REQUEST -> {
        OpWriteBlockProto op = m.writeRequest();
        assertNotNull(BlockOps.block(op));
        BlockOps.token(op);
        BlockOps.pipelineStorageTypes(op);
        BlockOps.pipelineStorageIds(op);
        BlockOps.storageType(op);
        BlockOps.storageId(op);
        BlockOps.targets(op);
        try {
          BlockOps.requestedChecksum(op); // the DataNode refuses what this throws (ERROR_INVALID)
        } catch (IllegalArgumentException refused) {
          // an unknown type or a bad chunk size: refused
        }
        if (op.getTargetsCount() > 0) {
          OpWriteBlockProto f = BlockOps.forwardWriteBlock(op);
          assertEquals(op.getTargetsCount() - 1, f.getTargetsCount());
        }
      }
      case PIPELINE_ACK -> {
        List<Status> s = BlockOps.ackStatuses(m.pipelineAck());
        for (Status x : s) {
          assertNotNull(x, "an ack status the writers cannot read");
        }
      }
      case INFO_REPLY -> {
        InfoReply r = m.infoReply();
        assertTrue(r.xferPort() >= 0 && r.xferPort() <= 65535);
        assertTrue(r.blockPoolIds().size() <= InfoReply.MAX_POOLS);
      }
      default -> {
        // the rest are read field by field by their receivers
      }
    }
  }

  private static void roundTrip(Message m) throws Exception {
    Object header = m.header();
    ByteBuffer payload = m.payload();
    RegisteredBuffer again;
    if (header instanceof InfoReply r) {
      if (payload.hasRemaining()) {
        return; // INFO_REPLY is encoded without payload
      }
      again = MessageCodec.encodeInfoReply(POOL, m.requestId(), r);
    } else if (header instanceof com.google.protobuf.MessageLite own) {
      if (payload.hasRemaining()) {
        return; // our own headers are encoded without payload
      }
      again = MessageCodec.encode(POOL, m.kind(), m.requestId(), own);
    } else {
      again = MessageCodec.encode(POOL, m.kind(), m.requestId(), (MessageLite) header, payload);
    }
    try {
      Message d = MessageCodec.decode(again);
      assertEquals(m.kind(), d.kind());
      assertEquals(m.requestId(), d.requestId());
      assertEquals(header, d.header());
      assertArrayEquals(bytes(payload), bytes(d.payload()));
    } finally {
      again.release();
    }
  }

  private static byte[] bytes(ByteBuffer b) {
    byte[] a = new byte[b.remaining()];
    b.duplicate().get(a);
    return a;
  }
}
