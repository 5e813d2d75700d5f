package org.hdfsrdma.datanode.compat;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import javax.crypto.SecretKey;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.HdfsConstants;
import org.apache.hadoop.hdfs.protocol.datatransfer.BlockConstructionStage;
import org.apache.hadoop.hdfs.protocol.datatransfer.IOStreamPair;
import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;
import org.apache.hadoop.hdfs.protocol.datatransfer.Sender;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.CachingStrategyProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PacketHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PipelineAckProto;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.server.datanode.CachingStrategy;
import org.apache.hadoop.hdfs.server.datanode.DNConf;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.io.IOUtils;
import org.apache.hadoop.net.NetUtils;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.DataChecksum;

/**
 * A write forwarded to the next DataNode over stock's DataTransferProtocol, to its xfer
 * address (stock: the mirror socket of DataXceiver#writeBlock), through stock's own classes:
 * the DataNode's socket factory, its {@code SaslDataTransferClient} with its data encryption
 * key factory for the block (the protection the cluster configures toward any DataNode),
 * {@code Sender#writeBlock}, the delimited {@code BlockOpResponseProto}, packets as
 * {@code PacketHeader} then checksums then data, and the downstream's {@code PipelineAckProto}s.
 *
 * <p>Not thread-safe as a whole: one thread sends ({@link #send}, {@link #flush}), one reads
 * ({@link #response}, then {@link #readAck}); {@link #close} may come from any thread and ends
 * both.
 */
public final class StockWriteConnection implements Closeable {
  private static final int COPY_BYTES = 64 << 10;

  private final String name;
  private final Socket socket;
  private final DataOutputStream out;
  private final DataInputStream in;
  private byte[] copy; // the sender's staging buffer for payloads not on the heap

  private StockWriteConnection(String name, Socket socket, DataOutputStream out, DataInputStream in) {
    this.name = name;
    this.socket = socket;
    this.out = out;
    this.in = in;
  }

  /**
   * Connects to the next DataNode of {@code op} (its first target), proves this DataNode as
   * stock's DataXceiver does toward its mirror, and sends the rest of the pipeline's request;
   * everything before {@code deadline} ({@link System#nanoTime()}).
   *
   * @throws IOException the DataNode could not be reached, the negotiation failed, or no time is left
   */
  static StockWriteConnection open(DataNode dn, OpWriteBlockProto op, long deadline) throws IOException {
    if (op.getTargetsCount() == 0) {
      throw new IllegalArgumentException("no downstream target to forward to");
    }
    DNConf conf = dn.getDnConf();
    DatanodeInfo[] targets = PBHelperClient.convert(op.getTargetsList());
    String name = targets[0].getXferAddr(conf.getConnectToDnViaHostname());
    InetSocketAddress address = NetUtils.createSocketAddr(name);
    ExtendedBlock block = PBHelperClient.convert(op.getHeader().getBaseHeader().getBlock());
    Token<BlockTokenIdentifier> token = op.getHeader().getBaseHeader().hasToken()
        ? PBHelperClient.convert(op.getHeader().getBaseHeader().getToken()) : new Token<>();
    // stock's write timeout for its mirror socket; reads are bounded by the deadline, then by the caller
    int writeTimeout = conf.getSocketWriteTimeout() + HdfsConstants.WRITE_TIMEOUT_EXTENSION * targets.length;
    Socket s = dn.newSocket();
    boolean done = false;
    try {
      NetUtils.connect(s, address, timeoutLeft(deadline, name));
      s.setTcpNoDelay(conf.getDataTransferServerTcpNoDelay());
      s.setSoTimeout(timeoutLeft(deadline, name));
      s.setKeepAlive(true);
      if (conf.getTransferSocketSendBufferSize() > 0) {
        s.setSendBufferSize(conf.getTransferSocketSendBufferSize());
      }
      OutputStream rawOut = NetUtils.getOutputStream(s, writeTimeout);
      InputStream rawIn = NetUtils.getInputStream(s);
      SecretKey secretKey = null;
      if (dn.getConf().getBoolean(DFSConfigKeys.DFS_ENCRYPT_DATA_OVERWRITE_DOWNSTREAM_DERIVED_QOP_KEY,
          DFSConfigKeys.DFS_ENCRYPT_DATA_OVERWRITE_DOWNSTREAM_DERIVED_QOP_DEFAULT)) {
        // as stock: the downstream derives its QOP from this DataNode's current block key
        secretKey = dn.getBlockPoolTokenSecretManager().get(block.getBlockPoolId()).getCurrentKey().getKey();
      }
      IOStreamPair sasl = dn.getSaslClient().socketSend(s, rawOut, rawIn,
          dn.getDataEncryptionKeyFactoryForBlock(block), token, targets[0], secretKey);
      DataOutputStream o = new DataOutputStream(new BufferedOutputStream(sasl.out, 4096));
      DataInputStream i = new DataInputStream(new BufferedInputStream(sasl.in, 4096));
      writeRequest(o, op, block, token, targets);
      o.flush();
      done = true;
      return new StockWriteConnection(name, s, o, i);
    } finally {
      if (!done) {
        IOUtils.closeSocket(s);
      }
    }
  }

