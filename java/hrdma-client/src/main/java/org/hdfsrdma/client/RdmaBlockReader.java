package org.hdfsrdma.client;

import java.io.EOFException;
import java.io.IOException;
import java.net.ProtocolException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.zip.CRC32;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PacketHeaderProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.ReadOpChecksumInfoProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.security.token.block.InvalidBlockTokenException;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.ChunkSums;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.transport.TransportException;

/**
 * Reads one range of one block from one DataNode over an hrdma connection,
 * sequentially, verifying every chunk's checksum (as stored in the replica's
 * .meta file) before handing its bytes out; a reader opened with
 * {@code verifyChecksum} false (a stream of a file system with
 * {@code setVerifyChecksum(false)}) asks for the data without its checksums
 * ({@code sendChecksums} false: the DataNode reads and sends none) and checks
 * the packets' headers and lengths as before, as stock's BlockReaderRemote.
 *
 * <p>The range is asked for in READ_REQUESTs: the first of
 * {@value RdmaBlockClient#REQUEST_BYTES_KEY} bytes, each next one twice the
 * size of the one before, up to {@value RdmaBlockClient#MAX_REQUEST_BYTES_KEY}
 * for replicas on the storage types of
 * {@value RdmaBlockClient#RAMP_STORAGE_TYPES_KEY} (else all of request-bytes)
 * (a short read costs the DataNode little; a long one runs in requests large
 * enough that its disk read-ahead rarely starts again) as long as no other
 * reader has requests on the same connection (the DataNode serves them in
 * order: a 64 MB request would hold another stream's small read back), and
 * {@value RdmaBlockClient#REQUESTS_IN_FLIGHT_KEY} of them are kept in flight:
 * while the caller consumes one request's packets, the DataNode already
 * serves the next, so a sequential reader never waits a round trip between
 * requests. Packets wait in their request's queue, holding their registered
 * buffers (the DataNode's credits bound how many), until read; each is
 * released as soon as its bytes are copied out.
 *
 * <p>After the last packet of a request the reader answers READ_STATUS
 * CHECKSUM_OK (SUCCESS when it did not verify, as stock: CHECKSUM_OK tells the
 * DataNode its replica was found good); on a checksum mismatch ERROR_CHECKSUM and a
 * {@link ChecksumException}; requests given up ({@link #close} before the
 * end, or after an error) get READ_STATUS ERROR, which cancels them at the
 * DataNode.
 *
 * <p>Not thread-safe: one reading thread.
 */
public final class RdmaBlockReader implements BlockReader {
  private final RdmaBlockClient client;
  private final DataNodeConnection conn;
  private final ExtendedBlock block;
  private final Token<BlockTokenIdentifier> token;
  private final DatanodeInfo datanode;
  private final long start;
  private final long end;

  /** Requests sent and not finished, oldest (the one being read) first. */
  private final ArrayDeque<Request> inflight = new ArrayDeque<>();
  private long nextRequestOffset;
  private long nextRequestBytes;   // the size of the next request, before the range's end cuts it
  private final long maxRequestBytes; // requests grow up to this
  private final boolean verifyChecksum; // false: chunks are not checked against their sums
  private long position;           // next byte handed out
  private Message packet;          // the packet being handed out, or null
  private ByteBuffer data;         // the rest of its bytes to hand out
  private IOException failure;     // sticky
  private boolean closed;
  private long requestsSent;
  private DataChecksum.Type lastType; // of the last READ_RESPONSE (tests)

  private static final class Request {
    final PendingRead pending;
    final long offset;
    final long length;
    boolean answered;          // READ_RESPONSE seen
    DataChecksum.Type type;
    int bytesPerChecksum;
    int checksumSize;
    long expected;             // offsetInBlock of the next packet
    long seqno;

    Request(PendingRead pending, long offset, long length) {
      this.pending = pending;
      this.offset = offset;
      this.length = length;
    }
  }

