package org.hdfsrdma.protocol;

/**
 * What a message is; the {@code kind} byte of the fixed header (see
 * {@link MessageCodec}). Codes are part of the wire format: never renumber.
 */
public enum MessageKind {
  /** Client asks the DataNode who it is. Header: empty. */
  INFO_REQUEST(0x01, true),
  /** Header: {@link InfoReply} (our own message, protobuf encoded). */
  INFO_REPLY(0x02, true),
  /** Header: {@code OpReadBlockProto}. */
  READ_REQUEST(0x10, true),
  /** Header: {@code BlockOpResponseProto} with {@code ReadOpChecksumInfoProto}. */
  READ_RESPONSE(0x11, true),
  /**
   * Header: {@code PacketHeaderProto}; payload: checksums, then data (HDFS's packet body). In a
   * write, seqno -1 with no data is a heartbeat ({@link BlockOps#HEARTBEAT_SEQNO}), as in stock.
   */
  DATA_PACKET(0x12, true),
  /** Header: {@code ClientReadStatusProto}. */
  READ_STATUS(0x13, true),
  /**
   * Unused, reserved (never reuse the code): a replica's file paths for a
   * same-host client. Short-circuit reads now get open descriptors over the
   * DataNode's Unix domain socket instead ({@link ShortCircuitSocket}).
   */
  LOCAL_PATH_REQUEST(0x14, false),
  /** Unused, reserved (never reuse the code): the answer to LOCAL_PATH_REQUEST. */
  LOCAL_PATH_REPLY(0x15, false),
  /**
   * A client on the DataNode's own host asks for a shared-memory segment to receive read
   * packets by reference. Header: {@code hrdma.v1.ShmRequest} (the client's host). Answered
   * with SHM_GRANT or an ERROR (ERROR_UNSUPPORTED: not here, not to this client).
   */
  SHM_REQUEST(0x16, true),
  /** Header: {@code hrdma.v1.ShmGrant}: the segment's file and size. */
  SHM_GRANT(0x17, true),
  /** The client has mapped the granted segment (the DataNode removes its file). Header: empty. */
  SHM_MAPPED(0x18, true),
  /**
   * A DATA_PACKET of the request, whole, in the connection's segment. Header:
   * {@code hrdma.v1.ShmRef} (where). The client answers SHM_RELEASE when done with it.
   */
  DATA_REF(0x19, true),
  /** The client no longer reads a DATA_REF's packet. Header: {@code hrdma.v1.ShmRelease}. */
  SHM_RELEASE(0x1a, true),
  /**
   * The client cannot map the granted segment (another user's file, another /dev/shm) or
   * gave up waiting for it: the DataNode frees it now, not when the connection ends. Header: empty.
   */
  SHM_DECLINED(0x1b, true),
  /**
   * The sender of a write's packets (a client, or a DataNode forwarding downstream) on the
   * receiving DataNode's host asks for a shared-memory segment to send packets by reference.
   * Header: {@code hrdma.v1.ShmRequest} (the sender's host, a block and its token). Answered
   * with WRITE_SHM_GRANT or an ERROR.
   */
  WRITE_SHM_REQUEST(0x1c, true),
  /**
   * Header: {@code hrdma.v1.WriteShmGrant}: a one-time id for the DataNode's Unix domain
   * socket, which passes the segment's descriptor; the segment's and its slots' sizes.
   */
  WRITE_SHM_GRANT(0x1d, true),
  /**
   * A DATA_PACKET of the request, whole, at a slot of the connection's write segment. Header:
   * {@code hrdma.v1.ShmRef}. The DataNode copies it out, answers WRITE_SHM_RELEASE, and takes
   * the copy as the DATA_PACKET, in this message's place in the connection's order.
   */
  WRITE_REF(0x1e, true),
  /** The DataNode has copied a WRITE_REF's packet: its slot is the sender's again. Header: {@code hrdma.v1.ShmRelease}. */
  WRITE_SHM_RELEASE(0x1f, true),
  /**
   * The data transfer protection handshake (docs/security.md), both ways, before any other
   * message on a connection whose DataNode asks for protection. Header:
   * {@code DataTransferEncryptorMessageProto} (the SASL bytes, or a status and message);
   * payload: empty, or a sasl-wrapped {@code hrdma.v1.WireKeys}.
   */
  SASL_HANDSHAKE(0x30, true),
  /** Header: {@code BlockOpResponseProto}, status not SUCCESS, with a message. */
  ERROR(0x7f, true),
  /**
   * Opens a block write (pipeline setup). Header: {@code OpWriteBlockProto} as
   * the stock client fills it: {@code targets} are the DataNodes downstream of
   * the receiver, {@code storageType}/{@code storageId} the receiver's own.
   * DATA_PACKETs with the same request id follow (payload: checksums, then data).
   */
  WRITE_REQUEST(0x20, true),
  /** Header: {@code BlockOpResponseProto}: the pipeline is set up, or not ({@code firstBadLink}). */
  WRITE_RESPONSE(0x21, true),
  /** Header: {@code PipelineAckProto}: a packet's seqno and one status per DataNode, in pipeline order. */
  PIPELINE_ACK(0x22, true);

  private static final MessageKind[] BY_CODE = new MessageKind[256];

  static {
    for (MessageKind k : values()) {
      BY_CODE[k.code] = k;
    }
  }

  private final int code;
  private final boolean implemented;

  MessageKind(int code, boolean implemented) {
    this.code = code;
    this.implemented = implemented;
  }

  /** The wire code (0-255). */
  public int code() {
    return code;
  }

  /** False for kinds that are reserved but have no codec yet. */
  public boolean implemented() {
    return implemented;
  }

  /** The kind with wire code {@code code}, or null. */
  public static MessageKind of(int code) {
    return code < 0 || code > 255 ? null : BY_CODE[code];
  }
}