  /** Stock's request for the DataNodes after this one, with the fields of this DataNode's request. */
  private static void writeRequest(DataOutputStream o, OpWriteBlockProto op, ExtendedBlock block,
      Token<BlockTokenIdentifier> token, DatanodeInfo[] targets) throws IOException {
    StorageType[] types = new StorageType[targets.length];
    for (int i = 0; i < types.length; i++) {
      types[i] = i < op.getTargetStorageTypesCount()
          ? PBHelperClient.convertStorageType(op.getTargetStorageTypes(i)) : StorageType.DEFAULT;
    }
    String[] ids = op.getTargetStorageIdsList().toArray(new String[0]);
    boolean[] pinnings = null;
    if (op.getTargetPinningsCount() > 0) {
      pinnings = new boolean[op.getTargetPinningsCount()];
      for (int i = 0; i < pinnings.length; i++) {
        pinnings[i] = op.getTargetPinnings(i);
      }
    }
    DataChecksum checksum = DataChecksum.newDataChecksum(
        PBHelperClient.convert(op.getRequestedChecksum().getType()),
        op.getRequestedChecksum().getBytesPerChecksum());
    CachingStrategy caching = CachingStrategy.newDefaultStrategy();
    if (op.hasCachingStrategy()) {
      CachingStrategyProto c = op.getCachingStrategy();
      caching = new CachingStrategy(c.hasDropBehind() ? c.getDropBehind() : null,
          c.hasReadahead() ? c.getReadahead() : null);
    }
    // Sender names targets[0] the receiver and sends the rest on, as stock's DataXceiver calls it
    new Sender(o).writeBlock(block, types[0], token, op.getHeader().getClientName(), targets, types,
        op.hasSource() ? PBHelperClient.convert(op.getSource()) : null,
        BlockConstructionStage.valueOf(op.getStage().name()), op.getPipelineSize(), op.getMinBytesRcvd(),
        op.getMaxBytesRcvd(), op.getLatestGenerationStamp(), checksum, caching, op.getAllowLazyPersist(),
        pinnings != null && pinnings[0], pinnings, ids.length > 0 ? ids[0] : null, ids);
  }

  private static int timeoutLeft(long deadline, String name) throws SocketTimeoutException {
    long ms = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
    if (ms <= 0) {
      throw new SocketTimeoutException("no time left to set up the write to " + name);
    }
    return (int) Math.min(Integer.MAX_VALUE, ms);
  }

  /** The next DataNode's xfer address, as stock names it (firstBadLink, logs). */
  public String name() {
    return name;
  }

  /**
   * The next DataNode's answer to the request (stock's connect ack), read by {@code deadline};
   * reads after it wait without a bound (the caller's timer decides, as for our own mirror).
   */
  public BlockOpResponseProto response(long deadline) throws IOException {
    socket.setSoTimeout(timeoutLeft(deadline, name));
    BlockOpResponseProto r = BlockOpResponseProto.parseFrom(PBHelperClient.vintPrefixed(in));
    socket.setSoTimeout(0);
    return r;
  }

  /**
   * Writes one packet in stock's format (buffered: {@link #flush} sends it): {@code header}'s
   * fields, then {@code payload} (checksums, then data), read from its position to its limit
   * (the caller keeps the buffer; it is not read after this returns).
   */
  public void send(PacketHeaderProto header, ByteBuffer payload) throws IOException {
    int n = payload.remaining();
    PacketHeader h = new PacketHeader(Integer.BYTES + n, header.getOffsetInBlock(), header.getSeqno(),
        header.getLastPacketInBlock(), header.getDataLen(), header.getSyncBlock());
    h.write(out);
    if (payload.hasArray()) {
      out.write(payload.array(), payload.arrayOffset() + payload.position(), n);
      return;
    }
    if (copy == null) {
      copy = new byte[COPY_BYTES];
    }
    ByteBuffer p = payload.duplicate();
    while (p.hasRemaining()) {
      int k = Math.min(copy.length, p.remaining());
      p.get(copy, 0, k);
      out.write(copy, 0, k);
    }
  }

  public void flush() throws IOException {
    out.flush();
  }

  /**
   * The next ack from downstream (stock's PipelineAck on the wire); blocks.
   *
   * @throws java.io.EOFException the downstream closed the connection
   */
  public PipelineAckProto readAck() throws IOException {
    return PipelineAckProto.parseFrom(PBHelperClient.vintPrefixed(in));
  }

  /** Closes the socket; a blocked {@link #readAck} or {@link #send} then fails. Idempotent. */
  @Override
  public void close() {
    IOUtils.closeSocket(socket);
  }
}
