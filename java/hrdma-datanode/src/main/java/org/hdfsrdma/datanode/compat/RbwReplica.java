package org.hdfsrdma.datanode.compat;

import java.io.DataOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.function.Consumer;
import org.apache.hadoop.hdfs.server.datanode.ReplicaHandler;
import org.apache.hadoop.hdfs.server.datanode.ReplicaInPipeline;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsVolumeSpi;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.ReplicaOutputStreams;
import org.apache.hadoop.util.DataChecksum;

/**
 * A replica being written, as {@code FsDatasetSpi#createRbw} returns it: the
 * replica plus a reference on its volume, released by {@link #close()}, and
 * the replica's own output streams ({@code ReplicaInPipeline#createStreams},
 * so the dataset's files, FileIoProvider and bookkeeping are used).
 *
 * <p>On-disk format, as the stock BlockReceiver writes a new replica: the
 * block file holds the data; the .meta file a 7-byte header (u16 version 1,
 * u8 checksum type, u32 bytesPerChecksum, big-endian) and then one checksum
 * per chunk as sent by the writer (CRC32C: 4 bytes big-endian).
 *
 * <p>Not thread-safe: one writer owns it.
 */
public final class RbwReplica implements AutoCloseable {
  /** BlockMetadataHeader's version. */
  public static final short META_VERSION = 1;

  private final ReplicaHandler handler;
  private final FsVolumeSpi volume;
  private final boolean channelWrites;
  private final Consumer<FsVolumeSpi> onIoFailure;
  private ReplicaOutputStreams streams;
  private FileChannel dataChannel; // the block file's, when channelWrites and the stream is a file stream
  private byte[] scratch = new byte[0];
  private DirectWriter direct;

  /** Writes block data around the page cache; see {@link #setDirectWriter}. */
  public interface DirectWriter {
    /** The alignment of file offset and length the writer needs; 0: it writes nothing now. */
    int alignment();

    /**
     * Writes a prefix of {@code data} (possibly none) at block-file offset
     * {@code at}, a multiple of {@link #alignment}, moving data's position
     * past what it wrote; returns its length.
     */
    int writeDirect(ByteBuffer data, long at) throws IOException;
  }

  /**
   * Block data is offered to {@code w}: a head up to the writer's alignment
   * goes through the block file's channel, the rest is offered to {@code w},
   * and what it leaves goes through the channel. Only where the data may
   * bypass the stream at all.
   */
  public void setDirectWriter(DirectWriter w) {
    this.direct = w;
  }
  private OutputStream checksumOut;
  private boolean closed;

  /**
   * @param channelWrites data may bypass the block file's stream (false when
   *     the DataNode profiles or injects faults into its file I/O, which only
   *     the stream reports)
   * @param onIoFailure what the DataNode does about a volume after a failed write
   */
  RbwReplica(ReplicaHandler handler, FsVolumeSpi volume, boolean channelWrites, Consumer<FsVolumeSpi> onIoFailure) {
    this.handler = handler;
    this.volume = volume;
    this.channelWrites = channelWrites;
    this.onIoFailure = onIoFailure;
  }

  ReplicaInPipeline replica() {
    return handler.getReplica();
  }

  /**
   * Makes {@code writer} the replica's writer in place of the calling thread, which the dataset
   * recorded when it created or took over the replica (stock: the xceiver thread stays the
   * writer). A block recovery interrupts the replica's writer and joins it before it touches
   * the replica ({@code ReplicaInPipeline#stopWriter}); our writes run on pooled threads, so a
   * thread that stands for the write is recorded instead.
   *
   * @return false when the replica's writer is not the calling thread: the dataset records
   *     none (SimulatedFSDataset's replicas take no writer; its recoveries stop none)
   */
  public boolean handOverWriter(Thread writer) {
    return replica().attemptToSetWriter(Thread.currentThread(), writer);
  }

  /** Clears the replica's writer if it is still {@code writer} (the write ended). */
  public void releaseWriter(Thread writer) {
    replica().attemptToSetWriter(writer, null);
  }

