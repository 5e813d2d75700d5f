package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ProtocolException;
import java.nio.ByteBuffer;
import java.util.List;
import org.hdfsrdma.datanode.PluginMessages.Info;
import org.hdfsrdma.transport.BufferPool;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.SlabAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class PluginMessagesTest {
  private final BufferPool pool = new BufferPool(SlabAllocator.DIRECT, 1 << 20, 8 << 20);

  @AfterEach
  void noLeak() {
    assertEquals(0, pool.buffersOutstanding());
    pool.close();
  }

  private static ByteBuffer copy(RegisteredBuffer m) {
    ByteBuffer b = ByteBuffer.allocate(m.readableBytes());
    b.put(m.nio().duplicate()).flip();
    m.release();
    return b;
  }

  @Test
  void infoRoundTrip() throws Exception {
    ByteBuffer req = copy(PluginMessages.infoRequest(pool));
    assertEquals(PluginMessages.OP_INFO, PluginMessages.requestOp(req));
    Info info = new Info("dn-uuid-\u00e9", 40123, List.of("BP-1", "BP-2"));
    assertEquals(info, PluginMessages.decodeInfoReply(copy(PluginMessages.infoReply(pool, info))));
  }

  @Test
  void errorReplyIsARemoteError() throws Exception {
    ByteBuffer r = copy(PluginMessages.errorReply(pool, PluginMessages.OP_INFO, "no such op"));
    PluginMessages.RemoteError e = assertThrows(PluginMessages.RemoteError.class,
        () -> PluginMessages.decodeInfoReply(r));
    assertTrue(e.getMessage().contains("no such op"), e.getMessage());
  }

  @Test
  void refusesGarbage() throws Exception {
    assertThrows(ProtocolException.class, () -> PluginMessages.requestOp(ByteBuffer.wrap(new byte[] {1})));
    assertThrows(ProtocolException.class, () -> PluginMessages.requestOp(ByteBuffer.wrap(new byte[] {9, 1})));
    assertThrows(ProtocolException.class, () -> PluginMessages.requestOp(ByteBuffer.wrap(new byte[] {1, 7})));
    ByteBuffer full = copy(PluginMessages.infoReply(pool, new Info("u", 1, List.of("BP-1"))));
    for (int n = 0; n < full.limit(); n++) {
      ByteBuffer cut = full.duplicate().limit(n);
      assertThrows(ProtocolException.class, () -> PluginMessages.decodeInfoReply(cut), "cut at " + n);
    }
  }
}
