package org.apache.hadoop.hdfs;

import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import java.util.EnumSet;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.HdfsFileStatus;
import org.apache.hadoop.hdfs.protocol.datatransfer.BlockConstructionStage;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.DataChecksum;
import org.apache.hadoop.util.Progressable;

/**
 * Client compat: the base of hdfs-rdma's output stream, a {@link DFSOutputStream}
 * without its DataStreamer, for a stream that moves the bytes itself. What
 * {@code create} returns must be a DFSOutputStream, since
 * {@link org.apache.hadoop.hdfs.client.HdfsDataOutputStream} (hsync with SyncFlags,
 * getCurrentBlockReplication) and applications cast the wrapped stream to it. The
 * superclass keeps the file's identity (src, file id, block size, replication, the
 * SYNC_BLOCK flag); the subclass overrides every public method that would reach the
 * missing streamer (writes, flushes, close, pipeline queries).
 *
 * <p>It lives in Hadoop's package (as {@link HrdmaInputStreamBase}) for the file's lease,
 * which the stream holds as stock's does: {@link #beginFileLease()} puts it into the
 * DFSClient's files being written and its {@code LeaseRenewer} (stock's private
 * {@code DFSClient#beginFileLease}, called as {@code DFSClient#create} calls it), and
 * {@link #endFileLease()} takes it out ({@code DFSClient#endFileLease}, package-private,
 * where stock's {@code setClosed} calls it). So the DFSClient renews the lease while the
 * stream is open, {@code DFSClient#close} closes the stream, and when renewing fails past
 * the lease's hard limit the DFSClient calls {@link #abort()}, package-private: overridden
 * here so that it aborts the subclass's writer ({@link #abortWrite}) as stock's abort
 * stops its DataStreamer.
 *
 * <p>{@link #getStreamer()} (and so stock's {@code getBlock()}, {@code getBlockToken()}, which
 * read it) is a {@link HrdmaStreamerView}: a DataStreamer that is never started and answers
 * from the subclass's writer ({@link #currentNodes()} and the methods after it), or, after the
 * subclass handed its file to a stock stream ({@link #stockStream()}), that stream's streamer.
 * The view is also the superclass's {@code streamer} field, where stock's keeps its own.
 *
 * <p>The class refers to Hadoop and JDK types only, so that {@code StreamBaseLoader} can
 * define it in Hadoop's class loader. Verified against Apache Hadoop 3.5.0.
 * Thread-safety and buffer ownership: the subclass's.
 */
public abstract class HrdmaOutputStreamBase extends DFSOutputStream {
  /** Stock's {@code DFSClient#beginFileLease(String, DFSOutputStream)}, null where it is not one. */
  private static final MethodHandle BEGIN_FILE_LEASE = beginFileLeaseHandle();

  protected HrdmaOutputStreamBase(DFSClient dfs, String src, HdfsFileStatus stat, EnumSet<CreateFlag> flags,
      Progressable progress, DataChecksum checksum, long initialLength) {
    super(dfs, src, stat, flags, progress, checksum, null, false);
    this.initialFileSize = initialLength;
    // where stock's constructor puts its DataStreamer (tests read the field by reflection)
    this.streamer = new HrdmaStreamerView(this, stat, progress, checksum);
  }

  /**
   * The streamer view of this stream's writer, or, once the file went to a stock stream,
   * that stream's own DataStreamer (stock's {@code getBlock()} and {@code getBlockToken()}
   * read it, so they answer for whichever writes the bytes).
   */
  @Override
  protected DataStreamer getStreamer() {
    DFSOutputStream s = stockStream();
    return s != null ? s.getStreamer() : streamer;
  }

  // What the streamer view answers, from the subclass's writer at the moment of the call;
  // each is called without the stream's monitor (by any thread, while a write holds it).

  /** The stock stream the file was handed to (a fallback), or null. */
  protected abstract DFSOutputStream stockStream();

  /** The DataNodes of the current block's pipeline, null when none is set up (before a block, between blocks). */
  protected abstract DatanodeInfo[] currentNodes();

  /** The storage ids of {@link #currentNodes()}, in its order; null when it is. */
  protected abstract String[] currentStorageIDs();

  /**
   * The block being written, or between blocks the last one written, with its current
   * generation stamp and the length every DataNode acknowledged (stock's streamer's block);
   * null before the first block. A copy.
   */
  protected abstract ExtendedBlock currentBlock();

  /** The token the current (or last) block's pipeline was set up with, null before the first block. */
  protected abstract Token<BlockTokenIdentifier> currentBlockToken();

  /** Stock's stage: PIPELINE_SETUP_CREATE without a pipeline, DATA_STREAMING, PIPELINE_CLOSE once the last packet went. */
  protected abstract BlockConstructionStage currentStage();

  /** Stock's {@code getPipelineRecoveryCount()}: recoveries since a data packet was last acknowledged. */
  protected abstract int pipelineRecoveryCount();