  RdmaBlockReader(RdmaBlockClient client, DataNodeConnection conn, ExtendedBlock block,
      Token<BlockTokenIdentifier> token, DatanodeInfo datanode, long offset, long length, long maxRequestBytes,
      boolean verifyChecksum) throws IOException {
    this.client = client;
    this.conn = conn;
    this.block = block;
    this.token = token;
    this.datanode = datanode;
    this.start = offset;
    this.end = offset + length;
    this.nextRequestOffset = offset;
    this.nextRequestBytes = client.requestBytes();
    this.maxRequestBytes = maxRequestBytes;
    this.verifyChecksum = verifyChecksum;
    this.position = offset;
    fillWindow();
  }

  /** Bytes of the range not handed out yet. */
  public long remaining() {
    return end - position;
  }

  /** The transport the data comes over ("ucx", "stream", "tcp"). */
  public String transport() {
    return conn.transportName();
  }

  /** READ_REQUESTs sent so far (tests look at the read-ahead with it). */
  public long requestsSent() {
    return requestsSent;
  }

  /** The checksum type the last READ_RESPONSE declared (NULL: the DataNode sent no sums), or null (tests). */
  DataChecksum.Type lastChecksumType() {
    return lastType;
  }

  /** Requests in flight now. */
  public int requestsInFlight() {
    return inflight.size();
  }

  /**
   * Copies up to {@code dst.remaining()} bytes into {@code dst}.
   *
   * @return bytes copied, or -1 at the end of the range
   * @throws ChecksumException a chunk's data does not match its stored checksum
   */
  public int read(ByteBuffer dst) throws IOException {
    if (!dst.hasRemaining()) {
      return 0;
    }
    if (!nextData()) {
      return -1;
    }
    int n = Math.min(dst.remaining(), data.remaining());
    ByteBuffer src = data.duplicate();
    src.limit(src.position() + n);
    dst.put(src);
    advance(n);
    return n;
  }

  /** As {@link #read(ByteBuffer)}, into {@code buf[off, off + len)}. */
  public int read(byte[] buf, int off, int len) throws IOException {
    if (len == 0) {
      return 0;
    }
    if (!nextData()) {
      return -1;
    }
    int n = Math.min(len, data.remaining());
    data.duplicate().get(buf, off, n);
    advance(n);
    return n;
  }

  /** Reads exactly {@code len} bytes. */
  public void readFully(byte[] buf, int off, int len) throws IOException {
    while (len > 0) {
      int n = read(buf, off, len);
      if (n < 0) {
        throw new EOFException("the range of " + block + " ended " + len + " bytes early");
      }
      off += n;
      len -= n;
    }
  }

  private void advance(int n) {
    data.position(data.position() + n);
    position += n;
    if (!data.hasRemaining()) {
      releasePacket();
    }
  }

  private void releasePacket() {
    if (packet != null) {
      packet.release();
      packet = null;
      data = null;
    }
  }

  /** Makes {@code data} hold bytes to hand out; false at the end of the range. */
  private boolean nextData() throws IOException {
    if (closed) {
      throw new IOException("reader of " + block + " is closed");
    }
    if (failure != null) {
      throw failure;
    }
    try {
      while (data == null || !data.hasRemaining()) {
        releasePacket();
        if (position >= end) {
          return false;
        }
        fillWindow();
        Request r = inflight.peekFirst();
        if (r == null) {
          throw new IllegalStateException("nothing in flight at " + position + " of " + this);
        }
        Message m = r.pending.take(client.timeoutMs());
        handle(r, m);
      }
      return true;
    } catch (IOException | RuntimeException e) {
      IOException f = e instanceof IOException io ? io : new IOException(e.toString(), e);
      failure = f;
      abandonAll();
      throw f;
    }
  }

  /** Sends requests until the window is full or the range is all asked for. */
  private void fillWindow() throws IOException {
    while (inflight.size() < client.requestsInFlight() && nextRequestOffset < end) {
      // a DataNode serves a connection's requests in order: while other readers share the
      // connection, large requests would hold theirs back, so the ramp starts again
      boolean alone = conn.pendingCount() <= inflight.size();
      if (!alone) {
        nextRequestBytes = client.requestBytes();
      }
      long len = Math.min(nextRequestBytes, end - nextRequestOffset);
      send(nextRequestOffset, len);
      nextRequestOffset += len;
      if (alone) {
        nextRequestBytes = Math.min(maxRequestBytes, 2 * nextRequestBytes);
      }
    }
  }

