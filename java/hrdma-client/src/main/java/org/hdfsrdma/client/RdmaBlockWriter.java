package org.hdfsrdma.client;

import java.io.Closeable;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.InetAddress;
import java.net.ProtocolException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.DFSClient;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.protocol.ClientProtocol;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.HdfsConstants;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.DataTransferProtoUtil;
import org.apache.hadoop.hdfs.protocol.datatransfer.ReplaceDatanodeOnFailure;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto.BlockConstructionStage;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PipelineAckProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.net.NetUtils;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.client.compat.FaultInjection;
import org.hdfsrdma.client.compat.StockPacketSize;
import org.hdfsrdma.client.compat.StockTransfer;
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
 * Each packet's bytes stay in their heap array until every DataNode has
 * acknowledged them (the arrays are reused afterwards): they are what a
 * pipeline recovery sends again.
 *
 * <p>A responder thread takes the PIPELINE_ACKs in seqno order. A status
 * that is not SUCCESS names the bad DataNode; a lost connection or a missing
 * ack names none, and the first DataNode is taken as bad (as stock does).
 * Timeouts are stock's: when no packet went out for half of
 * {@code dfs.client.socket-timeout}, the responder sends a heartbeat (seqno
 * -1, no data; every DataNode relays and acks it, so an idle stream keeps its
 * pipeline past the DataNodes' packet timeout), to pipelines whose
 * WRITE_RESPONSE says every DataNode takes them; with packets or heartbeats
 * unacked, no ack for the socket timeout plus 5 s per DataNode (stock's
 * {@code DFSClient#getDatanodeReadTimeout}) fails the pipeline.
 *
 * <p>Pipeline recovery (when created with a {@link RecoveryContext}, as
 * {@link RdmaOutputStream} does), on the writing thread, as the stock
 * DataStreamer does it: the bad DataNode leaves the pipeline; when the
 * replace-datanode-on-failure policy asks, the NameNode adds a DataNode
 * ({@code getAdditionalDatanode}) and a surviving DataNode copies the
 * replica to it (the stock TRANSFER_BLOCK); the NameNode gives a new
 * generation stamp ({@code updateBlockForPipeline}); the pipeline is set up
 * again with stage PIPELINE_SETUP_STREAMING_RECOVERY (each DataNode
 * truncates its replica to the acknowledged length) and every unacknowledged
 * packet is sent again, or, when only the last packet was outstanding, with
 * PIPELINE_CLOSE_RECOVERY (each DataNode finalizes); then
 * {@code updatePipeline} tells the NameNode. No acknowledged byte is lost:
 * packets leave the window only once every DataNode acknowledged them.
 * Without a context (or with no DataNode left) the failure is the caller's,
 * an IOException naming the DataNode ({@link #badNodeIndex()}).
 *
 * <p>A DataNode shutting down for an upgrade sends an OOB_RESTART ack (seqno
 * -2; relayed by the DataNodes before it). As stock's DataStreamer, when
 * that DataNode is on this host or the only one of the pipeline
 * ({@code shouldWaitForRestart}), the recovery keeps it: it tries the same
 * pipeline, a new generation stamp each time, every 4 s (or
 * {@code dfs.client.datanode-restart.timeout} when shorter) from the ack
 * until it is back or that timeout passed, then goes on without it; such
 * tries do not count as recoveries. Any other restarting DataNode is a
 * failed one at once.
 *
 * <p>{@link #close()} waits for every data packet's ack (as stock), sends the
 * last, empty packet and waits for its ack, which the DataNodes send after
 * finalizing the replica and telling the NameNode; afterwards
 * {@link #block()} carries the length and generation stamp to
 * {@code complete} with. A writer closed before the end (or after a failure)
 * abandons the write at the DataNode (READ_STATUS ERROR for its request id).
 *
 * <p>Thread-safety: every method but {@link #awaitAcked}, {@link #bytesAcked},
 * {@link #badNodeIndex} and the state read by the stream's streamer view
 * ({@link #pipeline}, {@link #storageIds}, {@link #blockToken}, {@link #ackedBlock},
 * {@link #stage}, {@link #recoveriesSinceAck}, {@link #isClosed}) must be called by one thread at a time (the
 * owner serializes them; {@link RdmaOutputStream} holds its monitor);
 * {@link #awaitAcked} may be called by any number of threads meanwhile and
 * never changes the pipeline (a failure it sees is recovered by
 * {@link #recoverIfFailed()} under the owner's serialization). An
 * InterruptedIOException leaves the writer intact: the call may be repeated.
 * Buffer ownership: write copies the caller's bytes before it returns.
 */
public final class RdmaBlockWriter implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaBlockWriter.class);

  /** Data bytes per packet (rounded down to whole chunks). */
  public static final String PACKET_BYTES_KEY = HrdmaClientKeys.WRITE_PACKET_BYTES_KEY;
  public static final int PACKET_BYTES_DEFAULT = HrdmaClientKeys.WRITE_PACKET_BYTES_DEFAULT;
  /** Bytes of packets sent and not acknowledged yet (a FIFO that decouples the writer from the pipeline). */
  public static final String WINDOW_BYTES_KEY = HrdmaClientKeys.WRITE_WINDOW_BYTES_KEY;
  public static final long WINDOW_BYTES_DEFAULT = HrdmaClientKeys.WRITE_WINDOW_BYTES_DEFAULT;
  /** Pipeline recoveries of one block before the write gives up (stock: 5 per packet). */
  public static final String MAX_RECOVERIES_KEY = HrdmaClientKeys.WRITE_MAX_PIPELINE_RECOVERIES_KEY;
  public static final int MAX_RECOVERIES_DEFAULT = HrdmaClientKeys.WRITE_MAX_PIPELINE_RECOVERIES_DEFAULT;

  /**
   * What a writer needs to recover its pipeline: the client (NameNode proxy,
   * client name) and its configuration, the file, its replication, and a
   * callback run after each recovery (a metric); and the file's block size, the
   * length hint a new block's request carries (as stock's DataStreamer sends it:
   * the DataNode creates the replica with it, reserving that much).
   */
  public record RecoveryContext(DFSClient dfs, String src, long fileId, short replication,
      Runnable onRecovered, long blockSize) {}

  private static final byte[] EMPTY = new byte[0];
  /** A socket timeout of 0: wait for acks without a limit (stock: no read timeout). */
  private static final long NO_TIMEOUT_MS = 1L << 40;

  private boolean syncBlockAtEnd; // writing thread only

  private final RdmaBlockClient client;
  private final Configuration conf;
  private final ExtendedBlock block;
  private final int bytesPerChecksum;
  private final int packetBytes;
  private final int maxUnacked;
  private final long timeoutMs;
  private final long socketTimeoutMs; // dfs.client.socket-timeout; 0: none, no heartbeats
  private final long restartTimeoutMs; // dfs.client.datanode-restart.timeout
  private final Object sendLock = new Object(); // a packet enters `unacked` and goes out under it: one order
  private volatile long lastSendNanos = System.nanoTime(); // a packet or heartbeat went out
  private volatile long lastAckNanos = System.nanoTime();  // an ack came in
  private final DataChecksum sum;
  private final CRC32C crc = new CRC32C();
  private final RecoveryContext recovery;
  private final ReplaceDatanodeOnFailure replacePolicy;
  private final short replaceMinReplication;
  private final int maxRecoveries;
  // stock's DataStreamer: a node flagged SLOW in this many consecutive acks is a bad node
  // (dfs.client.mark.slownode.as.badnode.threshold), and its consecutive SLOW acks by node
  private final int markSlowNodeAsBadNodeThreshold;
  private final Map<DatanodeInfo, Integer> slowNodes = new HashMap<>();
  // stock's DataStreamer: the nodes the last ack flagged CONGESTED (ECN), which the next packet
  // backs off for (guarded by itself, as stock's, never held while sleeping), the last back-off
  // (guarded by congestedNodes) and its mean and max (dfs.client.congestion.backoff.*)
  private final List<DatanodeInfo> congestedNodes = new ArrayList<>();
  private int lastCongestionBackoffTime;
  private final int congestionBackOffMeanTimeInMs;
  private final int congestionBackOffMaxTimeInMs;
  private final List<DatanodeInfo> failedNodes = new ArrayList<>();
  private final ArrayDeque<byte[]> freeArrays = new ArrayDeque<>(); // guarded by this

  // the pipeline: replaced by a recovery (writing thread only, the responder reads its own copies)
  private DataNodeConnection conn;
  private PendingRead pending;
  // replaced (never changed in place) by the writing thread; read by any (the stream's streamer view)
  private volatile DatanodeInfo[] nodes;
  private volatile StorageType[] storageTypes;
  private volatile String[] storageIds;
  private volatile Token<BlockTokenIdentifier> token; // the current pipeline was set up with it
  private Thread responder;
  private boolean heartbeats; // the pipeline's WRITE_RESPONSE said every DataNode takes heartbeats

  private byte[] buf;
  private int bufLen;
  private long offset;        // block offset of buf[0]
  private long seqno;
  private volatile boolean closed;
  private volatile boolean lastSent;
  private long lastSentEnd;   // block offset after the last packet sent
  private boolean hflushed;
  private int recoveries;
  private int recoveriesSinceAck; // guarded by this: stock's pipelineRecoveryCount
  private boolean restartFailure; // guarded by this: the failure was an OOB_RESTART (not counted, as stock)
  private boolean corruptNext; // test hook
  private volatile long slowdownMs;

  // guarded by this
  private final ArrayDeque<Packet> unacked = new ArrayDeque<>();
  private long acked;
  private boolean lastAcked;
  private IOException failure;
  private int badNode = -1;
  private int restartingNode = -1;   // the DataNode whose OOB_RESTART ack failed the pipeline, to wait for
  private long restartNoticeNanos;   // when that ack came

  /**
   * A packet sent and not acknowledged yet: what a recovery sends again.
   * {@code corrupt}: the fault injector corrupted it for good (every send
   * flips its last data byte on the wire).
   */
  private static final class Packet {
    final long seqno;
    final long start;
    final int len;
    final byte[] data;
    final boolean last;
    final boolean sync;
    boolean corrupt;

    /** A heartbeat: acked in its turn, never sent again by a recovery. */
    static Packet newHeartbeat() {
      return new Packet(BlockOps.HEARTBEAT_SEQNO, 0, 0, EMPTY, false, false);
    }

    boolean heartbeat() {
      return seqno == BlockOps.HEARTBEAT_SEQNO;
    }

    Packet(long seqno, long start, int len, byte[] data, boolean last, boolean sync) {
      this.seqno = seqno;
      this.start = start;
      this.len = len;
      this.data = data;
      this.last = last;
      this.sync = sync;
    }

    long seqno() {
      return seqno;
    }

    long start() {
      return start;
    }

    int len() {
      return len;
    }

    byte[] data() {
      return data;
    }

    boolean last() {
      return last;
    }

    boolean sync() {
      return sync;
    }

    long end() {
      return start + len;
    }
  }

  /** The pipeline could not be set up; {@code firstBadLink} ("ip:port" or "") names the DataNode that failed. */
  static final class PipelineSetupException extends IOException {
    private static final long serialVersionUID = 1L;
    final String firstBadLink;

    PipelineSetupException(String message, String firstBadLink, Throwable cause) {
      super(message, cause);
      this.firstBadLink = firstBadLink;
    }
  }

  private RdmaBlockWriter(RdmaBlockClient client, LocatedBlock lb, Configuration conf, RecoveryContext recovery)
      throws IOException {
    this.client = client;
    this.conf = conf;
    this.block = new ExtendedBlock(lb.getBlock());
    this.block.setNumBytes(0);
    this.timeoutMs = client.timeoutMs();
    this.socketTimeoutMs = conf.getLong(HdfsClientConfigKeys.DFS_CLIENT_SOCKET_TIMEOUT_KEY,
        HdfsConstants.READ_TIMEOUT);
    this.recovery = recovery;
    // as stock's DfsClientConf: seconds unless the value has a unit
    this.restartTimeoutMs = conf.getTimeDuration(HdfsClientConfigKeys.DFS_CLIENT_DATANODE_RESTART_TIMEOUT_KEY,
        HdfsClientConfigKeys.DFS_CLIENT_DATANODE_RESTART_TIMEOUT_DEFAULT, TimeUnit.SECONDS, TimeUnit.MILLISECONDS);
    this.bytesPerChecksum = conf.getInt(HdfsClientConfigKeys.DFS_BYTES_PER_CHECKSUM_KEY,
        HdfsClientConfigKeys.DFS_BYTES_PER_CHECKSUM_DEFAULT);
    int pb = packetDataBytes(conf, bytesPerChecksum, DataChecksum.Type.CRC32C.size);
    long window = conf.getLong(WINDOW_BYTES_KEY, WINDOW_BYTES_DEFAULT);
    this.maxRecoveries = conf.getInt(MAX_RECOVERIES_KEY, MAX_RECOVERIES_DEFAULT);
    // as stock's DfsClientConf reads it
    this.markSlowNodeAsBadNodeThreshold = conf.getInt(
        HdfsClientConfigKeys.DFS_CLIENT_MARK_SLOWNODE_AS_BADNODE_THRESHOLD_KEY,
        HdfsClientConfigKeys.DFS_CLIENT_MARK_SLOWNODE_AS_BADNODE_THRESHOLD_DEFAULT);
    // as stock's DataStreamer reads them (from the client's Configuration, not DfsClientConf):
    // both positive and max >= mean, else both their defaults
    int meanMs = conf.getInt(HdfsClientConfigKeys.DFS_CLIENT_CONGESTION_BACKOFF_MEAN_TIME,
        HdfsClientConfigKeys.DFS_CLIENT_CONGESTION_BACKOFF_MEAN_TIME_DEFAULT);
    int maxMs = conf.getInt(HdfsClientConfigKeys.DFS_CLIENT_CONGESTION_BACKOFF_MAX_TIME,
        HdfsClientConfigKeys.DFS_CLIENT_CONGESTION_BACKOFF_MAX_TIME_DEFAULT);
    if (meanMs <= 0 || maxMs <= 0 || maxMs < meanMs) {
      LOG.warn("Configuration: {} {} and {} {} are not appropriate, using their defaults {} and {}",
          HdfsClientConfigKeys.DFS_CLIENT_CONGESTION_BACKOFF_MEAN_TIME, meanMs,
          HdfsClientConfigKeys.DFS_CLIENT_CONGESTION_BACKOFF_MAX_TIME, maxMs,
          HdfsClientConfigKeys.DFS_CLIENT_CONGESTION_BACKOFF_MEAN_TIME_DEFAULT,
          HdfsClientConfigKeys.DFS_CLIENT_CONGESTION_BACKOFF_MAX_TIME_DEFAULT);
      meanMs = HdfsClientConfigKeys.DFS_CLIENT_CONGESTION_BACKOFF_MEAN_TIME_DEFAULT;
      maxMs = HdfsClientConfigKeys.DFS_CLIENT_CONGESTION_BACKOFF_MAX_TIME_DEFAULT;
    }
    this.congestionBackOffMeanTimeInMs = meanMs;
    this.congestionBackOffMaxTimeInMs = maxMs;
    if (bytesPerChecksum <= 0 || pb <= 0 || window <= 0 || maxRecoveries < 0) {
      throw new IllegalArgumentException("bad write settings: bytes-per-checksum " + bytesPerChecksum
          + ", " + PACKET_BYTES_KEY + " " + pb + ", " + WINDOW_BYTES_KEY + " " + window + ", "
          + MAX_RECOVERIES_KEY + " " + maxRecoveries);
    }
    this.packetBytes = Math.max(bytesPerChecksum, pb - pb % bytesPerChecksum);
    this.maxUnacked = (int) Math.max(1, Math.min(1 << 16, window / packetBytes));
    this.sum = DataChecksum.newDataChecksum(DataChecksum.Type.CRC32C, bytesPerChecksum);
    this.replacePolicy = recovery == null ? null : ReplaceDatanodeOnFailure.get(conf);
    this.replaceMinReplication = (short) conf.getInt(
        HdfsClientConfigKeys.BlockWrite.ReplaceDatanodeOnFailure.MIN_REPLICATION,
        HdfsClientConfigKeys.BlockWrite.ReplaceDatanodeOnFailure.MIN_REPLICATION_DEFAULT);
    this.buf = new byte[packetBytes];
    this.nodes = lb.getLocations();
    this.storageTypes = lb.getStorageTypes();
    this.storageIds = lb.getStorageIDs();
    this.token = lb.getBlockToken();
    // the request carries the file's block size as the block's length (stock: DataStreamer
    // #createBlockOutputStream); without a file (a bare writer) 0: the DataNode's own
    ExtendedBlock request = new ExtendedBlock(block);
    request.setNumBytes(recovery == null ? 0 : recovery.blockSize());
    openPipeline(BlockOps.writeBlock(request, lb.getBlockToken(), client.clientName(), nodes, storageTypes,
        storageIds, sum));
  }

  /**
   * Data bytes per packet: {@value #PACKET_BYTES_KEY} when set; otherwise our default, or a
   * stock packet's data ({@link StockPacketSize}) when {@code dfs.client-write-packet-size}
   * was set explicitly (anywhere but a {@code *-default.xml}) and makes smaller packets. An
   * operator or application that asks for small packets has the bytes it writes sent (and
   * visible at the DataNodes) as soon as stock's would be; the unset default keeps our large
   * packets, which is what makes writes fast. Rounded down to whole chunks by the caller.
   */
  static int packetDataBytes(Configuration conf, int bytesPerChecksum, int checksumSize) {
    if (conf.get(PACKET_BYTES_KEY) != null) {
      return conf.getInt(PACKET_BYTES_KEY, PACKET_BYTES_DEFAULT);
    }
    if (isExplicit(conf, HdfsClientConfigKeys.DFS_CLIENT_WRITE_PACKET_SIZE_KEY)) {
      int stock = StockPacketSize.dataBytes(conf.getInt(HdfsClientConfigKeys.DFS_CLIENT_WRITE_PACKET_SIZE_KEY,
          HdfsClientConfigKeys.DFS_CLIENT_WRITE_PACKET_SIZE_DEFAULT), bytesPerChecksum, checksumSize);
      return Math.min(stock, PACKET_BYTES_DEFAULT);
    }
    return PACKET_BYTES_DEFAULT;
  }

  /**
   * Whether {@code key} has a value that did not come from a default resource: its first
   * source (where it was set; a job.xml read back lists the origin first) is not a
   * {@code *-default.xml}.
   */
  static boolean isExplicit(Configuration conf, String key) {
    if (conf.get(key) == null) {
      return false;
    }
    String[] sources = conf.getPropertySources(key);
    return sources == null || sources.length == 0 || !sources[0].endsWith("-default.xml");
  }

  /**
   * Opens the pipeline of {@code lb} (a block just allocated by
   * {@code addBlock}) for writing from offset 0; a failure of a DataNode
   * later fails the writer (no recovery).
   *
   * @throws org.apache.hadoop.hdfs.security.token.block.InvalidBlockTokenException the token was refused
   * @throws IOException the pipeline could not be set up (the message names the first bad DataNode)
   */
  public static RdmaBlockWriter create(RdmaBlockClient client, LocatedBlock lb, Configuration conf)
      throws IOException {
    return create(client, lb, conf, null);
  }

  /**
   * As {@link #create(RdmaBlockClient, LocatedBlock, Configuration)}; with
   * {@code recovery}, DataNode failures are recovered (see the class comment).
   */
  public static RdmaBlockWriter create(RdmaBlockClient client, LocatedBlock lb, Configuration conf,
      RecoveryContext recovery) throws IOException {
    if (lb.getLocations().length == 0) {
      throw new IOException("block " + lb.getBlock() + " has no targets");
    }
    return new RdmaBlockWriter(client, lb, conf, recovery);
  }

  /**
   * How long the client waits for the pipeline's WRITE_RESPONSE: as stock's client
   * (DataStreamer: the socket timeout and 5 s per DataNode), and a connect timeout, longer than
   * the first DataNode waits for its mirror ({@code PipelineSetup}: the set-up timeout and 5 s per
   * DataNode after it), so that a DataNode downstream that does not answer is named in the
   * firstBadLink rather than the first DataNode blamed for the wait.
   */
  long setupWaitMs() {
    return timeoutMs + 5000L * nodes.length + conf.getInt(org.hdfsrdma.transport.TransportConf.CONNECT_TIMEOUT_KEY,
        org.hdfsrdma.transport.TransportConf.CONNECT_TIMEOUT_DEFAULT);
  }

  /**
   * Sends {@code op} to the first of {@link #nodes}, waits for its
   * WRITE_RESPONSE and starts a responder for the new request.
   *
   * @throws PipelineSetupException a DataNode refused or could not be reached
   */
  private void openPipeline(OpWriteBlockProto op) throws IOException {
    DataNodeConnection c;
    try {
      c = client.connection(nodes[0], BlockOps.token(op));
    } catch (IOException e) {
      throw new PipelineSetupException("cannot connect to " + nodes[0] + " for " + block + ": " + e.getMessage(),
          nodes[0].getXferAddr(), e);
    }
    // a DataNode on this host: the packets go by reference in a segment it grants, once per connection;
    // asked before the write's request and mapped while the DataNodes set up the pipeline
    RdmaBlockClient.WriteSegmentAsk segment = client.requestWriteSegment(c, nodes[0], BlockOps.block(op),
        BlockOps.token(op));
    PendingRead p;
    try {
      p = c.register();
    } catch (IOException e) {
      if (segment != null) {
        segment.await(); // fails at once: the connection is closed
      }
      throw new PipelineSetupException("the connection to " + nodes[0] + " is closed: " + e.getMessage(),
          nodes[0].getXferAddr(), e);
    }
    boolean ok = false;
    try {
      Message m;
      try {
        try {
          c.send(MessageCodec.encode(c.endpoint().transport().allocator(), MessageKind.WRITE_REQUEST, p.id(), op,
              null), p);
        } finally {
          if (segment != null) {
            segment.await(); // before the first packet, which it may carry by reference
          }
        }
        m = p.take(setupWaitMs());
      } catch (IOException e) {
        if (e instanceof InterruptedIOException && !(e instanceof java.net.SocketTimeoutException)) {
          throw e; // interrupted: the caller's to handle
        }
        // no answer in time is a failed set-up too, as stock's createBlockOutputStream timing out:
        // the stream abandons the block and asks again without this DataNode
        throw new PipelineSetupException("no answer from " + nodes[0] + " to the write of " + block + ": "
            + e.getMessage(), nodes[0].getXferAddr(), e);
      }
      try {
        BlockOpResponseProto resp = switch (m.kind()) {
          case WRITE_RESPONSE -> m.writeResponse();
          case ERROR -> m.error();
          default -> throw new ProtocolException("expected WRITE_RESPONSE from " + c + ", got " + m.kind());
        };
        if (resp.getStatus() == Status.ERROR_ACCESS_TOKEN) {
          // the stock client's check and words (DataStreamer#createBlockOutputStream)
          DataTransferProtoUtil.checkBlockOpStatus(resp, "ack with firstBadLink as " + resp.getFirstBadLink());
        }
        heartbeats = BlockOps.takesHeartbeats(resp);
        if (resp.getStatus() != Status.SUCCESS) {
          String msg = "Got error, status=" + resp.getStatus().name() + ", status message " + resp.getMessage()
              + ", ack with firstBadLink as " + resp.getFirstBadLink() + " (" + block + ", pipeline "
              + Arrays.toString(nodes) + ", " + op.getStage() + ")";
          throw new PipelineSetupException(msg, resp.getFirstBadLink(), null);
        }
      } finally {
        m.release();
      }
      ok = true;
    } finally {
      if (!ok) {
        p.close();
      }
    }
    conn = c;
    pending = p;
    lastSendNanos = System.nanoTime(); // the set-up went out: the next heartbeat is half a timeout away
    boolean beats = heartbeats;
    Thread t = new Thread(() -> respond(c, p, nodes, beats), "hrdma-write-responder-" + block.getBlockId());
    t.setDaemon(true);
    responder = t;
    t.start();
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

  /** The block with the length written and its current generation stamp (after {@link #close()}: what to complete). */
  public ExtendedBlock block() {
    ExtendedBlock b = new ExtendedBlock(block);
    b.setNumBytes(offset + bufLen);
    return b;
  }

  /** The DataNodes of the current pipeline. */
  public DatanodeInfo[] pipeline() {
    return nodes.clone();
  }

  /** The storage ids of {@link #pipeline()}'s DataNodes, in its order. */
  public String[] storageIds() {
    String[] ids = storageIds;
    return ids == null ? null : ids.clone();
  }

  /** The block token the current pipeline was set up with (a recovery's new one after it). */
  public Token<BlockTokenIdentifier> blockToken() {
    return token;
  }

  /** The block with its current generation stamp and the length every DataNode acknowledged (stock's streamer's block). Any thread. */
  public synchronized ExtendedBlock ackedBlock() {
    ExtendedBlock b = new ExtendedBlock(block);
    b.setNumBytes(acked);
    return b;
  }

  /** Closed (finished, failed for good or aborted): no pipeline any more. Any thread. */
  public boolean isClosed() {
    return closed;
  }

  /**
   * Stock's stage of this block (DataStreamer#getStage): DATA_STREAMING once the pipeline is
   * set up, PIPELINE_CLOSE from the last packet on (a close recovery too, as stock's stays so),
   * PIPELINE_SETUP_CREATE once closed (stock's endBlock). Any thread.
   */
  public org.apache.hadoop.hdfs.protocol.datatransfer.BlockConstructionStage stage() {
    if (closed) {
      return org.apache.hadoop.hdfs.protocol.datatransfer.BlockConstructionStage.PIPELINE_SETUP_CREATE;
    }
    return lastSent ? org.apache.hadoop.hdfs.protocol.datatransfer.BlockConstructionStage.PIPELINE_CLOSE
        : org.apache.hadoop.hdfs.protocol.datatransfer.BlockConstructionStage.DATA_STREAMING;
  }

  /**
   * Stock's {@code DataStreamer#getPipelineRecoveryCount()}: pipeline recoveries begun since a
   * data packet was last acknowledged by every DataNode (a recovery for a DataNode that sent
   * OOB_RESTART is none); 0 again once one is. Any thread.
   */
  public synchronized int recoveriesSinceAck() {
    return recoveriesSinceAck;
  }

  /**
   * Stock's {@code DataStreamer#updatePipeline(long)}: the caller says every DataNode of the
   * pipeline has the replica with generation stamp {@code newGs}; the NameNode records the
   * pipeline with it and the block takes it, as the last step of a recovery. The writing
   * thread's (the owner serializes it with writes).
   */
  public void updatePipeline(long newGs) throws IOException {
    checkOpen();
    if (recovery == null) {
      throw new IOException("the writer of " + block + " has no file to update a pipeline for");
    }
    commitPipeline(ackedBlock(), newGs);
  }

  /** The NameNode records the pipeline with {@code newGs} for {@code current} (the acked length), then the block takes it. */
  private void commitPipeline(ExtendedBlock current, long newGs) throws IOException {
    ExtendedBlock updated = new ExtendedBlock(current);
    updated.setGenerationStamp(newGs);
    recovery.dfs().getNamenode().updatePipeline(recovery.dfs().getClientName(), current, updated, nodes, storageIds);
    synchronized (this) {
      block.setGenerationStamp(newGs);
    }
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
    long target = send(sync);
    waitFor(() -> acked >= target || lastAcked);
    return bytesAcked();
  }

  /**
   * The sending half of {@link #flush}: sends the bytes buffered so far (with
   * {@code sync}, a packet even if there are none) and returns the block
   * offset every DataNode must acknowledge for the flush to be done.
   */
  public long send(boolean sync) throws IOException {
    checkOpen();
    if (sync || offset + bufLen > lastSentEnd) {
      sendPacket(false, sync);
    }
    hflushed = true;
    return lastSentEnd;
  }

  /**
   * Waits, without changing the pipeline, until every DataNode acknowledged
   * the block up to {@code target} (or the writer closed with every packet
   * acknowledged): true. False: the pipeline failed, or no ack came within
   * the timeout (which fails it); the owner recovers it
   * ({@link #recoverIfFailed()}) and the caller waits again.
   *
   * @throws InterruptedIOException interrupted (the interrupt status is cleared, as stock)
   */
  public boolean awaitAcked(long target) throws IOException {
    long start = System.nanoTime();
    synchronized (this) {
      while (true) {
        if (acked >= target || lastAcked) {
          return true;
        }
        if (failure != null || closed) {
          return false;
        }
        long left = ackDeadlineMs(start);
        if (left <= 0) {
          fail(new SocketTimeoutException("no ack for " + block + " within " + ackTimeoutMs(nodes.length) + " ms ("
              + unacked.size() + " packets unacked)"), -1);
          return false;
        }
        try {
          wait(left);
        } catch (InterruptedException e) {
          throw new InterruptedIOException("Interrupted while waiting for data to be acknowledged by pipeline ("
              + block + ")");
        }
      }
    }
  }

  /**
   * Recovers the pipeline if it failed (one thread at a time, see the class
   * comment); nothing if another caller recovered it already.
   *
   * @throws IOException the pipeline cannot be recovered, or the writer is closed
   */
  public void recoverIfFailed() throws IOException {
    checkOpen();
  }

  /** As stock's DataStreamer (a test knob): sleep this long after each data packet sent. */
  public void setArtificialSlowdown(long ms) {
    slowdownMs = ms;
  }

  /** Test hook: flips one data byte of the next packet on the wire, after its checksums are computed. */
  void corruptNextPacketForTesting() {
    corruptNext = true;
  }

  /**
   * A file created with CreateFlag.SYNC_BLOCK: the last packet asks every DataNode to fsync
   * the replica as it closes it (stock: DataStreamer sets syncBlock on the block's last
   * packet). Writing thread only.
   */
  public void syncBlockAtEnd(boolean sync) {
    syncBlockAtEnd = sync;
  }

  /** Sends the buffered bytes and the last (empty) packet, waits for every ack. Idempotent. */
  @Override
  public void close() throws IOException {
    if (closed) {
      return;
    }
    try {
      checkOpen();
      if (!lastSent) {
        if (bufLen > 0 && offset + bufLen > lastSentEnd) {
          sendPacket(false, false);
        }
        waitFor(unacked::isEmpty); // as stock: every data packet is acknowledged before the last one goes
        sendPacket(true, syncBlockAtEnd);
      }
      waitFor(() -> lastAcked);
    } catch (InterruptedIOException e) {
      throw e; // as stock: the stream stays open, a second close goes on from here
    } catch (IOException | RuntimeException e) {
      abandon();
      finish();
      throw e;
    }
    finish();
  }

  /**
   * Gives the write up without finishing the block, as stock's DataStreamer closed by force
   * (an aborted stream): no last packet, the DataNodes are told the write ended in error and
   * the replica stays being written (the NameNode recovers it). Waiters of
   * {@link #awaitAcked} return. Idempotent; nothing after close.
   */
  public void abort() {
    synchronized (this) {
      if (closed) {
        return;
      }
    }
    abandon();
    finish();
  }

  private void finish() {
    synchronized (this) {
      closed = true;
      notifyAll(); // waiters of awaitAcked see the end
    }
    stopResponder();
  }

  /** Gives the write up at the DataNode (the replica stays RBW; the NameNode recovers it). */
  private void abandon() {
    if (lastAcked() || pending == null) {
      return;
    }
    try {
      conn.send(MessageCodec.encode(conn.endpoint().transport().allocator(), MessageKind.READ_STATUS,
          pending.id(), BlockOps.readStatus(Status.ERROR), null), null);
    } catch (IOException | RuntimeException e) {
      LOG.debug("hrdma client: cannot abandon the write of {}: {}", block, e.toString());
    }
  }

  private void stopResponder() {
    Thread t = responder;
    responder = null;
    if (t != null) {
      t.interrupt();
      try {
        t.join(timeoutMs);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (pending != null) {
      pending.close();
      pending = null;
    }
  }

  private synchronized boolean lastAcked() {
    return lastAcked;
  }

  private void checkOpen() throws IOException {
    if (closed) {
      throw new IOException("the writer of " + block + " is closed");
    }
    IOException f;
    synchronized (this) {
      f = failure;
    }
    if (f != null) {
      recover(f);
    }
  }

  private interface Cond {
    boolean holds();
  }

  /** Waits until {@code c} holds; a failure meanwhile is recovered (or thrown). */
  private void waitFor(Cond c) throws IOException {
    long start = System.nanoTime();
    while (true) {
      IOException f;
      synchronized (this) {
        f = failure;
        if (f == null) {
          if (c.holds()) {
            return;
          }
          long left = ackDeadlineMs(start);
          if (left <= 0) {
            fail(new SocketTimeoutException("no ack for " + block + " from " + conn + " within "
                + ackTimeoutMs(nodes.length) + " ms (" + unacked.size() + " packets unacked)"), -1);
            continue;
          }
          try {
            wait(left);
          } catch (InterruptedException e) {
            // as stock: the status is cleared, the writer intact (the call may be repeated)
            throw new InterruptedIOException("Interrupted while waiting for data to be acknowledged by pipeline ("
                + block + ")");
          }
          continue;
        }
      }
      recover(f);
      start = System.nanoTime();
    }
  }

  /**
   * Milliseconds left of a wait for acks begun at {@code start}: the ack timeout runs from the
   * later of that and the last ack (a pipeline that acks is alive, however long the wait).
   */
  private long ackDeadlineMs(long start) {
    long from = Math.max(start, lastAckNanos);
    return (from + ackTimeoutMs(nodes.length) * 1_000_000L - System.nanoTime()) / 1_000_000L;
  }

  private void sendPacket(boolean last, boolean sync) throws IOException {
    if (lastSent) {
      throw new IOException("the last packet of " + block + " was sent already");
    }
    backOffIfNecessary(); // as stock's streamer, before each packet; no lock of ours held
    waitFor(() -> unacked.size() < maxUnacked);
    int dataLen = last ? 0 : bufLen;
    Packet p = new Packet(seqno++, last ? offset + bufLen : offset, dataLen, last ? EMPTY : buf, last, sync);
    synchronized (sendLock) {
      synchronized (this) {
        unacked.add(p);
      }
      lastSent = last;
      lastSentEnd = p.end();
      if (!last) {
        // the packet keeps its array until acked; a partial chunk (hflush/hsync) goes again in the next one
        int partial = dataLen % bytesPerChecksum;
        buf = takeArray();
        System.arraycopy(p.data(), dataLen - partial, buf, 0, partial);
        offset = p.end() - partial;
        bufLen = partial;
      }
      transmit(p);
    }
    long slow = slowdownMs;
    if (slow > 0 && !last) {
      try {
        Thread.sleep(slow);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt(); // the packet is sent; the next wait reports the interrupt
      }
    }
  }

  private synchronized byte[] takeArray() {
    byte[] a = freeArrays.poll();
    return a != null ? a : new byte[packetBytes];
  }

  /** Sends {@code p} on the current pipeline; a failure is recorded (and recovered by the next wait). */
  private void transmit(Packet p) {
    int chunks = (p.len() + bytesPerChecksum - 1) / bytesPerChecksum;
    int sumLen = chunks * 4;
    RegisteredBuffer m = null;
    try {
      m = MessageCodec.begin(conn.packetAllocator(), MessageKind.DATA_PACKET, pending.id(),
          BlockOps.packetHeader(p.seqno(), p.start(), p.last(), p.len(), p.sync()), sumLen + p.len());
      ByteBuffer out = m.nio();
      for (int i = 0; i < p.len(); i += bytesPerChecksum) {
        crc.reset();
        crc.update(p.data(), i, Math.min(bytesPerChecksum, p.len() - i));
        out.putInt((int) crc.getValue());
      }
      int at = out.position();
      out.put(p.data(), 0, p.len());
      if (corruptNext && p.len() > 0) {
        corruptNext = false;
        out.put(at + p.len() / 2, (byte) (out.get(at + p.len() / 2) ^ 0x5a));
      }
      if (p.len() > 0 && !p.last()) {
        // stock's fault injector, as DFSPacket#writeTo: the last data byte flipped after the checksums;
        // not "uncorrupted", it stays so for every resend
        if (p.corrupt || FaultInjection.corruptPacket()) {
          int i = at + p.len() - 1;
          out.put(i, (byte) (out.get(i) ^ 0xff));
          if (!p.corrupt && !FaultInjection.uncorruptPacket()) {
            p.corrupt = true;
          }
        }
      }
      MessageCodec.finish(m);
      if (p.len() > 0) {
        m.placeAligned(MessageCodec.packetPlacement(at - m.nio().position(), p.start(), p.len()));
      }
    } catch (IOException | RuntimeException e) {
      if (m != null) {
        m.release();
      }
      fail(e instanceof IOException io ? io : new IOException("cannot send packet " + p.seqno() + " of " + block
          + ": " + e, e), -1);
      return;
    }
    conn.sendPacket(m, pending); // a failed send fails the pending request, which the responder reports
    lastSendNanos = System.nanoTime();
  }

  /**
   * The responder's heartbeat (stock DataStreamer: a packet of seqno -1 without data when none went
   * out for half the socket timeout), on pipeline {@code c}/{@code p}; none once the last packet went
   * or the pipeline failed. It is queued for its ack like a packet, in wire order.
   */
  private void sendHeartbeat(DataNodeConnection c, PendingRead p) {
    synchronized (sendLock) {
      if (lastSent || closed) {
        return;
      }
      RegisteredBuffer m;
      try {
        m = MessageCodec.encode(c.endpoint().transport().allocator(), MessageKind.DATA_PACKET, p.id(),
            BlockOps.heartbeatHeader(), null);
      } catch (IOException | RuntimeException e) {
        fail(e instanceof IOException io ? io : new IOException("cannot send a heartbeat for " + block + ": " + e,
            e), -1);
        return;
      }
      synchronized (this) {
        if (failure != null) {
          m.release();
          return;
        }
        unacked.add(Packet.newHeartbeat());
      }
      c.send(m, p);
      lastSendNanos = System.nanoTime();
    }
  }

  /** Stock's ack timeout (DFSClient#getDatanodeReadTimeout): the socket timeout plus 5 s per DataNode. */
  private long ackTimeoutMs(int pipelineLength) {
    return socketTimeoutMs > 0 ? socketTimeoutMs + HdfsConstants.READ_TIMEOUT_EXTENSION * (long) pipelineLength
        : NO_TIMEOUT_MS;
  }

  // -------------------------------------------------------------- recovery

  /**
   * Sets the pipeline up again without the bad DataNode (see the class
   * comment), or throws: no recovery context, too many recoveries, no
   * DataNode left, or a NameNode refusal.
   */
  private void recover(IOException cause) throws IOException {
    if (recovery == null || closed) {
      throw new IOException(cause.getMessage(), cause);
    }
    int bad;
    int restarting;
    long deadline;
    long nextTry;
    synchronized (this) {
      bad = badNode;
      restarting = restartingNode;
      if (!restartFailure) {
        recoveriesSinceAck++; // as stock's count (DataStreamer#processDatanodeOrExternalError)
      }
      restartFailure = false;
      // stock ErrorState#initRestartingNode: the wait runs from the OOB ack
      deadline = restartNoticeNanos + restartTimeoutMs * 1_000_000L;
      nextTry = restartNoticeNanos + restartRetryMs() * 1_000_000L;
    }
    abandon();
    stopResponder();
    synchronized (this) {
      failure = null; // the old pipeline's; the next responder must not take it for its own
      badNode = -1;
      restartingNode = -1;
    }
    // by identity, not index: a replacement added meanwhile may reorder the pipeline
    DatanodeInfo waitFor = restarting >= 0 && restarting < nodes.length ? nodes[restarting] : null;
    IOException last = cause;
    while (true) {
      restarting = waitFor == null ? -1 : Arrays.asList(nodes).indexOf(waitFor);
      if (restarting >= 0) {
        // stock DataStreamer#handleRestartingDatanode: a pause before each try; tries for a
        // restarting DataNode are not recoveries (stock counts them apart, too)
        sleepUntil(nextTry);
        nextTry = System.nanoTime() + restartRetryMs() * 1_000_000L;
      } else if (++recoveries > maxRecoveries) {
        throw new IOException("gave up writing " + block + " after " + maxRecoveries + " pipeline recoveries ("
            + MAX_RECOVERIES_KEY + "): " + last.getMessage(), last);
      }
      if (restarting < 0 || bad >= 0) {
        if (bad < 0 || bad >= nodes.length) {
          bad = 0; // nothing named a DataNode: the first one is suspect (as stock)
        }
        if (nodes.length <= 1) {
          throw new IOException("All datanodes " + Arrays.toString(nodes) + " are bad. Aborting... (" + block
              + ": " + last.getMessage() + ")", last);
        }
        LOG.warn("hrdma client: error recovery for {} in pipeline {}: datanode {}({}) is bad: {}", block,
            Arrays.toString(nodes), bad, nodes[bad], last.getMessage());
        failedNodes.add(nodes[bad]);
        removeNode(bad);
        // stock ErrorState#adjustState4RestartingNode: a failure past the restarting node means it is back
        if (restarting >= 0 && bad > restarting) {
          waitFor = null;
        }
        bad = -1;
      } else {
        LOG.info("hrdma client: recovering the pipeline of {} keeping datanode {}({}), restarting: {}", block,
            restarting, nodes[restarting], Arrays.toString(nodes));
      }
      long ackedNow;
      long sentNow = lastSentEnd;
      boolean closeRecovery;
      synchronized (this) {
        unacked.removeIf(Packet::heartbeat); // the old pipeline's; nothing to send again
        ackedNow = acked;
        closeRecovery = unacked.size() == 1 && unacked.peek().last();
      }
      ExtendedBlock current;
      synchronized (this) {
        current = new ExtendedBlock(block);
      }
      current.setNumBytes(ackedNow);
      // as stock 3.5 (DataStreamer#addDatanode2ExistingPipeline), a closing pipeline too: its
      // replicas are complete (every data packet was acked), the new DataNode gets a copy
      addDatanodeIfPolicyAsks(current);
      ClientProtocol nn = recovery.dfs().getNamenode();
      String clientName = recovery.dfs().getClientName();
      LocatedBlock lb = nn.updateBlockForPipeline(current, clientName);
      long newGs = lb.getBlock().getGenerationStamp();
      token = lb.getBlockToken(); // as stock's accessToken: the new pipeline is set up with it
      BlockConstructionStage stage = closeRecovery ? BlockConstructionStage.PIPELINE_CLOSE_RECOVERY
          : BlockConstructionStage.PIPELINE_SETUP_STREAMING_RECOVERY;
      try {
        openPipeline(BlockOps.recoverBlock(current, lb.getBlockToken(), clientName, nodes, storageTypes,
            storageIds, sum, stage, ackedNow, sentNow, newGs));
      } catch (PipelineSetupException e) {
        bad = indexOf(e.firstBadLink);
        last = e;
        restarting = waitFor == null ? -1 : Arrays.asList(nodes).indexOf(waitFor);
        if (restarting >= 0) {
          // stock ErrorState#checkRestartingNodeDeadline: the restarting node failing is expected
          // until the deadline (an unnamed failure is the first node's, as stock); past it, it is a
          // failed one (unless another node failed this time: that one goes first)
          if (bad < 0) {
            bad = 0;
          }
          if (bad == restarting) {
            bad = -1;
          }
          if (System.nanoTime() - deadline >= 0) {
            LOG.warn("hrdma client: datanode {} did not restart within {} ms ({}): {}", restarting,
                restartTimeoutMs, HdfsClientConfigKeys.DFS_CLIENT_DATANODE_RESTART_TIMEOUT_KEY, waitFor);
            if (bad < 0) {
              bad = restarting;
            }
            waitFor = null;
          }
        }
        continue;
      }
      commitPipeline(current, newGs);
      List<Packet> again;
      synchronized (this) {
        if (closeRecovery) {
          unacked.clear(); // every DataNode finalized the replica in the setup
          lastAcked = true;
          recoveriesSinceAck = 0; // as stock: the last packet counts as acknowledged
          notifyAll();
        }
        again = new ArrayList<>(unacked);
      }
      LOG.info("hrdma client: recovered the pipeline of {} (generation stamp {}): {}, {}; resending {} packets"
          + " from offset {}", block, newGs, Arrays.toString(nodes), stage, again.size(), ackedNow);
      recovery.onRecovered().run();
      synchronized (sendLock) { // the new responder's heartbeats go after these
        for (Packet p : again) {
          transmit(p);
        }
      }
      return;
    }
  }

  /** Stock DataStreamer#handleRestartingDatanode: tries every 4 s, or the restart timeout when shorter. */
  private long restartRetryMs() {
    return Math.min(restartTimeoutMs, 4000L);
  }

  private static void sleepUntil(long nanos) throws InterruptedIOException {
    long left = nanos - System.nanoTime();
    if (left <= 0) {
      return;
    }
    try {
      TimeUnit.NANOSECONDS.sleep(left);
    } catch (InterruptedException e) {
      throw new InterruptedIOException("Interrupted while waiting for a restarting datanode");
    }
  }

  /**
   * Stock DataStreamer#shouldWaitForRestart: the only DataNode of the pipeline, or one on this
   * host (unless stock's fault injector says to take every one as remote).
   */
  static boolean shouldWaitForRestart(DatanodeInfo[] pipeline, int i) {
    if (pipeline.length == 1) {
      return true;
    }
    if (FaultInjection.skipRollingRestartWait()) {
      return false;
    }
    try {
      return NetUtils.isLocalAddress(InetAddress.getByName(pipeline[i].getIpAddr()));
    } catch (UnknownHostException e) {
      return false;
    }
  }

  private int indexOf(String xferAddr) {
    return indexOf(nodes, xferAddr);
  }

  /** The index of the DataNode with transfer address {@code xferAddr} in {@code nodes}, or -1. */
  static int indexOf(DatanodeInfo[] nodes, String xferAddr) {
    for (int i = 0; i < nodes.length; i++) {
      if (nodes[i].getXferAddr().equals(xferAddr)) {
        return i;
      }
    }
    return -1;
  }

  private void removeNode(int i) {
    nodes = without(nodes, i, new DatanodeInfo[nodes.length - 1]);
    storageTypes = storageTypes == null || storageTypes.length <= i ? storageTypes
        : without(storageTypes, i, new StorageType[storageTypes.length - 1]);
    storageIds = storageIds == null || storageIds.length <= i ? storageIds
        : without(storageIds, i, new String[storageIds.length - 1]);
  }

  private static <T> T[] without(T[] a, int i, T[] out) {
    System.arraycopy(a, 0, out, 0, i);
    System.arraycopy(a, i + 1, out, i, a.length - i - 1);
    return out;
  }

  /**
   * The replace-datanode-on-failure policy (stock DataStreamer#handleDatanodeReplacement):
   * when it asks, the NameNode names a new DataNode and a surviving one
   * copies the replica to it; with best-effort, a failure only logs.
   */
  private void addDatanodeIfPolicyAsks(ExtendedBlock current) throws IOException {
    if (!replacePolicy.satisfy(recovery.replication(), nodes, false, hflushed)) {
      return;
    }
    try {
      addDatanode(current);
    } catch (IOException e) {
      if (!replacePolicy.isBestEffort()) {
        throw e;
      }
      LOG.warn("hrdma client: failed to replace a datanode of {}; continuing with {} (best effort): {}", block,
          Arrays.toString(nodes), e.getMessage());
    }
  }

  private void addDatanode(ExtendedBlock current) throws IOException {
    ClientProtocol nn = recovery.dfs().getNamenode();
    List<DatanodeInfo> exclude = new ArrayList<>(failedNodes);
    DatanodeInfo[] original = nodes;
    IOException last = null;
    for (int tried = 0; tried < 3; tried++) {
      LocatedBlock lb = nn.getAdditionalDatanode(recovery.src(), recovery.fileId(), current, original, storageIds,
          exclude.toArray(new DatanodeInfo[0]), 1, recovery.dfs().getClientName());
      int d = -1;
      for (int i = 0; i < lb.getLocations().length && d < 0; i++) {
        if (!Arrays.asList(original).contains(lb.getLocations()[i])) {
          d = i;
        }
      }
      if (d < 0) {
        if (replaceMinReplication > 0 && nodes.length >= replaceMinReplication) {
          LOG.warn("hrdma client: no new datanode for {}; continuing with {} (>= {} = {})", block,
              Arrays.toString(nodes), HdfsClientConfigKeys.BlockWrite.ReplaceDatanodeOnFailure.MIN_REPLICATION,
              replaceMinReplication);
          return;
        }
        throw new IOException("Failed to replace a bad datanode on the existing pipeline due to no more good"
            + " datanodes being available to try (" + block + ", pipeline " + Arrays.toString(original)
            + ", excluded " + exclude + ")");
      }
      DatanodeInfo added = lb.getLocations()[d];
      DatanodeInfo source = original[tried % original.length];
      try {
        StockTransfer.transfer(recovery.dfs(), conf, source, current, lb.getBlockToken(), added,
            lb.getStorageTypes()[d], lb.getStorageIDs()[d], (int) Math.min(Integer.MAX_VALUE, timeoutMs));
      } catch (IOException e) {
        LOG.warn("hrdma client: copying {} from {} to {} failed: {}", block, source, added, e.getMessage());
        exclude.add(added);
        last = e;
        continue;
      }
      LOG.info("hrdma client: added {} to the pipeline of {} (copied from {})", added, block, source);
      nodes = lb.getLocations();
      storageTypes = lb.getStorageTypes();
      storageIds = lb.getStorageIDs();
      return;
    }
    throw new IOException("could not add a datanode to the pipeline of " + block + ": "
        + (last == null ? "" : last.getMessage()), last);
  }

  // ------------------------------------------------------------- responder

  /** The responder of one pipeline: acks in seqno order; the first bad one fails the writer. */
  private void respond(DataNodeConnection c, PendingRead p, DatanodeInfo[] pipeline, boolean beats) {
    long ackTimeoutNs = ackTimeoutMs(pipeline.length) * 1_000_000L;
    // stock: half the socket timeout; none to a pipeline with a DataNode that does not take them
    long heartbeatNs = beats ? socketTimeoutMs / 2 * 1_000_000L : 0;
    long quietSince = System.nanoTime(); // the last message from the pipeline, or the start
    while (true) {
      synchronized (this) {
        if (lastAcked || failure != null || closed || Thread.currentThread().isInterrupted()) {
          return;
        }
      }
      long now = System.nanoTime();
      long waitNs = ackTimeoutNs - (now - quietSince);
      if (heartbeatNs > 0 && !lastSent) {
        long dueNs = heartbeatNs - (now - lastSendNanos);
        if (dueNs <= 0) {
          sendHeartbeat(c, p);
          continue;
        }
        waitNs = Math.min(waitNs, dueNs);
      }
      if (waitNs <= 0) {
        synchronized (this) {
          if (unacked.isEmpty()) {
            quietSince = now; // the application is not writing; nothing is owed
            continue;
          }
        }
        fail(new SocketTimeoutException("no ack for " + block + " from " + c + " within "
            + ackTimeoutNs / 1_000_000L + " ms (" + HdfsClientConfigKeys.DFS_CLIENT_SOCKET_TIMEOUT_KEY + " + 5 s"
            + " per DataNode, as stock)"), -1);
        return;
      }
      Message m;
      try {
        m = p.take(Math.max(1, (waitNs + 999_999) / 1_000_000L));
        quietSince = System.nanoTime();
      } catch (SocketTimeoutException e) {
        continue; // a heartbeat due, or the ack timeout: both checked above
      } catch (InterruptedIOException e) {
        return; // closed, or replaced by a recovery
      } catch (IOException e) {
        fail(e, -1);
        return;
      }
      try {
        switch (m.kind()) {
          case PIPELINE_ACK -> onAck(m.pipelineAck(), c, pipeline);
          case ERROR -> fail(new IOException(c + " failed the write of " + block + ": "
              + m.error().getStatus() + ": " + m.error().getMessage()), -1);
          default -> fail(new ProtocolException("unexpected " + m.kind() + " from " + c + " writing "
              + block), -1);
        }
      } catch (ProtocolException e) {
        fail(e, -1);
      } finally {
        m.release();
      }
    }
  }

  private void onAck(PipelineAckProto ack, DataNodeConnection c, DatanodeInfo[] pipeline) {
    List<Status> statuses = BlockOps.ackStatuses(ack);
    synchronized (this) {
      if (failure != null) {
        return;
      }
      int oob = BlockOps.oobIndex(ack);
      if (oob >= 0) {
        onOutOfBand(statuses.get(oob), oob, pipeline);
        return;
      }
      Packet head = unacked.peek();
      if (head == null || head.seqno() != ack.getSeqno()) {
        fail(new ProtocolException("ack for seqno " + ack.getSeqno() + " from " + c + " while "
            + (head == null ? "no packet is unacked" : "waiting for seqno " + head.seqno()) + " of " + block), -1);
        return;
      }
      for (int i = 0; i < statuses.size(); i++) {
        if (statuses.get(i) != Status.SUCCESS) {
          String node = i < pipeline.length ? pipeline[i].toString() : "pipeline node " + i;
          fail(new IOException("Bad response " + statuses.get(i) + " for " + block + " from datanode " + node
              + " (seqno " + ack.getSeqno() + ", acks " + statuses + ", pipeline " + Arrays.toString(pipeline)
              + ")"), i);
          return;
        }
      }
      if (statuses.size() != pipeline.length) {
        fail(new ProtocolException("ack for seqno " + ack.getSeqno() + " has " + statuses.size()
            + " statuses for a pipeline of " + pipeline.length), -1);
        return;
      }
      int[] headers = BlockOps.ackHeaders(ack);
      noteCongestedNodes(headers, pipeline);
      if (!countSlowNodes(headers, pipeline)) {
        return; // a node flagged SLOW too often: failed as bad, the packet not counted as acked
      }
      unacked.poll();
      lastAckNanos = System.nanoTime();
      if (head.heartbeat()) {
        notifyAll();
        return; // as stock: its statuses count, nothing else
      }
      acked = head.end();
      recoveriesSinceAck = 0; // as stock: a data packet acknowledged
      if (head.last()) {
        lastAcked = true;
      } else if (head.data().length == packetBytes && freeArrays.size() < maxUnacked) {
        freeArrays.push(head.data());
      }
      notifyAll();
    }
  }

  /**
   * Stock's DataStreamer.ResponseProcessor, for every ack whose statuses are all SUCCESS
   * (heartbeats' too): the nodes it flags CONGESTED (ECN) replace the congested set, which the
   * next packet backs off for; an ack that flags none clears it and the last back-off time.
   */
  private void noteCongestedNodes(int[] headers, DatanodeInfo[] pipeline) {
    List<DatanodeInfo> congested = new ArrayList<>(2);
    for (int i = headers.length - 1; i >= 0; i--) {
      if (BlockOps.isCongested(headers[i])) {
        congested.add(pipeline[i]);
      }
    }
    synchronized (congestedNodes) {
      congestedNodes.clear();
      if (!congested.isEmpty()) {
        congestedNodes.addAll(congested);
      } else {
        lastCongestionBackoffTime = 0;
      }
    }
  }

  /**
   * Stock's DataStreamer#backOffIfNecessary, before each packet: when the last ack flagged nodes
   * CONGESTED, sleeps a decorrelated random time (between the mean
   * {@code dfs.client.congestion.backoff.mean.time} and three times the last back-off, at most
   * {@code dfs.client.congestion.backoff.max.time}) and clears the set. The sleep holds no lock
   * of this writer's (the ack thread and flush waiters go on); the caller's stream monitor stays
   * held, as while it waits for room in the window (stock's writer waits under its stream's
   * lock when the streamer does not drain). An interrupt ends the sleep and is kept for the next
   * wait, as the slowdown's.
   */
  private void backOffIfNecessary() {
    int t = 0;
    synchronized (congestedNodes) {
      if (!congestedNodes.isEmpty()) {
        StringBuilder sb = new StringBuilder("DataNode");
        for (DatanodeInfo i : congestedNodes) {
          sb.append(' ').append(i);
        }
        int range = Math.abs(lastCongestionBackoffTime * 3 - congestionBackOffMeanTimeInMs);
        int base = Math.min(lastCongestionBackoffTime * 3, congestionBackOffMeanTimeInMs);
        t = Math.min(congestionBackOffMaxTimeInMs, (int) (base + Math.random() * range));
        lastCongestionBackoffTime = t;
        sb.append(" are congested. Backing off for ").append(t).append(" ms");
        LOG.info(sb.toString());
        congestedNodes.clear();
      }
    }
    if (t != 0) {
      try {
        Thread.sleep(t);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt(); // the next wait reports it; nothing was sent
      }
    }
  }

  /**
   * Stock's DataStreamer.ResponseProcessor#markSlowNode, for every ack whose statuses are all
   * SUCCESS, heartbeats' too: the nodes this ack flags SLOW count one more consecutive ack each,
   * a node it does not flag starts again (all when it flags none), and the first node flagged in
   * {@code dfs.client.mark.slownode.as.badnode.threshold} consecutive acks fails the pipeline
   * with that node bad, as an ERROR from it would. False when it did.
   */
  private boolean countSlowNodes(int[] headers, DatanodeInfo[] pipeline) {
    List<DatanodeInfo> flagged = new ArrayList<>(2);
    for (int i = headers.length - 1; i >= 0; i--) {
      if (BlockOps.isSlow(headers[i])) {
        flagged.add(pipeline[i]);
      }
    }
    if (flagged.isEmpty()) {
      slowNodes.clear();
      return true;
    }
    Set<DatanodeInfo> discontinuous = new HashSet<>(slowNodes.keySet());
    for (DatanodeInfo n : flagged) {
      slowNodes.merge(n, 1, Integer::sum);
      discontinuous.remove(n);
    }
    slowNodes.keySet().removeAll(discontinuous);
    for (var it = slowNodes.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<DatanodeInfo, Integer> e = it.next();
      if (e.getValue() >= markSlowNodeAsBadNodeThreshold) {
        int index = Arrays.asList(pipeline).indexOf(e.getKey());
        if (index >= 0) {
          fail(new IOException("Receive reply from slowNode " + e.getKey() + " for continuous "
              + markSlowNodeAsBadNodeThreshold + " times, treating it as badNode"), index);
          return false;
        }
        it.remove();
      }
    }
    return true;
  }

  /**
   * An out-of-band ack naming DataNode {@code i} (stock DataStreamer.ResponseProcessor): an
   * OOB_RESTART fails the pipeline with that DataNode restarting, waited for when
   * {@link #shouldWaitForRestart} says so, else bad; any other status is a bad one.
   */
  private synchronized void onOutOfBand(Status s, int i, DatanodeInfo[] pipeline) {
    if (s != Status.OOB_RESTART || i >= pipeline.length) {
      fail(new IOException("Bad response " + s + " for " + block + " from datanode "
          + (i < pipeline.length ? pipeline[i] : "pipeline node " + i)), i);
      return;
    }
    boolean wait = shouldWaitForRestart(pipeline, i);
    IOException e = new IOException("Datanode " + i + " is restarting: " + pipeline[i]);
    if (failure == null) {
      restartFailure = true; // stock's ErrorState#isRestartingNode, waited for or not
    }
    if (failure == null && wait) {
      restartingNode = i;
      restartNoticeNanos = System.nanoTime();
      LOG.info("hrdma client: {} of {}; waiting up to {} ms for it ({})", e.getMessage(), block, restartTimeoutMs,
          HdfsClientConfigKeys.DFS_CLIENT_DATANODE_RESTART_TIMEOUT_KEY);
    }
    fail(e, wait ? -1 : i);
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