  /**
   * Stock's {@code DataStreamer#updatePipeline(long)}: the current block takes generation stamp
   * {@code newGS}, which the caller says every DataNode of the pipeline has, and the NameNode
   * records the pipeline with it.
   */
  protected abstract void updatePipeline(long newGS) throws IOException;

  private static MethodHandle beginFileLeaseHandle() {
    try {
      return MethodHandles.privateLookupIn(DFSClient.class, MethodHandles.lookup()).findVirtual(DFSClient.class,
          "beginFileLease", MethodType.methodType(void.class, String.class, DFSOutputStream.class));
    } catch (ReflectiveOperationException | SecurityException e) {
      return null;
    }
  }

  /** Why this Hadoop's DFSClient cannot hold our streams' leases as stock's, null when it can. */
  public static String leaseUnavailable() {
    return BEGIN_FILE_LEASE == null ? "DFSClient#beginFileLease(String, DFSOutputStream) is not in this Hadoop" : null;
  }

  /** The checksum the client's configuration asks for (dfs.checksum.type, dfs.bytes-per-checksum). */
  public static DataChecksum defaultChecksum(DFSClient dfs) {
    return dfs.getConf().createChecksum(null);
  }

  /**
   * Puts the file into the client's files being written and starts its lease renewer, as
   * {@code DFSClient#create} does for a stock stream once it is made. Call once, when the
   * stream is ready to be handed out.
   */
  protected final void beginFileLease() throws IOException {
    if (BEGIN_FILE_LEASE == null) {
      throw new IOException("hrdma: " + leaseUnavailable());
    }
    try {
      BEGIN_FILE_LEASE.invokeExact(dfsClient, getUniqKey(), (DFSOutputStream) this);
    } catch (IOException | RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IOException("hrdma: cannot begin the lease of " + src + ": " + t, t);
    }
  }

  /** Takes the file out of the client's files being written (the renewer stops with the last one), as stock's setClosed. */
  protected final void endFileLease() {
    dfsClient.endFileLease(getUniqKey());
  }

  /**
   * Ends the stream without completing the file, as stock's abort: the write is given up
   * (its replicas stay being written; the NameNode recovers the file when the lease
   * expires), the stream is closed with {@code why} as its failure, and
   * {@link #endFileLease()} is called. Idempotent; nothing if the stream is closed.
   */
  protected abstract void abortWrite(IOException why);

  /**
   * Stock's abort, called by the DFSClient when renewing the lease failed past its hard
   * limit (and by Hadoop's tests through {@code DFSTestUtil.abortStream}): the stream's
   * failure is stock's words for it.
   */
  @Override
  void abort() throws IOException {
    abortWrite(new IOException("Lease timeout of " + (dfsClient.getConf().getHdfsTimeout() / 1000)
        + " seconds expired."));
  }

  /** Aborts a stock stream this one handed its file to (package-private in stock). */
  protected static void abortStock(DFSOutputStream stock) throws IOException {
    stock.abort();
  }

  /** Whether the file was created with CreateFlag.SYNC_BLOCK (every block fsynced at its end). */
  protected final boolean syncBlockOnClose() {
    return shouldSyncBlock;
  }

  /** The client this stream belongs to. */
  protected final DFSClient client() {
    return dfsClient;
  }

  /** Stock's reads the streamer's state, which this stream has not. */
  @Override
  boolean isClosed() {
    return closed;
  }

  /** Stock's releases the streamer; the subclass closes itself. */
  @Override
  void setClosed() {
    closed = true;
    endFileLease();
  }

  // FSOutputSummer's chunk path: the subclass overrides write(), so nothing reaches it.
  @Override
  protected final void writeChunk(byte[] b, int off, int len, byte[] sum, int sumOff, int sumLen)
      throws IOException {
    throw new IOException("not used: " + getClass().getSimpleName() + " sends its own packets");
  }

  @Override
  protected final void writeChunk(ByteBuffer b, int len, byte[] sum, int sumOff, int sumLen) throws IOException {
    throw new IOException("not used: " + getClass().getSimpleName() + " sends its own packets");
  }

  /** No DataStreamer to start. */
  @Override
  protected final synchronized void start() {
  }

  /** No DataStreamer threads. */
  @Override
  protected final void closeThreads(boolean force) {
  }

  @Override
  protected void flushInternal() throws IOException {
    hflush();
  }

  @Override
  protected long flushInternalWithoutWaitingAck() throws IOException {
    throw new UnsupportedOperationException("not used by " + getClass().getSimpleName());
  }

  @Override
  public synchronized void setChunksPerPacket(int value) {
    // packets are sized by hrdma.client.write.packet-bytes (or an explicit dfs.client-write-packet-size)
  }

  @Override
  public void setDropBehind(Boolean dropBehind) {
    // the plugin's writes do not use the page cache hints of the stock DataXceiver
  }
}