  private void send(long offset, long len) throws IOException {
    PendingRead p = conn.register();
    Request r = new Request(p, offset, len);
    inflight.addLast(r);
    try {
      conn.send(MessageCodec.encode(conn.endpoint().transport().allocator(), MessageKind.READ_REQUEST,
          p.id(), BlockOps.readBlock(block, token, client.clientName(), offset, len,
              verifyChecksum), null), p);
    } catch (TransportException | RuntimeException e) {
      inflight.removeLast();
      p.close();
      throw e;
    }
    requestsSent++;
  }

  /** One message of the oldest request; consumes (releases) it unless it becomes {@link #packet}. */
  private void handle(Request r, Message m) throws IOException {
    boolean keep = false;
    try {
      switch (m.kind()) {
        case READ_RESPONSE -> {
          if (r.answered) {
            throw protocol(r, "a second READ_RESPONSE");
          }
          BlockOpResponseProto resp = m.readResponse();
          if (resp.getStatus() != Status.SUCCESS) {
            throw refusal(resp);
          }
          ReadOpChecksumInfoProto ci = resp.getReadOpChecksumInfo();
          DataChecksum.Type type = PBHelperClient.convert(ci.getChecksum().getType());
          int bpc = ci.getChecksum().getBytesPerChecksum();
          long chunkOffset = ci.getChunkOffset();
          if (bpc <= 0 || chunkOffset > r.offset || chunkOffset < 0 || (chunkOffset % bpc) != 0
              || r.offset - chunkOffset >= bpc) {
            throw protocol(r, "READ_RESPONSE with bytesPerChecksum " + bpc + " and chunkOffset "
                + chunkOffset + " for a read at " + r.offset);
          }
          r.answered = true;
          r.type = type;
          lastType = type;
          r.bytesPerChecksum = bpc;
          r.checksumSize = type.size;
          r.expected = chunkOffset;
        }
        case ERROR -> throw refusal(m.error());
        case DATA_PACKET -> {
          if (!r.answered) {
            throw protocol(r, "a DATA_PACKET before the READ_RESPONSE");
          }
          keep = packet(r, m);
        }
        default -> throw protocol(r, "an unexpected " + m.kind());
      }
    } finally {
      if (!keep) {
        m.release();
      }
    }
  }

  /** Checks and verifies a packet; true when it has bytes to hand out (it is then {@link #packet}). */
  private boolean packet(Request r, Message m) throws IOException {
    PacketHeaderProto h = m.packetHeader();
    long off = h.getOffsetInBlock();
    int dataLen = h.getDataLen();
    long requestEnd = r.offset + r.length;
    if (off != r.expected || h.getSeqno() != r.seqno || dataLen < 0
        || (dataLen > 0 && off >= requestEnd) || off + dataLen > requestEnd + r.bytesPerChecksum) {
      throw protocol(r, "packet " + h.getSeqno() + " at offset " + off + " with " + dataLen
          + " bytes (expected packet " + r.seqno + " at " + r.expected + ")");
    }
    int chunks = (int) ((dataLen + (long) r.bytesPerChecksum - 1) / r.bytesPerChecksum);
    int sumLen = chunks * r.checksumSize;
    ByteBuffer payload = m.payload();
    if (payload.remaining() != sumLen + dataLen) {
      throw protocol(r, "packet at offset " + off + " carries " + payload.remaining() + " bytes; "
          + dataLen + " bytes of data and " + sumLen + " of checksums expected");
    }
    ByteBuffer sums = payload.slice(0, sumLen);
    ByteBuffer bytes = payload.slice(sumLen, dataLen);
    if (verifyChecksum) {
      verify(r, off, sums, bytes);
    }
    r.expected = off + dataLen;
    r.seqno++;
    if (h.getLastPacketInBlock()) {
      if (r.expected < requestEnd) {
        throw protocol(r, "last packet ends at " + r.expected + ", before the request's end " + requestEnd);
      }
      finish(r, verifyChecksum ? Status.CHECKSUM_OK : Status.SUCCESS);
      fillWindow(); // the next request goes out now, not at the next read
    }
    // hand out [max(off, position), min(off + dataLen, requestEnd))
    long from = Math.max(off, position);
    long to = Math.min(off + dataLen, requestEnd);
    if (from >= to) {
      return false;
    }
    if (from != position) {
      throw protocol(r, "packet at offset " + off + " skips to " + from + ", reader is at " + position);
    }
    packet = m;
    data = bytes.slice((int) (from - off), (int) (to - from));
    return true;
  }

