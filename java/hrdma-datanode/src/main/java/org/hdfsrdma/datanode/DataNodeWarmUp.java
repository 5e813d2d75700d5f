package org.hdfsrdma.datanode;

import java.nio.ByteBuffer;
import java.util.List;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.protocol.DatanodeID;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PacketHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PipelineAckProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.ChunkSums;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.transport.BufferPool;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.SlabAllocator;

/**
 * What a DataNode's first write would otherwise pay on its own path, done once when the plugin
 * starts, before it listens: the classes of the write path loaded and initialized (Hadoop's data
 * transfer messages and their protobuf descriptors, ours, the handlers' classes), and the code
 * that builds, encodes, decodes and checksums a write's messages run once, so that the first
 * pipeline on a fresh DataNode does not load about 450 classes and interpret (and have the JIT
 * compile) their first runs while a client waits at every hop (docs/benchmarks.md).
 *
 * <p>It opens no port, connects to nothing, touches no volume and makes no replica: everything
 * runs on made-up messages in a small direct-memory pool of its own that it closes (a leak of one
 * of its buffers fails the warm-up). A failure is the caller's to log; the plugin serves as it
 * would have without it. Not thread-safe: one call per plugin start.
 */
final class DataNodeWarmUp {
  /**
   * The write path's classes that the messages below do not reach (they run only with a peer, a
   * replica or a volume): loaded and initialized, nothing run.
   */
  static final List<Class<?>> WRITE_PATH_CLASSES = List.of(WriteHandler.class, PipelineSetup.class,
      BlockWriteTask.class, PacketReceiver.class, AckResponder.class, WriteMirror.class, MirrorPool.class,
      MirrorPool.Pooled.class, MirrorPool.Key.class, ReplicaWriterThread.class, WriterRegistry.class,
      WriteShmHandler.class, WriteShmSegment.class, Connection.class, ReadQueue.class,
      org.hdfsrdma.datanode.compat.RbwReplica.class, org.hdfsrdma.datanode.compat.FaultHooks.class,
      org.hdfsrdma.datanode.disk.DiskRequest.class, org.hdfsrdma.protocol.WriteSegment.class,
      org.hdfsrdma.protocol.SlottedSegment.class, org.hdfsrdma.protocol.ShortCircuitExchange.class,
      org.hdfsrdma.protocol.SegmentFetch.class, org.hdfsrdma.protocol.wire.ClientGate.class,
      org.hdfsrdma.protocol.wire.ProtectedEndpoint.class, org.hdfsrdma.transport.select.HrdmaConnector.class,
      org.hdfsrdma.transport.tcp.TcpBootstrap.class, org.apache.hadoop.hdfs.protocol.datatransfer.PipelineAck.class,
      org.hdfsrdma.datanode.disk.DiskIo.WriteStream.class, org.hdfsrdma.datanode.disk.SchedulerCore.Stream.class,
      org.hdfsrdma.datanode.disk.SchedulerCore.Choice.class, org.hdfsrdma.datanode.disk.VolumeScheduler.IoAction.class,
      org.hdfsrdma.nativelib.NativeShm.class, org.hdfsrdma.nativelib.NativeFiles.class,
      org.hdfsrdma.nativelib.NativeDomainSocket.class, org.hdfsrdma.nativelib.NativeDisk.class);

  /** The same for classes private to their outer class, by name (the warm-up fails on a name that is gone). */
  static final List<String> WRITE_PATH_CLASS_NAMES = List.of(
      ShortCircuitServer.class.getName() + "$Exchange", ShortCircuitServer.class.getName() + "$Passed",
      ShortCircuitServer.class.getName() + "$Deadline", WriterRegistry.class.getName() + "$ReplicaKey",
      org.hdfsrdma.datanode.disk.VolumeScheduler.class.getName() + "$Task");

  private static final int BYTES_PER_CHECKSUM = 512;
  private static final int PACKET_BYTES = 64 << 10;

  private DataNodeWarmUp() {}

  /**
   * Runs the warm-up on the calling thread; returns the number of messages it encoded and
   * decoded.
   *
   * @throws Exception whatever failed (the plugin logs it and serves regardless)
   */
  static int run() throws Exception {
    try (BufferPool pool = new BufferPool(SlabAllocator.DIRECT, 256 << 10, 1 << 20)) {
      return run(pool);
    }
  }

  /** As {@link #run()}, its messages in {@code pool} (the caller's to close). */
  static int run(BufferPool pool) throws Exception {
    ClassLoader loader = DataNodeWarmUp.class.getClassLoader();
    for (Class<?> c : WRITE_PATH_CLASSES) {
      Class.forName(c.getName(), true, loader);
    }
    for (String name : WRITE_PATH_CLASS_NAMES) {
      Class.forName(name, true, loader);
    }
    for (Class<?> c : org.hdfsrdma.datanode.compat.ReplicaClasses.all()) {
      Class.forName(c.getName(), true, c.getClassLoader());
    }
    DataChecksum checksum = DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, BYTES_PER_CHECKSUM);
    ExtendedBlock block = new ExtendedBlock("BP-warm-up", 1L, 0L, 1001L);
    Token<BlockTokenIdentifier> token = new Token<>();
    DatanodeInfo[] nodes = new DatanodeInfo[3];
    for (int i = 0; i < nodes.length; i++) {
      nodes[i] = new DatanodeInfo.DatanodeInfoBuilder().setNodeID(new DatanodeID("127.0.0.1", "localhost",
          "warm-up-" + i, 9866 + i, 9864, 9865, 9867)).build();
    }
    StorageType[] types = {StorageType.DISK, StorageType.DISK, StorageType.DISK};
    String[] ids = {"DS-warm-up-0", "DS-warm-up-1", "DS-warm-up-2"};
    OpWriteBlockProto op = BlockOps.writeBlock(block, token, "warm-up", nodes, types, ids, checksum);
    OpWriteBlockProto forwarded = BlockOps.forwardWriteBlock(op);

