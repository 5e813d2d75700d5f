package org.hdfsrdma.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.thirdparty.protobuf.UnknownFieldSet;
import org.junit.jupiter.api.Test;

/** The short-circuit reply's cached flag: carried through the wire, ignored by what does not know it. */
class ShortCircuitSocketTest {
  @Test
  void theCachedFlagSurvivesTheWireAndIsOnlyThereWhenSet() throws Exception {
    BlockOpResponseProto cached = BlockOpResponseProto.parseFrom(ShortCircuitSocket.granted(true).toByteArray());
    BlockOpResponseProto plain = BlockOpResponseProto.parseFrom(ShortCircuitSocket.granted(false).toByteArray());
    assertTrue(ShortCircuitSocket.cached(cached));
    assertFalse(ShortCircuitSocket.cached(plain));
    for (BlockOpResponseProto r : new BlockOpResponseProto[] {cached, plain}) {
      assertEquals(Status.SUCCESS, r.getStatus());
      assertEquals(ShortCircuitSocket.BLOCK_FORMAT_VERSION, r.getShortCircuitAccessVersion());
    }
    // stock's fields read the same with and without it: the flag is an unknown field to stock
    UnknownFieldSet none = UnknownFieldSet.getDefaultInstance();
    assertEquals(plain, cached.toBuilder().setUnknownFields(none).build());
    assertEquals(none, plain.getUnknownFields());
    assertFalse(ShortCircuitSocket.cached(BlockOpResponseProto.newBuilder().setStatus(Status.SUCCESS).build()),
        "a reply without the field (an older plugin): not cached");
  }

  @Test
  void theResidencyProbeAndItsAnswerSurviveTheWire() throws Exception {
    org.apache.hadoop.hdfs.protocol.ExtendedBlock b = new org.apache.hadoop.hdfs.protocol.ExtendedBlock("bp", 7, 1L << 27, 3);
    var asked = org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto
        .parseFrom(ShortCircuitSocket.request(b, null, 4096, 1L << 27).toByteArray());
    assertEquals(4096, ShortCircuitSocket.probe(asked)[0]);
    assertEquals(1L << 27, ShortCircuitSocket.probe(asked)[1]);
    assertEquals(b, ShortCircuitSocket.block(asked));
    var plain = org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpRequestShortCircuitAccessProto
        .parseFrom(ShortCircuitSocket.request(b, null).toByteArray());
    assertEquals(null, ShortCircuitSocket.probe(plain), "no probe unless asked");
    assertEquals(plain, asked.toBuilder().setUnknownFields(UnknownFieldSet.getDefaultInstance()).build(),
        "stock's fields unchanged by the probe");

    BlockOpResponseProto said = BlockOpResponseProto.parseFrom(ShortCircuitSocket.granted(true, 5L << 30)
        .toByteArray());
    assertEquals(5L << 30, ShortCircuitSocket.resident(said));
    assertTrue(ShortCircuitSocket.cached(said));
    BlockOpResponseProto none = BlockOpResponseProto.parseFrom(ShortCircuitSocket.granted(false, 0).toByteArray());
    assertEquals(0, ShortCircuitSocket.resident(none));
    assertFalse(ShortCircuitSocket.cached(none));
    assertEquals(-1, ShortCircuitSocket.resident(ShortCircuitSocket.granted(true)), "not said unless probed");
  }
}
