package org.hdfsrdma.datanode.compat;

import java.io.DataOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import org.apache.hadoop.hdfs.server.datanode.ReplicaHandler;
import org.apache.hadoop.hdfs.server.datanode.ReplicaInPipeline;
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
  private ReplicaOutputStreams streams;
  private OutputStream checksumOut;
  private boolean closed;

  RbwReplica(ReplicaHandler handler) {
    this.handler = handler;
  }

  ReplicaInPipeline replica() {
    return handler.getReplica();
  }

  /**
   * Stock records the creating thread as the replica's writer, which
   * recovery interrupts; our writes run on pooled threads, so none is recorded.
   */
  public void clearWriter() {
    replica().setWriter(null);
  }

  /** The storage (volume) the replica is on, for the NameNode's received-block report. */
  public String storageUuid() {
    return replica().getStorageUuid();
  }

  /** The volume the replica is on. */
  public DataNodeAccess.Volume volume() {
    return DataNodeAccess.volume(replica().getReplicaInfo().getVolume());
  }

  /** The replica's block file (where the dataset put it; it moves at finalize). */
  public java.nio.file.Path blockFile() {
    return java.nio.file.Paths.get(replica().getReplicaInfo().getBlockURI());
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
  }

  /**
   * Appends one packet: {@code dataLen} data bytes at the end of the block file
   * and their checksums at the end of the .meta file, flushed to the OS (as
   * stock does per packet), then records the new length and last checksum
   * (ReplicaInPipeline#setLastChecksumAndDataLen), which readers of the
   * replica being written go by. The data goes at the block file's end; when
   * that end is inside a chunk, the caller first rewinds the .meta file by one
   * checksum ({@link #rewindLastChecksum}) and passes that chunk's new checksum.
   *
   * @param endOffset the block offset after this packet's data
   */
  public void writePacket(byte[] data, int dataOff, int dataLen, byte[] sums, int sumsOff, int sumsLen,
      long endOffset, byte[] lastChecksum) throws IOException {
    ReplicaInPipeline r = replica();
    if (r.getNumBytes() < endOffset) {
      r.setNumBytes(endOffset);
    }
    if (dataLen > 0) {
      streams.writeDataToDisk(data, dataOff, dataLen);
      checksumOut.write(sums, sumsOff, sumsLen);
      streams.flushDataOut();
      streams.flushChecksumOut();
      r.setLastChecksumAndDataLen(endOffset, lastChecksum);
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

  /** Flushes the block and .meta streams and fsyncs both (hsync: a packet with syncBlock). */
  public void sync() throws IOException {
    if (streams == null) {
      throw new IOException("the replica's streams are closed");
    }
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
    try {
      s.flushChecksumOut();
      s.flushDataOut();
      if (sync) {
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
        }
        replica().releaseAllBytesReserved();
      } finally {
        handler.close();
      }
    }
  }
}