  private void verify(Request r, long off, ByteBuffer sums, ByteBuffer bytes) throws ChecksumException {
    if (r.checksumSize == 0) {
      return; // checksum type NULL: nothing stored, nothing to check
    }
    int bpc = r.bytesPerChecksum;
    java.util.zip.Checksum sum = switch (r.type) {
      case CRC32C -> new java.util.zip.CRC32C();
      case CRC32 -> new CRC32();
      default -> throw new IllegalStateException("checksum type " + r.type + " of " + block + " is not supported");
    };
    int bad = ChunkSums.firstBad(sum, bytes, sums, bpc);
    if (bad < 0) {
      return;
    }
    int i = bad * bpc;
    int len = Math.min(bpc, bytes.remaining() - i);
    int stored = sums.getInt(bad * r.checksumSize);
    int computed = (int) sum.getValue(); // the bad chunk's
    long at = off + i;
    ChecksumException e = new ChecksumException("checksum error in " + block + " from DataNode "
        + datanode.getXferAddr() + " (" + datanode.getDatanodeUuid() + ", " + conn.transportName()
        + ") at offset " + at + " of the block: the chunk of " + len + " bytes has " + r.type
        + " 0x" + Integer.toHexString(computed) + ", the replica stores 0x" + Integer.toHexString(stored), at);
    finish(r, Status.ERROR_CHECKSUM);
    throw e;
  }

  /** Ends a request: tells the DataNode how it went and stops listening for it. */
  private void finish(Request r, Status status) {
    if (inflight.peekFirst() == r) {
      inflight.removeFirst();
    } else {
      inflight.remove(r);
    }
    r.pending.close();
    sendStatus(r, status);
  }

  private void sendStatus(Request r, Status status) {
    try {
      conn.send(MessageCodec.encode(conn.endpoint().transport().allocator(), MessageKind.READ_STATUS,
          r.pending.id(), BlockOps.readStatus(status), null), null);
    } catch (TransportException | RuntimeException e) {
      // the connection is going away; the DataNode cancels with it
    }
  }

  /** Gives up every request in flight (READ_STATUS ERROR cancels them at the DataNode). */
  private void abandonAll() {
    releasePacket();
    Request r;
    while ((r = inflight.pollFirst()) != null) {
      r.pending.close();
      if (conn.isOpen()) {
        sendStatus(r, Status.ERROR);
      }
    }
  }

  private IOException refusal(BlockOpResponseProto resp) {
    String what = "DataNode " + datanode.getXferAddr() + " (" + datanode.getDatanodeUuid()
        + ") refused to read " + block + ": " + resp.getStatus() + ": " + resp.getMessage();
    if (resp.getStatus() == Status.ERROR_ACCESS_TOKEN) {
      return new InvalidBlockTokenException(what);
    }
    return new IOException(what);
  }

  private ProtocolException protocol(Request r, String what) {
    return new ProtocolException("reading " + block + " from " + conn + ", request " + r.pending.id()
        + ": " + what);
  }

  /** Releases what is held and cancels what is in flight. Idempotent. */
  @Override
  public void close() {
    if (!closed) {
      closed = true;
      abandonAll();
    }
  }

  @Override
  public String toString() {
    return "RdmaBlockReader[" + block + " [" + start + ", " + end + ") at " + position + " from " + conn + "]";
  }
}
