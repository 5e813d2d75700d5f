package org.hdfsrdma.client;

import java.io.Closeable;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.ProtocolException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32C;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.DataTransferProtoUtil;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PipelineAckProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes one new block through a pipeline of DataNodes that run the hrdma
 * plugin: the block, targets, storage ids and token come from the NameNode's
 * {@code addBlock}. Opens the pipeline with a WRITE_REQUEST to the first
 * DataNode (which forwards it), then sends the bytes written as DATA_PACKETs
 * of {@value #PACKET_BYTES_KEY} data bytes (CRC32C per
 * {@code dfs.bytes-per-checksum} chunk, checksums then data, as an HDFS
 * packet body), keeping up to {@value #WINDOW_BYTES_KEY} of packets unacked.
 *
 * <p>A responder thread takes the PIPELINE_ACKs in seqno order; any status
 * that is not SUCCESS fails the writer with an IOException naming the
 * DataNode ({@link #badNodeIndex()}), and every later call throws it.
 * {@link #close()} sends the last, empty packet and waits for its ack, which
 * the DataNodes send after finalizing the replica and telling the NameNode;
 * afterwards {@link #block()} carries the length to {@code complete} with.
 * A writer closed before the end (or after a failure) abandons the write at
 * the DataNode (READ_STATUS ERROR for its request id).
 *
 * <p>Not thread-safe: one writing thread (plus the responder of its own).
 */
public final class RdmaBlockWriter implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaBlockWriter.class);

  /** Data bytes per packet (rounded down to whole chunks). */
  public static final String PACKET_BYTES_KEY = "hrdma.client.write.packet-bytes";
  public static final int PACKET_BYTES_DEFAULT = 64 << 10;
  /** Bytes of packets sent and not acknowledged yet (seed 000's 5 MB FIFO). */
  public static final String WINDOW_BYTES_KEY = "hrdma.client.write.window-bytes";
  public static final long WINDOW_BYTES_DEFAULT = 5L << 20;

  private final DataNodeConnection conn;
  private final PendingRead pending;
  private final ExtendedBlock block;
  private final DatanodeInfo[] nodes;
  private final int bytesPerChecksum;
  private final int packetBytes;
  private final int maxUnacked;
  private final long timeoutMs;
  private final byte[] buf;
  private final CRC32C crc = new CRC32C();
  private final Thread responder;

  private int bufLen;
  private long offset;        // block offset of buf[0]
  private long seqno;
  private boolean closed;
  private boolean lastSent;
  private long lastSentEnd;   // block offset after the last packet sent
  private boolean corruptNext; // test hook

  // guarded by this
  private final ArrayDeque<long[]> unacked = new ArrayDeque<>(); // {seqno, endOffset, last}
  private long acked;
  private boolean lastAcked;
  private IOException failure;
  private int badNode = -1;

  private RdmaBlockWriter(RdmaBlockClient client, DataNodeConnection conn, LocatedBlock lb, Configuration conf)
      throws IOException {
    this.conn = conn;
    this.block = new ExtendedBlock(lb.getBlock());
    this.block.setNumBytes(0);
    this.nodes = lb.getLocations();
    this.timeoutMs = client.timeoutMs();
    this.bytesPerChecksum = conf.getInt(HdfsClientConfigKeys.DFS_BYTES_PER_CHECKSUM_KEY,
        HdfsClientConfigKeys.DFS_BYTES_PER_CHECKSUM_DEFAULT);
    int pb = conf.getInt(PACKET_BYTES_KEY, PACKET_BYTES_DEFAULT);
    long window = conf.getLong(WINDOW_BYTES_KEY, WINDOW_BYTES_DEFAULT);
    if (bytesPerChecksum <= 0 || pb <= 0 || window <= 0) {
      throw new IllegalArgumentException("bad write settings: bytes-per-checksum " + bytesPerChecksum
          + ", " + PACKET_BYTES_KEY + " " + pb + ", " + WINDOW_BYTES_KEY + " " + window);
    }
    this.packetBytes = Math.max(bytesPerChecksum, pb - pb % bytesPerChecksum);
    this.maxUnacked = (int) Math.max(1, Math.min(1 << 16, window / packetBytes));
    this.buf = new byte[packetBytes];
    this.pending = conn.register();
    boolean ok = false;
    try {
      StorageType[] types = lb.getStorageTypes();
      String[] ids = lb.getStorageIDs();
      DataChecksum sum = DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, bytesPerChecksum);
      conn.send(MessageCodec.encode(conn.endpoint().transport().allocator(), MessageKind.WRITE_REQUEST,
          pending.id(), BlockOps.writeBlock(block, lb.getBlockToken(), client.clientName(), nodes, types, ids,
              sum), null), pending);
      Message m = pending.take(timeoutMs);
      try {
        BlockOpResponseProto resp = switch (m.kind()) {
          case WRITE_RESPONSE -> m.writeResponse();
          case ERROR -> m.error();
          default -> throw new ProtocolException("expected WRITE_RESPONSE from " + conn + ", got " + m.kind());
        };
        // the stock client's check and words (DataStreamer#createBlockOutputStream)
        DataTransferProtoUtil.checkBlockOpStatus(resp, "ack with firstBadLink as " + resp.getFirstBadLink());
      } finally {
        m.release();
      }
      ok = true;
    } finally {
      if (!ok) {
        pending.close();
      }
    }
    responder = new Thread(this::respond, "hrdma-write-responder-" + block.getBlockId());
    responder.setDaemon(true);
    responder.start();
  }

  /**
   * Opens the pipeline of {@code lb} (a block just allocated by
   * {@code addBlock}) for writing from offset 0.
   *
   * @throws org.apache.hadoop.hdfs.security.token.block.InvalidBlockTokenException the token was refused
   * @throws IOException the pipeline could not be set up (the message names the first bad DataNode)
   */
  public static RdmaBlockWriter create(RdmaBlockClient client, LocatedBlock lb, Configuration conf)
      throws IOException {
    if (lb.getLocations().length == 0) {
      throw new IOException("block " + lb.getBlock() + " has no targets");
    }
    return new RdmaBlockWriter(client, client.connection(lb.getLocations()[0]), lb, conf);
  }

  /** Writes {@code len} bytes; blocks while the window of unacked packets is full. */
  public void write(byte[] b, int off, int len) throws IOException {
    if (off < 0 || len < 0 || off + len > b.length) {
      throw new IndexOutOfBoundsException("off " + off + ", len " + len + ", array " + b.length);
    }
    checkOpen();
    while (len > 0) {
      int n = Math.min(len, packetBytes - bufLen);
      System.arraycopy(b, off, buf, bufLen, n);
      bufLen += n;
      off += n;
      len -= n;
      if (bufLen == packetBytes) {
        sendPacket(false, false);
      }
    }
  }

  public void write(byte[] b) throws IOException {
    write(b, 0, b.length);
  }

  /** Bytes written so far (sent or buffered). */
  public long position() {
    return offset + bufLen;
  }

  /** Bytes every DataNode of the pipeline has acknowledged. */
  public synchronized long bytesAcked() {
    return acked;
  }

  /** The block with the length written (after {@link #close()}: what to pass to complete). */
  public ExtendedBlock block() {
    ExtendedBlock b = new ExtendedBlock(block);
    b.setNumBytes(offset + bufLen);
    return b;
  }

  /** The pipeline index of the DataNode an error ack named, or -1. */
  public synchronized int badNodeIndex() {
    return badNode;
  }

  /**
   * hflush ({@code sync} false) or hsync ({@code sync} true): sends the bytes
   * buffered so far (a partial chunk too; the next packet sends that chunk
   * again from its start, as stock) with {@code syncBlock} = {@code sync}, and
   * waits until every DataNode of the pipeline has acknowledged every packet
   * sent. With {@code sync}, each DataNode fsyncs the replica's files before
   * it acks. Returns the bytes acknowledged (the block's visible length).
   */
  public long flush(boolean sync) throws IOException {
    checkOpen();
    if (sync || offset + bufLen > lastSentEnd) {
      sendPacket(false, sync);
    }
    waitFor(unacked::isEmpty);
    return bytesAcked();
  }

  /** Test hook: flips one data byte of the next packet after its checksums are computed. */
  void corruptNextPacketForTesting() {
    corruptNext = true;
  }

  /** Sends the buffered bytes and the last (empty) packet, waits for every ack. Idempotent. */
  @Override
  public void close() throws IOException {
    if (closed) {
      return;
    }
    try {
      checkFailure();
      if (bufLen > 0 && offset + bufLen > lastSentEnd) {
        sendPacket(false, false);
      }
      sendPacket(true, false);
      waitFor(() -> lastAcked);
    } catch (IOException | RuntimeException e) {
      abandon();
      throw e;
    } finally {
      closed = true;
      responder.interrupt();
      try {
        responder.join(timeoutMs);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      pending.close();
    }
  }

  /** Gives the write up at the DataNode (the replica stays RBW; the NameNode recovers it). */
  private void abandon() {
    if (lastAcked()) {
      return;
    }
    try {
      conn.send(MessageCodec.encode(conn.endpoint().transport().allocator(), MessageKind.READ_STATUS,
          pending.id(), BlockOps.readStatus(Status.ERROR), null), null);
    } catch (IOException | RuntimeException e) {
      LOG.debug("hrdma client: cannot abandon the write of {}: {}", block, e.toString());
    }
  }

  private synchronized boolean lastAcked() {
    return lastAcked;
  }

  private void checkOpen() throws IOException {
    if (closed) {
      throw new IOException("the writer of " + block + " is closed");
    }
    checkFailure();
  }

  private synchronized void checkFailure() throws IOException {
    if (failure != null) {
      throw new IOException(failure.getMessage(), failure);
    }
  }

  private interface Cond {
    boolean holds();
  }

  private synchronized void waitFor(Cond c) throws IOException {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
    while (!c.holds()) {
      checkFailure();
      long left = (deadline - System.nanoTime()) / 1_000_000L;
      if (left <= 0) {
        throw new SocketTimeoutException("no ack for " + block + " from " + conn + " within " + timeoutMs
            + " ms (" + unacked.size() + " packets unacked)");
      }
      try {
        wait(left);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted writing " + block);
      }
    }
    checkFailure();
  }

  private void sendPacket(boolean last, boolean sync) throws IOException {
    if (lastSent) {
      throw new IOException("the last packet of " + block + " was sent already");
    }
    waitFor(() -> unacked.size() < maxUnacked);
    int dataLen = last ? 0 : bufLen;
    int chunks = (dataLen + bytesPerChecksum - 1) / bytesPerChecksum;
    int sumLen = chunks * 4;
    long s = seqno++;
    long start = last ? offset + bufLen : offset; // the last, empty packet: at the end of the block
    RegisteredBuffer p = MessageCodec.begin(conn.endpoint().transport().allocator(), MessageKind.DATA_PACKET,
        pending.id(), BlockOps.packetHeader(s, start, last, dataLen, sync), sumLen + dataLen);
    try {
      ByteBuffer out = p.nio();
      for (int i = 0; i < dataLen; i += bytesPerChecksum) {
        crc.reset();
        crc.update(buf, i, Math.min(bytesPerChecksum, dataLen - i));
        out.putInt((int) crc.getValue());
      }
      if (corruptNext && dataLen > 0) {
        corruptNext = false;
        buf[dataLen / 2] ^= 0x5a;
      }
      out.put(buf, 0, dataLen);
      MessageCodec.finish(p);
    } catch (RuntimeException e) {
      p.release();
      throw e;
    }
    long end = start + dataLen;
    synchronized (this) {
      unacked.add(new long[] {s, end, last ? 1 : 0});
    }
    conn.send(p, pending);
    lastSent = last;
    lastSentEnd = end;
    int partial = last ? 0 : dataLen % bytesPerChecksum;
    if (partial > 0) {
      // a partial chunk (hflush/hsync): keep it; the next packet sends it again from the chunk's start
      System.arraycopy(buf, dataLen - partial, buf, 0, partial);
    }
    offset = end - partial;
    bufLen = partial;
  }

  /** The responder: acks in seqno order; the first bad one fails the writer. */
  private void respond() {
    while (true) {
      synchronized (this) {
        if (lastAcked || failure != null) {
          return;
        }
      }
      Message m;
      try {
        m = pending.take(timeoutMs);
      } catch (SocketTimeoutException e) {
        synchronized (this) {
          if (unacked.isEmpty()) {
            continue; // the application is not writing; nothing is owed
          }
        }
        fail(e, -1);
        return;
      } catch (InterruptedIOException e) {
        return; // closed
      } catch (IOException e) {
        fail(e, -1);
        return;
      }
      try {
        switch (m.kind()) {
          case PIPELINE_ACK -> onAck(m.pipelineAck());
          case ERROR -> fail(new IOException(conn + " failed the write of " + block + ": "
              + m.error().getStatus() + ": " + m.error().getMessage()), -1);
          default -> fail(new ProtocolException("unexpected " + m.kind() + " from " + conn + " writing "
              + block), -1);
        }
      } catch (ProtocolException e) {
        fail(e, -1);
      } finally {
        m.release();
      }
    }
  }

  private void onAck(PipelineAckProto ack) {
    List<Status> statuses = BlockOps.ackStatuses(ack);
    synchronized (this) {
      long[] head = unacked.peek();
      if (head == null || head[0] != ack.getSeqno()) {
        fail(new ProtocolException("ack for seqno " + ack.getSeqno() + " from " + conn + " while "
            + (head == null ? "no packet is unacked" : "waiting for seqno " + head[0]) + " of " + block), -1);
        return;
      }
      for (int i = 0; i < statuses.size(); i++) {
        if (statuses.get(i) != Status.SUCCESS) {
          String node = i < nodes.length ? nodes[i].toString() : "pipeline node " + i;
          fail(new IOException("Bad response " + statuses.get(i) + " for " + block + " from datanode " + node
              + " (seqno " + ack.getSeqno() + ", acks " + statuses + ", pipeline " + Arrays.toString(nodes)
              + ")"), i);
          return;
        }
      }
      if (statuses.size() != nodes.length) {
        fail(new ProtocolException("ack for seqno " + ack.getSeqno() + " has " + statuses.size()
            + " statuses for a pipeline of " + nodes.length), -1);
        return;
      }
      unacked.poll();
      acked = head[1];
      if (head[2] == 1) {
        lastAcked = true;
      }
      notifyAll();
    }
  }

  private synchronized void fail(IOException e, int node) {
    if (failure == null) {
      failure = e;
      badNode = node;
      LOG.warn("hrdma client: writing {} failed: {}", block, e.getMessage());
    }
    notifyAll();
  }

  @Override
  public String toString() {
    return "RdmaBlockWriter[" + block + " at " + position() + " to " + Arrays.toString(nodes) + " via " + conn
        + "]";
  }
}
