package org.hdfsrdma.client;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.EnumSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.hadoop.fs.Syncable;
import org.apache.hadoop.hdfs.AddBlockFlag;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.protocol.ClientProtocol;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.security.token.block.InvalidBlockTokenException;
import org.apache.hadoop.ipc.RemoteException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The output stream of a file created through {@link RdmaDistributedFileSystem}:
 * the file was created at the NameNode by {@code ClientProtocol.create}; each
 * block is allocated with {@code addBlock} and written through an
 * {@link RdmaBlockWriter} (packets in registered buffers, a window of
 * {@value RdmaBlockWriter#WINDOW_BYTES_KEY} bytes in flight, its responder
 * thread taking the acks); {@link #close()} completes the file, retrying
 * {@code complete} while the NameNode answers false, as stock does.
 *
 * <p>{@link #hflush()}: every byte written so far is acknowledged by every
 * DataNode of the pipeline (new readers see it). {@link #hsync()}: the same,
 * the DataNodes fsync the replica before acking, and the length of the last
 * block goes to the NameNode ({@code ClientProtocol.fsync}).
 *
 * <p>Fallback: when the pipeline of the file's first block cannot be set up
 * over hrdma (a DataNode without the plugin, a transport that does not
 * connect), the block is abandoned, the (still empty) file deleted and
 * created again through the stock client, and the whole file is written by
 * the stock stream ({@link RdmaDistributedFileSystem#stockWriteFallbacks()}).
 *
 * <p>Failures after that: a DataNode failing while a block is written (an
 * error ack, a lost connection, no ack in time) is taken out of the pipeline
 * and the pipeline is recovered by the {@link RdmaBlockWriter} (new
 * generation stamp, the surviving DataNodes, a replacement when
 * {@code dfs.client.block.write.replace-datanode-on-failure.*} asks for one;
 * {@link RdmaDistributedFileSystem#pipelineRecoveries()} counts them). A
 * later block whose pipeline cannot be set up is abandoned and allocated
 * again without the DataNode that failed, up to
 * {@code dfs.client.block.write.retries} times, as stock does.
 *
 * <p>Not thread-safe beyond what OutputStream promises: one writing thread.
 */
final class RdmaOutputStream extends OutputStream implements Syncable, StreamCapabilities {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaOutputStream.class);

  /** Re-creates the file through the stock client (the fallback), after the empty file was deleted. */
  interface StockCreate {
    FSDataOutputStream create() throws IOException;
  }

  /** The NameNode's exception (a server class) for "the previous block is not replicated yet". */
  private static final String NOT_REPLICATED_YET = "org.apache.hadoop.hdfs.server.namenode.NotReplicatedYetException";

  private final RdmaDistributedFileSystem fs;
  private final ClientProtocol namenode;
  private final String src;
  private final long fileId;
  private final String clientName;
  private final long blockSize;
  private final Configuration conf;
  private final StockCreate stockCreate;
  private final int addBlockRetries;
  private final int blockWriteRetries;
  private final RdmaBlockWriter.RecoveryContext recovery;
  private final byte[] one = new byte[1];

  private RdmaBlockWriter writer;
  private ExtendedBlock previous;   // the last block written completely
  private long bytesWritten;
  private FSDataOutputStream stock; // after a fallback
  private IOException failure;
  private boolean closed;
  private final boolean syncBlock;

  RdmaOutputStream(RdmaDistributedFileSystem fs, String src, long fileId, short replication, long blockSize,
      Configuration conf, StockCreate stockCreate) {
    this(fs, src, fileId, replication, blockSize, false, conf, stockCreate);
  }

  /** {@code syncBlock}: the file was created with CreateFlag.SYNC_BLOCK (every block fsynced at its end). */
  RdmaOutputStream(RdmaDistributedFileSystem fs, String src, long fileId, short replication, long blockSize,
      boolean syncBlock, Configuration conf, StockCreate stockCreate) {
    this.fs = fs;
    this.syncBlock = syncBlock;
    this.namenode = fs.getClient().getNamenode();
    this.clientName = fs.getClient().getClientName();
    this.src = src;
    this.fileId = fileId;
    this.blockSize = blockSize;
    this.conf = conf;
    this.stockCreate = stockCreate;
    this.addBlockRetries = conf.getInt("dfs.client.block.write.locateFollowingBlock.retries", 5);
    this.blockWriteRetries = conf.getInt(HdfsClientConfigKeys.BlockWrite.RETRIES_KEY,
        HdfsClientConfigKeys.BlockWrite.RETRIES_DEFAULT);
    this.recovery = new RdmaBlockWriter.RecoveryContext(fs.getClient(), src, fileId, replication,
        fs::countPipelineRecovery);
  }

  @Override
  public void write(int b) throws IOException {
    one[0] = (byte) b;
    write(one, 0, 1);
  }

  @Override
  public void write(byte[] b, int off, int len) throws IOException {
    if (off < 0 || len < 0 || off + len > b.length) {
      throw new IndexOutOfBoundsException("off " + off + ", len " + len + ", array " + b.length);
    }
    checkOpen();
    if (stock != null) {
      stock.write(b, off, len);
      return;
    }
    try {
      while (len > 0) {
        if (writer == null) {
          if (!startBlock()) {
            stock.write(b, off, len); // fell back
            return;
          }
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
    } catch (IOException e) {
      throw fail(e);
    }
  }

  /** Allocates the next block and opens its pipeline; false: fell back to the stock stream. */
  private boolean startBlock() throws IOException {
    List<DatanodeInfo> excluded = new ArrayList<>();
    for (int attempt = 0;; attempt++) {
      LocatedBlock lb = addBlock(excluded);
      IOException e;
      try {
        writer = RdmaBlockWriter.create(fs.blockClient(), lb, conf, recovery);
        writer.syncBlockAtEnd(syncBlock);
        return true;
      } catch (IOException ex) {
        e = ex;
      }
      try {
        namenode.abandonBlock(lb.getBlock(), fileId, src, clientName);
      } catch (IOException ae) {
        LOG.debug("hrdma: cannot abandon {}: {}", lb.getBlock(), ae.toString());
      }
      String msg = "hrdma: cannot set up the write pipeline of " + lb.getBlock() + " to "
          + Arrays.toString(lb.getLocations()) + " (first DataNode " + lb.getLocations()[0] + "): " + e.getMessage();
      if (previous == null && bytesWritten == 0) {
        return fallBack(msg, e);
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
  }

  /** The first block's pipeline could not be set up: the whole file goes through the stock client. */
  private boolean fallBack(String msg, IOException e) throws IOException {
    LOG.warn("{}; {} is written through the stock data path", msg, src);
    fs.countStockWriteFallback();
    fs.streamClosed(this); // the stock stream holds the lease from now on
    if (!fs.deleteForFallback(src)) {
      throw new IOException(msg + "; and the empty file could not be deleted for the stock client", e);
    }
    stock = stockCreate.create();
    return false;
  }

  private LocatedBlock addBlock(List<DatanodeInfo> excluded) throws IOException {
    long sleep = 400;
    DatanodeInfo[] ex = excluded.isEmpty() ? null : excluded.toArray(new DatanodeInfo[0]);
    for (int i = 0;; i++) {
      try {
        return namenode.addBlock(src, clientName, previous, ex, fileId, null, EnumSet.noneOf(AddBlockFlag.class));
      } catch (RemoteException e) {
        if (!NOT_REPLICATED_YET.equals(e.getClassName()) || i >= addBlockRetries) {
          throw e;
        }
        // as stock: the previous block is not minimally replicated yet; wait and ask again
        sleep(sleep);
        sleep *= 2;
      }
    }
  }

  private void endBlock() throws IOException {
    RdmaBlockWriter w = writer;
    writer = null;
    w.close();
    previous = w.block();
  }

  @Override
  public void hflush() throws IOException {
    checkOpen();
    if (stock != null) {
      stock.hflush();
      return;
    }
    if (writer != null) {
      try {
        writer.flush(false);
      } catch (IOException e) {
        throw fail(e);
      }
    }
  }

  @Override
  public void hsync() throws IOException {
    checkOpen();
    if (stock != null) {
      stock.hsync();
      return;
    }
    try {
      long length = -1;
      if (writer != null) {
        writer.flush(true);
        length = writer.position();
      }
      namenode.fsync(src, fileId, clientName, length);
    } catch (IOException e) {
      throw fail(e);
    }
  }

  @Override
  public void flush() throws IOException {
    if (stock != null) {
      stock.flush();
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

  /** Sends what is left, closes the last block's pipeline and completes the file. Idempotent. */
  @Override
  public void close() throws IOException {
    if (closed) {
      return;
    }
    closed = true;
    try {
      if (stock != null) {
        stock.close();
        return;
      }
      if (failure != null) {
        throw new IOException(failure.getMessage(), failure);
      }
      ExtendedBlock last = previous;
      if (writer != null) {
        RdmaBlockWriter w = writer;
        writer = null;
        w.close();
        last = w.block();
      }
      complete(last);
    } finally {
      fs.streamClosed(this);
    }
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

  /** Ends the stream after a failure (fs close): the writer is abandoned, the file not completed. */
  void abort() {
    if (closed) {
      return;
    }
    closed = true;
    RdmaBlockWriter w = writer;
    writer = null;
    if (w != null) {
      try {
        w.close();
      } catch (IOException e) {
        LOG.debug("hrdma: aborting {}: {}", src, e.toString());
      }
    }
  }

  String src() {
    return src;
  }

  /** The DataNodes of the current block's pipeline, or none between blocks (tests). */
  DatanodeInfo[] pipeline() {
    RdmaBlockWriter w = writer;
    return w == null ? new DatanodeInfo[0] : w.pipeline();
  }

  private IOException fail(IOException e) {
    if (failure == null) {
      failure = e;
    }
    return e;
  }

  private void checkOpen() throws IOException {
    if (closed) {
      throw new IOException("Stream closed: " + src); // ClosedChannelException in stock; message as contract
    }
    if (failure != null) {
      throw new IOException("the stream of " + src + " failed earlier: " + failure.getMessage(), failure);
    }
  }

  private static void sleep(long ms) throws IOException {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted");
    }
  }

  @Override
  public String toString() {
    return "RdmaOutputStream[" + src + ", " + bytesWritten + " bytes" + (stock != null ? ", stock" : "") + "]";
  }
}