  /**
   * Leaves by the replica the restart marker stock's BlockReceiver leaves when its DataNode
   * shuts down for an upgrade ({@code ReplicaInPipeline#createRestartMetaStream}, the time in
   * milliseconds until which it holds, as text): the dataset, loading its volume again before
   * then, makes the replica RBW (its writer may carry on) instead of RWR, and deletes the marker.
   */
  public void writeRestartMarker(long untilEpochMs) throws IOException {
    try (java.io.Writer out = new java.io.OutputStreamWriter(replica().createRestartMetaStream(),
        java.nio.charset.StandardCharsets.UTF_8)) {
      out.write(Long.toString(untilEpochMs));
      out.flush();
    }
  }

  /** The storage (volume) the replica is on, for the NameNode's received-block report. */
  public String storageUuid() {
    return replica().getStorageUuid();
  }

  /** The volume the replica is on. */
  public DataNodeAccess.Volume volume() {
    return DataNodeAccess.volume(volume);
  }

  /**
   * The replica's block file (where the dataset put it; it moves at finalize),
   * or null when the dataset keeps no local files (SimulatedFSDataset).
   */
  public java.nio.file.Path blockFile() {
    org.apache.hadoop.hdfs.server.datanode.ReplicaInfo info = replica().getReplicaInfo();
    return info == null ? null : java.nio.file.Paths.get(info.getBlockURI());
  }

  public boolean onTransientStorage() {
    return replica().isOnTransientStorage();
  }

  public long numBytes() {
    return replica().getNumBytes();
  }

  public long bytesOnDisk() {
    return replica().getBytesOnDisk();
  }

  private FileChannel channelOf(ReplicaOutputStreams s) {
    // the stream's own channel: it shares the file position with the stream
    return channelWrites && s.getDataOut() instanceof FileOutputStream f ? f.getChannel() : null;
  }

  /**
   * Opens the replica's block and .meta files for a new replica and writes
   * the .meta header for {@code checksum} (stock: createStreams(isCreate=true),
   * then BlockMetadataHeader.writeHeader).
   */
  public void openStreams(DataChecksum checksum) throws IOException {
    if (streams != null) {
      throw new IllegalStateException("streams already open");
    }
    streams = replica().createStreams(true, checksum);
    checksumOut = streams.getChecksumOut();
    dataChannel = channelOf(streams);
    DataOutputStream header = new DataOutputStream(checksumOut);
    header.writeShort(META_VERSION);
    checksum.writeHeader(header);
    header.flush();
  }

  /**
   * Opens the streams of a replica taken over by
   * {@link DataNodeAccess#recoverRbw}: both files keep what they hold and are
   * positioned at their ends (stock: createStreams(isCreate=false), which
   * also checks the .meta file against the block file and the checksum).
   */
  public void openStreamsForRecovery(DataChecksum checksum) throws IOException {
    if (streams != null) {
      throw new IllegalStateException("streams already open");
    }
    streams = replica().createStreams(false, checksum);
    checksumOut = streams.getChecksumOut();
    dataChannel = channelOf(streams);
  }

  /**
   * Appends one packet: the data bytes (position to limit of {@code data},
   * which is consumed) at the end of the block file
   * and their checksums at the end of the .meta file, flushed to the OS (as
   * stock does per packet), then records the new length and last checksum
   * (ReplicaInPipeline#setLastChecksumAndDataLen), which readers of the
   * replica being written go by. The data goes at the block file's end; when
   * that end is inside a chunk, the caller first rewinds the .meta file by one
   * checksum ({@link #rewindLastChecksum}) and passes that chunk's new checksum.
   *
   * @param endOffset the block offset after this packet's data
   * @param lastChecksum the checksum of the chunk holding the last data byte
   */
  public void writePacket(ByteBuffer data, byte[] sums, int sumsOff, int sumsLen, long endOffset,
      byte[] lastChecksum) throws IOException {
    ReplicaInPipeline r = replica();
    if (r.getNumBytes() < endOffset) {
      r.setNumBytes(endOffset);
    }
    if (data.hasRemaining()) {
      writeData(data);
      checksumOut.write(sums, sumsOff, sumsLen);
      streams.flushDataOut();
      streams.flushChecksumOut();
      r.setLastChecksumAndDataLen(endOffset, lastChecksum);
    }
  }

