package org.hdfsrdma.client;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.zip.CRC32C;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.server.datanode.BlockMetadataHeader;
import org.apache.hadoop.util.DataChecksum;

/**
 * A short-circuit read: a range of a finalized replica on this host read
 * straight from its block and .meta files, whose paths the DataNode's plugin
 * gave after checking the block token (LOCAL_PATH_REQUEST). No DataNode
 * thread and no transport touch the bytes: the range of the block file is
 * memory-mapped (the page cache itself, as stock's zero-copy reads), its
 * CRC32C chunks are verified in place against the .meta file, a window at a
 * time, and the bytes are copied once, into the caller's buffer. Reading
 * needs permission on the DataNode's files, as the stock legacy
 * short-circuit reader does. A finalized replica does not shrink under a
 * reader; should it (an HDFS truncate racing the read), the fault is an
 * IOException.
 *
 * <p>A chunk that fails its checksum is a {@link org.apache.hadoop.fs.ChecksumException}.
 * Reads whole chunks from the chunk holding the range's start, up to
 * {@code bufferBytes} at a time. Not thread-safe.
 */
final class LocalBlockReader implements BlockReader {
  private final ExtendedBlock block;
  private final String dataPath;
  private final MappedByteBuffer map; // the block file from mapStart to fileEnd
  private final long mapStart;
  private final FileChannel meta;
  private final DataChecksum checksum;
  private final int bpc;
  private final int sumSize;
  private final long headerBytes;
  private final long end;       // block offset after the range
  private final long fileEnd;   // block offset after the last byte that may be read (chunk end or replica end)
  private final int window;
  private ByteBuffer buf; // verified bytes [bufStart, bufStart + buf.limit()) of the map, position = next to deliver
  private final ByteBuffer sums;
  private final CRC32C crc = new CRC32C();
  private long bufStart;
  private long next;            // block offset of the next chunk to read from the file

  /**
   * @param visibleLength the replica's length as the DataNode reported it
   * @throws IOException the files cannot be opened (no permission, gone) or are not what they should be
   */
  LocalBlockReader(ExtendedBlock block, String dataPath, String metaPath, long visibleLength, long offsetInBlock,
      long length, int bufferBytes) throws IOException {
    if (offsetInBlock < 0 || length < 0 || offsetInBlock + length > visibleLength) {
      throw new IOException("range [" + offsetInBlock + ", " + (offsetInBlock + length) + ") is not in "
          + block + " of " + visibleLength + " bytes");
    }
    this.block = block;
    this.dataPath = dataPath;
    FileChannel d = FileChannel.open(Path.of(dataPath), StandardOpenOption.READ);
    FileChannel m = null;
    try {
      m = FileChannel.open(Path.of(metaPath), StandardOpenOption.READ);
      BlockMetadataHeader header = BlockMetadataHeader.preadHeader(m);
      checksum = header.getChecksum();
      if (checksum.getChecksumSize() == 0 || checksum.getBytesPerChecksum() <= 0) {
        throw new IOException("the .meta file of " + block + " holds no checksums (" + checksum + ")");
      }
      if (d.size() < visibleLength) {
        throw new IOException("the block file of " + block + " has " + d.size() + " bytes, " + visibleLength
            + " expected");
      }
    } catch (IOException | RuntimeException e) {
      d.close();
      if (m != null) {
        m.close();
      }
      throw e;
    }
    this.meta = m;
    this.bpc = checksum.getBytesPerChecksum();
    this.sumSize = checksum.getChecksumSize();
    this.headerBytes = BlockMetadataHeader.getHeaderSize();
    this.end = offsetInBlock + length;
    this.fileEnd = Math.min(visibleLength, (end + bpc - 1) / bpc * bpc);
    int chunks = Math.max(1, bufferBytes / bpc);
    this.window = chunks * bpc;
    this.sums = ByteBuffer.allocateDirect(chunks * sumSize);
    this.next = offsetInBlock / bpc * bpc;
    this.bufStart = next;
    this.mapStart = next;
    try {
      if (fileEnd - mapStart > Integer.MAX_VALUE) {
        throw new IOException("[" + mapStart + ", " + fileEnd + ") of " + block + " is too large to map");
      }
      this.map = d.map(FileChannel.MapMode.READ_ONLY, mapStart, fileEnd - mapStart);
    } catch (IOException | RuntimeException e) {
      m.close();
      throw e;
    } finally {
      d.close(); // the mapping stays valid
    }
    this.buf = map.slice(0, 0);
    if (offsetInBlock > next) {
      fill();
      buf.position((int) (offsetInBlock - bufStart));
    }
  }

