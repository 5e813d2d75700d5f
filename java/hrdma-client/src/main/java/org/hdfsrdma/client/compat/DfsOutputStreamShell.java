package org.hdfsrdma.client.compat;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.EnumSet;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.hdfs.DFSClient;
import org.apache.hadoop.hdfs.DFSOutputStream;
import org.apache.hadoop.hdfs.protocol.HdfsFileStatus;
import org.apache.hadoop.util.DataChecksum;
import org.apache.hadoop.util.Progressable;

/**
 * A {@link DFSOutputStream} without its DataStreamer, for an output stream
 * that moves the bytes itself: what {@code create} and {@code append} return
 * must be a DFSOutputStream, since {@link org.apache.hadoop.hdfs.client.HdfsDataOutputStream}
 * (hsync with SyncFlags, getCurrentBlockReplication) and applications cast the
 * wrapped stream to it. The superclass keeps the file's identity (src, file id,
 * block size, replication, the SYNC_BLOCK flag); the subclass must override
 * every public method that would reach the missing streamer (writes, flushes,
 * close, pipeline queries). Package-private DFSOutputStream methods (abort,
 * getStreamer, getBlock) cannot be overridden from here and stay the stock
 * ones: only code inside Hadoop's package calls them.
 *
 * <p>Thread-safety and buffer ownership: the subclass's.
 */
public abstract class DfsOutputStreamShell extends DFSOutputStream {

  protected DfsOutputStreamShell(DFSClient dfs, String src, HdfsFileStatus stat, EnumSet<CreateFlag> flags,
      Progressable progress, DataChecksum checksum, long initialLength) {
    super(dfs, src, stat, flags, progress, checksum, null, false);
    this.initialFileSize = initialLength;
  }

  /** The checksum the client's configuration asks for (dfs.checksum.type, dfs.bytes-per-checksum). */
  public static DataChecksum defaultChecksum(DFSClient dfs) {
    return dfs.getConf().createChecksum(null);
  }

  /** Whether the file was created with CreateFlag.SYNC_BLOCK (every block fsynced at its end). */
  protected final boolean syncBlockOnClose() {
    return shouldSyncBlock;
  }

  /** The client this stream belongs to. */
  protected final DFSClient client() {
    return dfsClient;
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