  /**
   * The data goes through the block file's channel when it may (one copy,
   * the kernel's, from a direct buffer), through the stream otherwise. A
   * failure on the channel asks the DataNode to check the volume, as its
   * FileIoProvider does for a failed stream write.
   */
  private void writeData(ByteBuffer data) throws IOException {
    if (dataChannel != null) {
      try {
        int align = direct == null ? 0 : direct.alignment();
        if (align > 0) {
          long at = dataChannel.position();
          int head = (int) Math.min(data.remaining(), (align - at % align) % align);
          if (head > 0 && data.remaining() - head >= align) {
            ByteBuffer h = data.slice(data.position(), head);
            while (h.hasRemaining()) {
              dataChannel.write(h);
            }
            data.position(data.position() + head);
            at += head;
          }
          int n = at % align == 0 ? direct.writeDirect(data, at) : 0;
          if (n > 0) {
            dataChannel.position(at + n); // the stream's position too: it is the same file descriptor
          }
        }
        while (data.hasRemaining()) {
          dataChannel.write(data);
        }
      } catch (IOException e) {
        onIoFailure.accept(volume);
        throw e;
      }
    } else if (data.hasArray()) {
      streams.writeDataToDisk(data.array(), data.arrayOffset() + data.position(), data.remaining());
      data.position(data.limit());
    } else {
      if (scratch.length < data.remaining()) {
        scratch = new byte[data.remaining()];
      }
      int n = data.remaining();
      data.get(scratch, 0, n);
      streams.writeDataToDisk(scratch, 0, n);
    }
  }

  /**
   * Moves the .meta file's write position back by one checksum, so that the
   * next packet, which sends again the partial chunk a flush left at the
   * end, overwrites that chunk's checksum (stock: adjustCrcChannelPosition).
   */
  public void rewindLastChecksum(int checksumSize) throws IOException {
    if (!(checksumOut instanceof FileOutputStream f)) {
      throw new IOException("the .meta stream is a " + checksumOut.getClass().getName() + ", not a file stream");
    }
    FileChannel ch = f.getChannel();
    ch.position(ch.position() - checksumSize);
  }

  /** Replica fsyncs (block and .meta files) done in this JVM: hsyncs and syncing closes (tests, status). */
  public static long fsyncs() {
    return FSYNCS.get();
  }

  private static final java.util.concurrent.atomic.AtomicLong FSYNCS = new java.util.concurrent.atomic.AtomicLong();

  /** Flushes the block and .meta streams and fsyncs both (hsync: a packet with syncBlock). */
  public void sync() throws IOException {
    if (streams == null) {
      throw new IOException("the replica's streams are closed");
    }
    FSYNCS.incrementAndGet();
    streams.flushChecksumOut();
    streams.flushDataOut();
    streams.syncChecksumOut();
    streams.syncDataOut();
  }

  /** Bytes all DataNodes downstream and this one have acknowledged (stock PacketResponder sets it). */
  public void setBytesAcked(long n) {
    ReplicaInPipeline r = replica();
    if (n > r.getBytesAcked()) {
      r.setBytesAcked(n);
    }
  }

  public long bytesAcked() {
    return replica().getBytesAcked();
  }

  /** Flushes (and with {@code sync}, fsyncs) and closes the block and .meta streams. Idempotent. */
  public void closeStreams(boolean sync) throws IOException {
    ReplicaOutputStreams s = streams;
    if (s == null) {
      return;
    }
    streams = null;
    dataChannel = null;
    try {
      s.flushChecksumOut();
      s.flushDataOut();
      if (sync) {
        FSYNCS.incrementAndGet();
        s.syncChecksumOut();
        s.syncDataOut();
      }
    } finally {
      s.close();
    }
  }

  /**
   * Closes the streams if open, releases the space still reserved for the
   * replica (as stock does after every write, finalized or not) and the
   * volume reference. Idempotent.
   */
  @Override
  public void close() throws IOException {
    if (!closed) {
      closed = true;
      try {
        if (streams != null) {
          streams.close();
          streams = null;
          dataChannel = null;
        }
        replica().releaseAllBytesReserved();
      } finally {
        handler.close();
      }
    }
  }
}