    ByteBuffer data = ByteBuffer.allocateDirect(PACKET_BYTES);
    for (int i = 0; i < PACKET_BYTES; i++) {
      data.put(i, (byte) i);
    }
    int chunks = PACKET_BYTES / BYTES_PER_CHECKSUM;
    ByteBuffer sums = ByteBuffer.allocateDirect(chunks * checksum.getChecksumSize());
    checksum.calculateChunkedSums(data, sums);
    ChunkSums.verify(checksum, data, sums, block.toString(), 0);
    ByteBuffer payload = ByteBuffer.allocateDirect(sums.capacity() + PACKET_BYTES);
    payload.put(sums.duplicate()).put(data.duplicate()).flip();

    int messages = 0;
    messages += roundTrip(pool, MessageKind.WRITE_REQUEST, op, null, m -> {
      BlockOps.requestedChecksum(m.writeRequest());
      BlockOps.targets(m.writeRequest());
      BlockOps.token(m.writeRequest());
      BlockOps.pipelineStorageTypes(m.writeRequest());
    });
    messages += roundTrip(pool, MessageKind.WRITE_REQUEST, forwarded, null, m -> BlockOps.block(m.writeRequest()));
    BlockOpResponseProto ok = BlockOps.writeResponse(Status.SUCCESS, "", null);
    messages += roundTrip(pool, MessageKind.WRITE_RESPONSE, ok, null, Message::writeResponse);
    PacketHeaderProto header = PacketHeaderProto.newBuilder().setOffsetInBlock(0).setSeqno(0)
        .setLastPacketInBlock(false).setDataLen(PACKET_BYTES).build();
    messages += roundTrip(pool, MessageKind.DATA_PACKET, header, payload, m -> {
      m.packetHeader();
      ByteBuffer p = m.payload();
      ByteBuffer s = p.duplicate();
      s.limit(s.position() + sums.capacity());
      ByteBuffer d = p.duplicate();
      d.position(d.position() + sums.capacity());
      ChunkSums.verify(checksum, d, s, "warm-up", 0);
    });
    PipelineAckProto ack = BlockOps.pipelineAck(0, List.of(Status.SUCCESS, Status.SUCCESS, Status.SUCCESS));
    messages += roundTrip(pool, MessageKind.PIPELINE_ACK, ack, null, m -> BlockOps.ackHeaders(m.pipelineAck()));
    HrdmaProtos.ShmRef ref = HrdmaProtos.ShmRef.newBuilder().setOffset(0).setLength(PACKET_BYTES).build();
    messages += roundTripOwn(pool, MessageKind.WRITE_REF, ref, Message::writeRef);
    // the write segment's messages (a sender on this host asks, the DataNode grants, slots come back)
    HrdmaProtos.ShmRequest shm = HrdmaProtos.ShmRequest.newBuilder().setHost("warm-up")
        .setBlock(com.google.protobuf.ByteString.copyFrom(PBHelperClient.convert(block).toByteArray())).build();
    messages += roundTripOwn(pool, MessageKind.WRITE_SHM_REQUEST, shm, Message::writeShmRequest);
    HrdmaProtos.WriteShmGrant grant = HrdmaProtos.WriteShmGrant.newBuilder()
        .setGrant(com.google.protobuf.ByteString.copyFrom(new byte[16])).setBytes(1 << 20).setSlotBytes(PACKET_BYTES)
        .build();
    messages += roundTripOwn(pool, MessageKind.WRITE_SHM_GRANT, grant, Message::writeShmGrant);
    HrdmaProtos.ShmRelease release = HrdmaProtos.ShmRelease.newBuilder().setOffset(0).build();
    messages += roundTripOwn(pool, MessageKind.WRITE_SHM_RELEASE, release, Message::writeShmRelease);
    // a connection's hello, as the transports build and parse it
    HrdmaProtos.Hello.parseFrom(HrdmaProtos.Hello.newBuilder().setVersion(1).addTransports("ucx")
        .setClientId("warm-up").build().toByteArray());
    HrdmaProtos.HelloReply.parseFrom(HrdmaProtos.HelloReply.getDefaultInstance().toByteArray());
    if (pool.buffersOutstanding() != 0) {
      throw new IllegalStateException("the warm-up left " + pool.buffersOutstanding() + " buffers unreleased");
    }
    return messages;
  }

  /** What a decoded message is checked with. */
  private interface Check {
    void accept(Message m) throws Exception;
  }

  private static int roundTrip(BufferPool pool, MessageKind kind, org.apache.hadoop.thirdparty.protobuf.MessageLite h,
      ByteBuffer payload, Check check) throws Exception {
    RegisteredBuffer b = MessageCodec.encode(pool, kind, 1, h, payload == null ? null : payload.duplicate());
    return decode(b, kind, check);
  }

  private static int roundTripOwn(BufferPool pool, MessageKind kind, com.google.protobuf.MessageLite h, Check check)
      throws Exception {
    return decode(MessageCodec.encode(pool, kind, 1, h), kind, check);
  }

  private static int decode(RegisteredBuffer b, MessageKind kind, Check check) throws Exception {
    Message m;
    try {
      m = MessageCodec.decode(b);
    } catch (java.net.ProtocolException | RuntimeException e) {
      b.release();
      throw e;
    }
    try {
      if (m.kind() != kind) {
        throw new IllegalStateException("the warm-up's " + kind + " decoded as " + m.kind());
      }
      check.accept(m);
    } finally {
      m.release();
    }
    return 1;
  }
}
