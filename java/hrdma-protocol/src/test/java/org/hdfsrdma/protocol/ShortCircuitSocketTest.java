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
}