  @Override
  public long remaining() {
    return end - (bufStart + buf.position());
  }

  /** Reads and verifies the next chunks into {@link #buf}; false at the end of the range. */
  private boolean fill() throws IOException {
    if (next >= end) {
      return false;
    }
    int n = (int) Math.min(window, fileEnd - next);
    int chunks = (n + bpc - 1) / bpc;
    sums.clear().limit(chunks * sumSize);
    readFully(meta, sums, headerBytes + next / bpc * sumSize);
    sums.flip();
    ByteBuffer w = map.slice((int) (next - mapStart), n);
    try {
      verify(w, next);
    } catch (InternalError e) { // a fault reading the mapping: the file shrank under us
      throw new IOException("the block file of " + block + " changed while it was read: " + e.getMessage(), e);
    }
    buf = w;
    bufStart = next;
    next += n;
    // deliver no further than the range
    buf.limit((int) Math.min(n, end - bufStart));
    return true;
  }

  /**
   * Verifies the chunks of {@code w} (block offset {@code at}) against
   * {@link #sums}. CRC32C (what HDFS writes) runs straight on the mapping
   * (the JDK's intrinsic; Hadoop's own verifier copies each chunk of a direct
   * buffer into an array first); other checksum types go to Hadoop's.
   */
  private void verify(ByteBuffer w, long at) throws ChecksumException {
    if (checksum.getChecksumType() != DataChecksum.Type.CRC32C) {
      checksum.verifyChunkedSums(w, sums, dataPath, at);
      return;
    }
    ByteBuffer d = w.duplicate();
    int n = w.remaining();
    for (int off = 0; off < n; off += bpc) {
      int len = Math.min(bpc, n - off);
      d.limit(off + len).position(off);
      crc.reset();
      crc.update(d);
      int expected = sums.getInt();
      if ((int) crc.getValue() != expected) {
        throw new ChecksumException("Checksum CRC32C not matched for file " + dataPath + " at position "
            + (at + off) + String.format(": expected=%X but computed=%X", expected, (int) crc.getValue()), at + off);
      }
    }
  }

  private void readFully(FileChannel ch, ByteBuffer dst, long at) throws IOException {
    long p = at;
    while (dst.hasRemaining()) {
      int r = ch.read(dst, p);
      if (r < 0) {
        throw new EOFException("the .meta file of " + block + " ends at " + p);
      }
      p += r;
    }
  }

  private boolean ensure() throws IOException {
    return buf.hasRemaining() || fill();
  }

  @Override
  public int read(ByteBuffer dst) throws IOException {
    if (!dst.hasRemaining()) {
      return 0;
    }
    if (!ensure()) {
      return -1;
    }
    int n = Math.min(dst.remaining(), buf.remaining());
    try {
      dst.put(buf.slice(buf.position(), n));
    } catch (InternalError e) {
      throw new IOException("the block file of " + block + " changed while it was read: " + e.getMessage(), e);
    }
    buf.position(buf.position() + n);
    return n;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    if (len == 0) {
      return 0;
    }
    if (!ensure()) {
      return -1;
    }
    int n = Math.min(len, buf.remaining());
    try {
      buf.get(b, off, n);
    } catch (InternalError e) {
      throw new IOException("the block file of " + block + " changed while it was read: " + e.getMessage(), e);
    }
    return n;
  }

  @Override
  public void readFully(byte[] b, int off, int len) throws IOException {
    int done = 0;
    while (done < len) {
      int n = read(b, off + done, len - done);
      if (n < 0) {
        throw new EOFException("the range of " + block + " ended " + (len - done) + " bytes early");
      }
      done += n;
    }
  }

  @Override
  public void close() {
    try {
      meta.close();
    } catch (IOException ignored) {
      // read-only: nothing to lose
    }
  }

  @Override
  public String toString() {
    return "LocalBlockReader[" + block + ", " + dataPath + "]";
  }
}
