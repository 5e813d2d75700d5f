package org.hdfsrdma.protocol;

import java.net.ProtocolException;
import java.nio.ByteBuffer;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ClientReadStatusProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.DataTransferEncryptorMessageProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpReadBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PacketHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PipelineAckProto;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.transport.RegisteredBuffer;

/**
 * A decoded message: kind, request id, parsed header and a view of the
 * payload in the received buffer. Holds no reference of its own:
 * {@link #release()} releases the received buffer's (the one the handler got),
 * after which the payload must not be touched.
 */
public final class Message {
  private final RegisteredBuffer buffer;
  private final MessageKind kind;
  private final long requestId;
  private final Object header;
  private final ByteBuffer payload;

  Message(RegisteredBuffer buffer, MessageKind kind, long requestId, Object header, ByteBuffer payload) {
    this.buffer = buffer;
    this.kind = kind;
    this.requestId = requestId;
    this.header = header;
    this.payload = payload;
  }

  public MessageKind kind() {
    return kind;
  }

  public long requestId() {
    return requestId;
  }

  /** The parsed header, whatever its kind (null for kinds without one). */
  Object header() {
    return header;
  }

  /** The payload, a view of the received buffer (position 0 to limit); its own position/limit. */
  public ByteBuffer payload() {
    return payload;
  }

  /** The received buffer, or null when decoded from plain bytes. */
  public RegisteredBuffer buffer() {
    return buffer;
  }

  /** Releases the received buffer's reference (once). */
  public void release() {
    if (buffer != null) {
      buffer.release();
    }
  }

  public InfoReply infoReply() throws ProtocolException {
    return header(MessageKind.INFO_REPLY, InfoReply.class);
  }

  public OpReadBlockProto readRequest() throws ProtocolException {
    return header(MessageKind.READ_REQUEST, OpReadBlockProto.class);
  }

  public BlockOpResponseProto readResponse() throws ProtocolException {
    return header(MessageKind.READ_RESPONSE, BlockOpResponseProto.class);
  }

  public PacketHeaderProto packetHeader() throws ProtocolException {
    return header(MessageKind.DATA_PACKET, PacketHeaderProto.class);
  }

  public ClientReadStatusProto readStatus() throws ProtocolException {
    return header(MessageKind.READ_STATUS, ClientReadStatusProto.class);
  }

  public OpWriteBlockProto writeRequest() throws ProtocolException {
    return header(MessageKind.WRITE_REQUEST, OpWriteBlockProto.class);
  }

  public BlockOpResponseProto writeResponse() throws ProtocolException {
    return header(MessageKind.WRITE_RESPONSE, BlockOpResponseProto.class);
  }

  public PipelineAckProto pipelineAck() throws ProtocolException {
    return header(MessageKind.PIPELINE_ACK, PipelineAckProto.class);
  }

  public HrdmaProtos.ShmRequest shmRequest() throws ProtocolException {
    return header(MessageKind.SHM_REQUEST, HrdmaProtos.ShmRequest.class);
  }

  public HrdmaProtos.ShmGrant shmGrant() throws ProtocolException {
    return header(MessageKind.SHM_GRANT, HrdmaProtos.ShmGrant.class);
  }

  public HrdmaProtos.ShmRef shmRef() throws ProtocolException {
    return header(MessageKind.DATA_REF, HrdmaProtos.ShmRef.class);
  }

  public HrdmaProtos.ShmRelease shmRelease() throws ProtocolException {
    return header(MessageKind.SHM_RELEASE, HrdmaProtos.ShmRelease.class);
  }

  public HrdmaProtos.ShmRequest writeShmRequest() throws ProtocolException {
    return header(MessageKind.WRITE_SHM_REQUEST, HrdmaProtos.ShmRequest.class);
  }

  public HrdmaProtos.WriteShmGrant writeShmGrant() throws ProtocolException {
    return header(MessageKind.WRITE_SHM_GRANT, HrdmaProtos.WriteShmGrant.class);
  }

  public HrdmaProtos.ShmRef writeRef() throws ProtocolException {
    return header(MessageKind.WRITE_REF, HrdmaProtos.ShmRef.class);
  }

  public HrdmaProtos.ShmRelease writeShmRelease() throws ProtocolException {
    return header(MessageKind.WRITE_SHM_RELEASE, HrdmaProtos.ShmRelease.class);
  }

  public DataTransferEncryptorMessageProto saslHandshake() throws ProtocolException {
    return header(MessageKind.SASL_HANDSHAKE, DataTransferEncryptorMessageProto.class);
  }

  public BlockOpResponseProto error() throws ProtocolException {
    return header(MessageKind.ERROR, BlockOpResponseProto.class);
  }

  private <T> T header(MessageKind expected, Class<T> type) throws ProtocolException {
    if (kind != expected) {
      throw new ProtocolException("expected " + expected + ", got " + kind + " (request " + requestId + ")");
    }
    return type.cast(header);
  }

  @Override
  public String toString() {
    return kind + "[request " + requestId + ", payload " + payload.remaining() + " bytes]";
  }
}
