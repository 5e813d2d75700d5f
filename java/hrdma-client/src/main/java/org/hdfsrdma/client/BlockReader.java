package org.hdfsrdma.client;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A range of one block being read, checksums verified: over an hrdma
 * connection ({@link RdmaBlockReader}) or from the replica's files on this
 * host ({@link LocalBlockReader}). Not thread-safe.
 */
interface BlockReader extends Closeable {
  /** Bytes of the range not read yet. */
  long remaining();

  /** Reads at most {@code dst.remaining()} bytes; -1 at the end of the range. */
  int read(ByteBuffer dst) throws IOException;

  /** Reads at most {@code len} bytes; -1 at the end of the range. */
  int read(byte[] buf, int off, int len) throws IOException;

  /** Reads exactly {@code len} bytes. */
  void readFully(byte[] buf, int off, int len) throws IOException;

  /** Releases what the reader holds; never throws. */
  @Override
  void close();
}
