package org.hdfsrdma.client;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.hadoop.hdfs.DFSOutputStream;
import org.apache.hadoop.hdfs.HrdmaOutputStreamBase;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.client.HdfsDataOutputStream;
import org.apache.hadoop.hdfs.client.HdfsDataOutputStream.SyncFlag;
import org.apache.hadoop.hdfs.protocol.ClientProtocol;
import org.apache.hadoop.hdfs.protocol.DSQuotaExceededException;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.HdfsFileStatus;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.NSQuotaExceededException;
import org.apache.hadoop.hdfs.protocol.QuotaByStorageTypeExceededException;
import org.apache.hadoop.hdfs.protocol.UnresolvedPathException;
import org.apache.hadoop.hdfs.protocol.datatransfer.BlockConstructionStage;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.security.token.block.InvalidBlockTokenException;
import org.apache.hadoop.ipc.RemoteException;
import org.apache.hadoop.security.AccessControlException;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.DataChecksum;
import org.apache.hadoop.util.Progressable;
import org.hdfsrdma.client.compat.StockFileStream;
import org.hdfsrdma.client.compat.StockPacketSize;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The output stream of a file created through {@link RdmaDistributedFileSystem}:
 * the file was created at the NameNode by {@code ClientProtocol.create}; each
 * block is allocated with {@code addBlock} when its first packet is ready to
 * go (as stock: a file written and not flushed has no block yet) and written
 * through an {@link RdmaBlockWriter} (packets in registered buffers, a window
 * of {@value RdmaBlockWriter#WINDOW_BYTES_KEY} bytes in flight, its responder
 * thread taking the acks); {@link #close()} completes the file, retrying
 * {@code complete} while the NameNode answers false, as stock does.
 *
 * <p>It is a {@link DFSOutputStream} (one without a DataStreamer, see
 * {@link HrdmaOutputStreamBase}), so {@code create} returns an
 * {@link org.apache.hadoop.hdfs.client.HdfsDataOutputStream} around it as stock
 * does: {@code hsync(EnumSet<SyncFlag>)} with UPDATE_LENGTH (the NameNode
 * learns the last block's length) and END_BLOCK (the block is finished and the
 * next byte starts a new one), {@code getCurrentBlockReplication()} (the
 * DataNodes of the current pipeline) and {@code getPipeline()} are ours.
 *
 * <p>Lease: as stock's, the stream is one of the DFSClient's files being written
 * from {@link #beginFileLease()} (the file system calls it once the stream is
 * made) until it is closed or aborted: the client's LeaseRenewer renews the
 * file's lease meanwhile, {@code DFSClient#close} closes the stream, and renewal
 * failing past the lease's hard limit aborts it ({@link #abortWrite}).
 *
 * <p>{@link #hflush()}: every byte written so far is acknowledged by every
 * DataNode of the pipeline (new readers see it). {@link #hsync()}: the same,
 * and the DataNodes fsync the replica before acking.
 *
 * <p>Fallback: when the pipeline of the file's first block cannot be set up
 * over hrdma (a DataNode without the plugin or refusing the write, a transport
 * that does not connect), the block is abandoned and the file, as it is
 * (created, empty, under this client's lease), is written by a stock
 * DFSOutputStream from its first byte ({@link StockFileStream}); no byte has
 * left this stream before that, so the file's bytes and length are the same
 * ({@link RdmaDistributedFileSystem#stockWriteFallbacks()}).
 *
 * <p>Failures after that: a DataNode failing while a block is written is
 * taken out of the pipeline and the pipeline recovered by the
 * {@link RdmaBlockWriter}; a later block whose pipeline cannot be set up is
 * abandoned and allocated again without the DataNode that failed, up to
 * {@code dfs.client.block.write.retries} times, as stock does.
 *
 * <p>Thread-safety: as DFSOutputStream. Every method may be called from any
 * thread; writes, the sending half of a flush and close hold the stream's
 * monitor, and a flush waits for its acks without it, so many threads may
 * write and hflush one stream (the HBase WAL pattern) and one may close it
 * meanwhile. A flush whose bytes were acknowledged returns normally even if
 * the stream is closed meanwhile; one started after close throws
 * ClosedChannelException. An interrupted flush or close throws
 * InterruptedIOException with the interrupt status cleared and leaves the
 * stream open and intact (a second close completes the file), as stock.
 * Buffer ownership: the caller's arrays are copied before write returns.
 */
final class RdmaOutputStream extends HrdmaOutputStreamBase {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaOutputStream.class);

  /** The NameNode's exception (a server class) for "the previous block is not replicated yet". */
  private static final String NOT_REPLICATED_YET = "org.apache.hadoop.hdfs.server.namenode.NotReplicatedYetException";

  private final RdmaDistributedFileSystem fs;
  private final ClientProtocol namenode;
  private final String clientName;
  private final short replication;
  private final Configuration conf;
  private final HdfsFileStatus stat;
  private final EnumSet<CreateFlag> flags;
  private final String[] favoredNodes; // null: the NameNode's own choice
  private final Progressable progress;
  private final DataChecksum checksum;
  private final int addBlockRetries;
  private final int blockWriteRetries;
  private final RdmaBlockWriter.RecoveryContext recovery;
  private final byte[] one = new byte[1];
  /** Bytes of a block whose pipeline is not set up yet (stock allocates a block when its first packet is full). */
  private final byte[] head;

  // guarded by this (writer and previous are also read without it, by the streamer view)
  private int headLen;
  private volatile RdmaBlockWriter writer;
  private volatile ExtendedBlock previous;   // the last block written completely
  private volatile Token<BlockTokenIdentifier> previousToken; // its pipeline's token
  private long bytesWritten;
  private volatile DFSOutputStream stock; // after a fallback (set once; read without the monitor by the streamer view)
  private IOException failure;
  private final boolean syncBlock; // CreateFlag.SYNC_BLOCK: every block fsynced at its end
  private boolean persistBlocks;    // a block was allocated since the last flush: its length goes to the NameNode
  private volatile long slowdownMs;
  private boolean leaseRecoveryAsked; // dfs.client.write.recover.lease.on.close.exception acted on

  /**
   * The stream of the file {@code stat} (created by {@code fs} at the NameNode), holding its
   * lease as {@code DFSClient#create} makes a stock stream hold it (the file joins the client's
   * files being written), wrapped as stock wraps its own. The file system calls this rather than
   * the constructor: a method of its own that passed this class where a DFSOutputStream is
   * expected would have the JVM's verifier load this class, and with it its base, as soon as the
   * file system's class is linked: before {@code StreamBaseLoader} could place the base in
   * Hadoop's class loader. {@code favoredNodes}: "host:port" of DataNodes the NameNode should
   * place the blocks on, or null.
   */
  static HdfsDataOutputStream create(RdmaDistributedFileSystem fs, String src, HdfsFileStatus stat,
      EnumSet<CreateFlag> flags, Progressable progress, Configuration conf, String[] favoredNodes,
      FileSystem.Statistics statistics) throws IOException {
    RdmaOutputStream out = new RdmaOutputStream(fs, src, stat, flags, progress, conf, favoredNodes);
    out.beginFileLease();
    return fs.getClient().createWrappedOutputStream(out, statistics);
  }

  RdmaOutputStream(RdmaDistributedFileSystem fs, String src, HdfsFileStatus stat, EnumSet<CreateFlag> flags,
      Progressable progress, Configuration conf, String[] favoredNodes) {
    this(fs, src, stat, flags, progress, conf, defaultChecksum(fs.getClient()), favoredNodes);
  }

  private RdmaOutputStream(RdmaDistributedFileSystem fs, String src, HdfsFileStatus stat, EnumSet<CreateFlag> flags,
      Progressable progress, Configuration conf, DataChecksum checksum, String[] favoredNodes) {
    super(fs.getClient(), src, stat, flags, progress, checksum, 0);
    this.favoredNodes = favoredNodes;
    this.syncBlock = flags.contains(CreateFlag.SYNC_BLOCK);
    this.fs = fs;
    this.namenode = fs.getClient().getNamenode();
    this.clientName = fs.getClient().getClientName();
    this.replication = stat.getReplication();
    this.conf = conf;
    this.stat = stat;
    this.flags = flags;
    this.progress = progress;
    this.checksum = checksum;
    this.addBlockRetries = conf.getInt("dfs.client.block.write.locateFollowingBlock.retries", 5);
    this.blockWriteRetries = conf.getInt(HdfsClientConfigKeys.BlockWrite.RETRIES_KEY,
        HdfsClientConfigKeys.BlockWrite.RETRIES_DEFAULT);
    this.recovery = new RdmaBlockWriter.RecoveryContext(fs.getClient(), src, fileId, replication,
        fs::countPipelineRecovery, blockSize);
    // as stock: a block is allocated once a stock packet's data (dfs.client-write-packet-size) is written
    int packet = StockPacketSize.dataBytes(conf.getInt(HdfsClientConfigKeys.DFS_CLIENT_WRITE_PACKET_SIZE_KEY,
        HdfsClientConfigKeys.DFS_CLIENT_WRITE_PACKET_SIZE_DEFAULT), checksum.getBytesPerChecksum(),
        checksum.getChecksumSize());
    this.head = new byte[(int) Math.max(1, Math.min(packet, blockSize))];
  }

  @Override
  public synchronized void write(int b) throws IOException {
    one[0] = (byte) b;
    write(one, 0, 1);
  }

  @Override
  public synchronized void write(byte[] b, int off, int len) throws IOException {
    if (off < 0 || len < 0 || off + len > b.length) {
      throw new IndexOutOfBoundsException("off " + off + ", len " + len + ", array " + b.length);
    }
    checkClosed();
    if (stock != null) {
      stock.write(b, off, len);
      return;
    }
    try {
      while (len > 0) {
        if (writer == null) {
          int n = Math.min(len, head.length - headLen);
          System.arraycopy(b, off, head, headLen, n);
          headLen += n;
          off += n;
          len -= n;
          if (headLen == head.length && !startBlock()) {
            stock.write(b, off, len); // fell back
            return;
          }
          continue;
        }
        int n = (int) Math.min(len, blockSize - writer.position());
        writer.write(b, off, n);
        off += n;
        len -= n;
        bytesWritten += n;
        fs.countRdmaBytesWritten(n);
        if (writer.position() == blockSize) {
          endBlock();
        }
      }
    } catch (InterruptedIOException e) {
      throw interrupted(e);
    } catch (IOException e) {
      throw fail(e);
    }
  }

  /**
   * Allocates the next block, opens its pipeline and hands it the bytes
   * held for it; false: fell back to the stock stream (which has them now).
   */
  private boolean startBlock() throws IOException {
    List<DatanodeInfo> excluded = new ArrayList<>();
    for (int attempt = 0;; attempt++) {
      LocatedBlock lb = addBlock(excluded);
      IOException e;
      try {
        writer = RdmaBlockWriter.create(fs.blockClient(), lb, conf, recovery);
        writer.setArtificialSlowdown(slowdownMs);
        writer.syncBlockAtEnd(syncBlock);
        persistBlocks = true;
        break;
      } catch (IOException ex) {
        e = ex;
      }
      try {
        namenode.abandonBlock(lb.getBlock(), fileId, src, clientName);
      } catch (IOException ae) {
        LOG.debug("hrdma: cannot abandon {}: {}", lb.getBlock(), ae.toString());
      }
      if (e instanceof InterruptedIOException) {
        throw e; // nothing was sent: the next write, flush or close allocates again
      }
      String msg = "hrdma: cannot set up the write pipeline of " + lb.getBlock() + " to "
          + Arrays.toString(lb.getLocations()) + " (first DataNode " + lb.getLocations()[0] + "): " + e.getMessage();
      if (previous == null) {
        fallBack(msg);
        return false;
      }
      if (e instanceof InvalidBlockTokenException || attempt >= blockWriteRetries) {
        throw new IOException(msg, e);
      }
      // as stock: abandon the block and ask again without the DataNode that failed
      int i = e instanceof RdmaBlockWriter.PipelineSetupException p
          ? RdmaBlockWriter.indexOf(lb.getLocations(), p.firstBadLink) : -1;
      DatanodeInfo bad = lb.getLocations()[Math.max(i, 0)];
      excluded.add(bad);
      LOG.warn("{}; excluding {} and allocating the block again", msg, bad);
    }
    int n = headLen;
    headLen = 0;
    writer.write(head, 0, n);
    bytesWritten += n;
    fs.countRdmaBytesWritten(n);
    if (writer.position() == blockSize) {
      endBlock();
    }
    return true;
  }

  /**
   * The first block's pipeline could not be set up: the stock stream writes
   * the file from its first byte (the bytes held so far go to it first). The
   * file stays the one created, under the same lease (the DFSClient renews it for this stream).
   */
  private void fallBack(String msg) throws IOException {
    LOG.warn("{}; {} is written through the stock data path", msg, src);
    fs.countStockWriteFallback();
    DFSOutputStream s = StockFileStream.open(fs.getClient(), src, stat, flags, progress, checksum, favoredNodes);
    stock = s;
    int n = headLen;
    headLen = 0;
    s.write(head, 0, n);
  }

  private LocatedBlock addBlock(List<DatanodeInfo> excluded) throws IOException {
    long sleep = 400;
    DatanodeInfo[] ex = excluded.isEmpty() ? null : excluded.toArray(new DatanodeInfo[0]);
    for (int i = 0;; i++) {
      try {
        // as stock: CreateFlag NO_LOCAL_WRITE, NO_LOCAL_RACK, IGNORE_CLIENT_LOCALITY as AddBlockFlags
        return namenode.addBlock(src, clientName, previous, ex, fileId, favoredNodes, getAddBlockFlags());
      } catch (RemoteException e) {
        // as stock's addBlock: these reach the writer as themselves (a file deleted or no longer
        // under this client's lease is a FileNotFoundException; quotas, permissions, links)
        IOException u = e.unwrapRemoteException(FileNotFoundException.class, AccessControlException.class,
            NSQuotaExceededException.class, DSQuotaExceededException.class,
            QuotaByStorageTypeExceededException.class, UnresolvedPathException.class);
        if (u != e || !NOT_REPLICATED_YET.equals(e.getClassName()) || i >= addBlockRetries) {
          throw u;
        }
        // as stock: the previous block is not minimally replicated yet; wait and ask again
        sleep(sleep);
        sleep *= 2;
      }
    }
  }

  /** Closes the current block's pipeline (its last packet acknowledged: the replicas are final). */
  private void endBlock() throws IOException {
    RdmaBlockWriter w = writer;
    w.close();
    previous = w.block(); // before the writer goes: the streamer view always finds a block
    previousToken = w.blockToken();
    writer = null;
  }

  @Override
  public void hflush() throws IOException {
    flushOrSync(false, EnumSet.noneOf(SyncFlag.class));
  }

  @Override
  public void hsync() throws IOException {
    flushOrSync(true, EnumSet.noneOf(SyncFlag.class));
  }

  @Override
  public void hsync(EnumSet<SyncFlag> syncFlags) throws IOException {
    flushOrSync(true, syncFlags);
  }

  /**
   * Sends what is buffered under the monitor, waits for its acks without it
   * (other threads may write and flush meanwhile), then does END_BLOCK and
   * UPDATE_LENGTH as stock's flushOrSync.
   */
  private void flushOrSync(boolean sync, EnumSet<SyncFlag> syncFlags) throws IOException {
    try {
      flushOrSync0(sync, syncFlags);
    } catch (InterruptedIOException e) {
      throw interrupted(e);
    }
  }

  private void flushOrSync0(boolean sync, EnumSet<SyncFlag> syncFlags) throws IOException {
    RdmaBlockWriter w = null;
    long target = 0;
    DFSOutputStream s;
    synchronized (this) {
      checkClosed();
      s = stock;
      if (s == null) {
        try {
          if (writer == null && headLen > 0 && !startBlock()) {
            s = stock;
          } else if (writer != null) {
            w = writer;
            target = w.send(sync);
          }
        } catch (InterruptedIOException e) {
          throw e;
        } catch (IOException e) {
          throw fail(e);
        }
      }
    }
    if (s != null) {
      if (sync) {
        s.hsync(syncFlags);
      } else {
        s.hflush();
      }
      return;
    }
    if (w != null) {
      awaitAcked(w, target);
    }
    boolean updateLength = sync && syncFlags.contains(SyncFlag.UPDATE_LENGTH);
    long lastBlockLength = -1;
    boolean persist;
    synchronized (this) {
      if (sync && syncFlags.contains(SyncFlag.END_BLOCK) && w != null && writer == w) {
        try {
          endBlock();
        } catch (InterruptedIOException e) {
          throw e;
        } catch (IOException e) {
          throw fail(e);
        }
      }
      persist = persistBlocks;
      persistBlocks = false;
      if (updateLength || persist) {
        // as stock: the length of the last block allocated, as far as acknowledged
        lastBlockLength = writer != null ? writer.bytesAcked() : previous != null ? previous.getNumBytes() : -1;
      }
    }
    if (updateLength || persist) {
      try {
        // as stock: persists the block list, and the last block's length
        namenode.fsync(src, fileId, clientName, lastBlockLength);
      } catch (IOException e) {
        // as stock: another thread may have closed the file meanwhile; then the stream is closed
        LOG.warn("hrdma: cannot persist the blocks of {} in a flush: {}", src, e.toString());
        checkClosed();
        throw e;
      }
    }
  }

  /**
   * Waits until {@code w} acknowledged up to {@code target}, or closed having
   * all of it acknowledged. A failure of its pipeline is recovered under the
   * monitor (by whichever thread gets there first) and the wait goes on.
   */
  private void awaitAcked(RdmaBlockWriter w, long target) throws IOException {
    while (!w.awaitAcked(target)) {
      synchronized (this) {
        if (failure != null) {
          throw new IOException("the stream of " + src + " failed: " + failure.getMessage(), failure);
        }
        try {
          w.recoverIfFailed();
        } catch (InterruptedIOException e) {
          throw e;
        } catch (IOException e) {
          throw fail(e);
        }
      }
    }
  }

  @Override
  public void flush() throws IOException {
    DFSOutputStream s;
    synchronized (this) {
      s = stock;
    }
    if (s != null) {
      s.flush();
    }
  }

  @Override
  public boolean hasCapability(String capability) {
    switch (capability.toLowerCase(java.util.Locale.ENGLISH)) {
      case StreamCapabilities.HFLUSH:
      case StreamCapabilities.HSYNC:
        return true;
      default:
        return false;
    }
  }

  /**
   * Sends what is left, closes the last block's pipeline and completes the
   * file. Idempotent; interrupted, it throws InterruptedIOException and the
   * stream stays open (call close again), as stock.
   */
  @Override
  public synchronized void close() throws IOException {
    if (closed) {
      if (failure != null) {
        recoverLeaseAfterFailure(); // as stock's close of a stream that failed
      }
      return;
    }
    if (stock != null) {
      try {
        stock.close();
      } finally {
        setClosedNow();
      }
      return;
    }
    if (failure != null) {
      abortWrite(failure);
      recoverLeaseAfterFailure();
      throw new IOException(failure.getMessage(), failure);
    }
    try {
      if (writer == null && headLen > 0 && !startBlock()) {
        close(); // fell back: the stock stream closes the file
        return;
      }
      if (writer != null) {
        endBlock();
      }
      complete(previous);
      setClosedNow();
    } catch (InterruptedIOException e) {
      throw interrupted(e); // the stream stays open: a second close goes on
    } catch (IOException e) {
      abortWrite(e);
      recoverLeaseAfterFailure();
      throw e;
    }
  }

  /**
   * As stock's close when it fails, with {@code dfs.client.write.recover.lease.on.close.exception}
   * (read at each close, as stock): the file's lease is given back and its recovery started at the
   * NameNode ({@code DFSOutputStream#recoverLease}), so the file is closed with what the DataNodes
   * have instead of staying open until the lease's hard limit. Asked once.
   */
  private void recoverLeaseAfterFailure() {
    if (!leaseRecoveryAsked && conf.getBoolean( // the file system's, which its DFSClient reads
        HdfsClientConfigKeys.Write.RECOVER_LEASE_ON_CLOSE_EXCEPTION_KEY,
        HdfsClientConfigKeys.Write.RECOVER_LEASE_ON_CLOSE_EXCEPTION_DEFAULT)) {
      leaseRecoveryAsked = true;
      recoverLease(true);
    }
  }

  /** Closed: the file leaves the client's files being written, as stock's setClosed. */
  private void setClosedNow() {
    closed = true;
    endFileLease();
  }

  private void complete(ExtendedBlock last) throws IOException {
    long sleep = 10; // short first waits: the DataNodes' received-block reports are usually in flight
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (!namenode.complete(src, clientName, last, fileId)) {
      // as stock: the last block is not minimally replicated at the NameNode yet
      if (System.nanoTime() > deadline) {
        throw new IOException("Unable to close file " + src + " because the last block " + last
            + " does not have enough number of replicas.");
      }
      sleep(sleep);
      sleep = Math.min(sleep * 2, 2000);
    }
  }

  /**
   * Ends the stream after a failure, or as the DFSClient's abort (lease renewal failed past
   * the hard limit): the block being written is given up at its DataNodes (not finalized),
   * a stock stream after a fallback is aborted as stock aborts it, and the file is not
   * completed. Later calls fail with {@code why}.
   */
  @Override
  protected synchronized void abortWrite(IOException why) {
    if (closed) {
      return;
    }
    fail(why);
    setClosedNow();
    RdmaBlockWriter w = writer;
    writer = null;
    if (w != null) {
      w.abort();
    }
    DFSOutputStream s = stock;
    if (s != null) {
      try {
        abortStock(s);
      } catch (IOException e) {
        LOG.debug("hrdma: aborting {}: {}", src, e.toString());
      }
    }
  }

  /** The DataNodes of the current block's pipeline, or none between blocks. */
  synchronized DatanodeInfo[] pipeline() {
    RdmaBlockWriter w = writer;
    return w == null ? new DatanodeInfo[0] : w.pipeline();
  }

  /** As stock: the DataNodes of the current pipeline, null between blocks. */
  @Override
  public synchronized DatanodeInfo[] getPipeline() {
    if (stock != null) {
      return stock.getPipeline();
    }
    return writer == null ? null : writer.pipeline();
  }

  /** As stock: the DataNodes of the current pipeline, or the file's replication between blocks. */
  @Override
  public synchronized int getCurrentBlockReplication() throws IOException {
    if (stock != null) {
      return stock.getCurrentBlockReplication();
    }
    return writer == null ? replication : writer.pipeline().length;
  }

  @Override
  @Deprecated
  public synchronized int getNumCurrentReplicas() throws IOException {
    return getCurrentBlockReplication();
  }

  /** As stock (a test knob): sleep this long after sending each packet. */
  @Override
  public synchronized void setArtificialSlowdown(long period) {
    slowdownMs = period;
    if (writer != null) {
      writer.setArtificialSlowdown(period);
    }
    if (stock != null) {
      stock.setArtificialSlowdown(period);
    }
  }

  // ---------------------------------------------------------------- the streamer view's answers

  @Override
  protected DFSOutputStream stockStream() {
    return stock;
  }

  @Override
  protected DatanodeInfo[] currentNodes() {
    RdmaBlockWriter w = writer;
    return w == null || w.isClosed() ? null : w.pipeline();
  }

  @Override
  protected String[] currentStorageIDs() {
    RdmaBlockWriter w = writer;
    return w == null || w.isClosed() ? null : w.storageIds();
  }

  @Override
  protected ExtendedBlock currentBlock() {
    RdmaBlockWriter w = writer;
    if (w != null) {
      return w.ackedBlock();
    }
    ExtendedBlock p = previous;
    return p == null ? null : new ExtendedBlock(p);
  }

  @Override
  protected Token<BlockTokenIdentifier> currentBlockToken() {
    RdmaBlockWriter w = writer;
    return w != null ? w.blockToken() : previousToken;
  }

  @Override
  protected BlockConstructionStage currentStage() {
    RdmaBlockWriter w = writer;
    return w == null ? BlockConstructionStage.PIPELINE_SETUP_CREATE : w.stage();
  }

  @Override
  protected int pipelineRecoveryCount() {
    RdmaBlockWriter w = writer;
    return w == null ? 0 : w.recoveriesSinceAck();
  }

  @Override
  protected synchronized void updatePipeline(long newGS) throws IOException {
    checkClosed();
    if (writer == null) {
      throw new IOException("no block of " + src + " is being written: no pipeline to update");
    }
    writer.updatePipeline(newGS);
  }

  /** Whether the bytes go through the stock data path (after a fallback). */
  synchronized boolean onStockPath() {
    return stock != null;
  }

  private synchronized IOException fail(IOException e) {
    if (failure == null) {
      failure = e;
    }
    return e;
  }

  @Override
  protected synchronized void checkClosed() throws IOException {
    if (closed) {
      if (failure != null) {
        throw new IOException("the stream of " + src + " failed: " + failure.getMessage(), failure);
      }
      throw new ClosedChannelException(); // stock's words for a closed stream
    }
    if (failure != null) {
      throw new IOException("the stream of " + src + " failed earlier: " + failure.getMessage(), failure);
    }
  }

  /**
   * As stock, an InterruptedIOException leaves the interrupt status cleared:
   * the stock caller only waits for acks, while ours also makes the
   * NameNode calls (addBlock, complete), whose IPC client sets it again.
   */
  private static InterruptedIOException interrupted(InterruptedIOException e) {
    Thread.interrupted();
    return e;
  }

  private static void sleep(long ms) throws IOException {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      throw new InterruptedIOException("interrupted");
    }
  }

  @Override
  public synchronized String toString() {
    return "RdmaOutputStream[" + src + ", " + (bytesWritten + headLen) + " bytes" + (stock != null ? ", stock" : "")
        + "]";
  }
}
