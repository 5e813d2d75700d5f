package org.apache.hadoop.hdfs;

import java.io.IOException;
import java.util.concurrent.ThreadPoolExecutor;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;

/**
 * Client compat: the base of hdfs-rdma's input stream, one of the two classes of
 * the project in Hadoop's own package (with {@link HrdmaOutputStreamBase}). It has to live here: a stream that
 * applications can cast as they cast stock ones ({@code HdfsDataInputStream}
 * takes only a {@link DFSInputStream}, whose constructor is package-private),
 * and that counts its reads into the file system's statistics the way stock
 * streams do ({@link DFSClient}'s {@code updateFileSystemReadStats} and
 * {@code checkOpen} are package-private), and that hedges positional reads
 * as stock does, on the client's hedged-read pool with its metrics (package-private
 * too). It adds nothing else: every other Hadoop-internal call of the client
 * sits in the output base or in {@code org.hdfsrdma.client.compat}.
 *
 * <p>Verified against Apache Hadoop 3.5.0. Thread-safety: as {@link DFSInputStream}.
 */
public abstract class HrdmaInputStreamBase extends DFSInputStream {
  /**
   * A stream of {@code src} whose blocks start as {@code located} (the
   * superclass asks the NameNode nothing more for a file whose last block is complete).
   */
  protected HrdmaInputStreamBase(DFSClient client, String src, boolean verifyChecksum, LocatedBlocks located)
      throws IOException {
    super(client, src, verifyChecksum, located);
  }

  /** Counts {@code bytes} read from a DataNode {@code distance} away into the file system's statistics. */
  protected final void countFileSystemRead(int distance, int bytes, long millis) {
    dfsClient.updateFileSystemReadStats(distance, bytes, millis);
  }

  /** Throws, as stock reads do, once the file system (its DFSClient) is closed. */
  protected final void checkClientOpen() throws IOException {
    dfsClient.checkOpen();
  }

  /** Whether {@code dfs.client.hedged.read.threadpool.size} gave this client a hedged-read pool. */
  protected final boolean hedgedReadsEnabled() {
    return dfsClient.isHedgedReadsEnabled();
  }

  /**
   * The client's hedged-read pool (shared by every client of the JVM, as stock): a read it
   * cannot take runs in the caller's thread and counts in {@code hedgedReadOpsInCurThread}.
   */
  protected final ThreadPoolExecutor hedgedReadPool() {
    return dfsClient.getHedgedReadsThreadPool();
  }

  /** The client's hedged-read metrics (JVM-wide, as stock). */
  protected final DFSHedgedReadMetrics hedgedReadMetrics() {
    return dfsClient.getHedgedReadMetrics();
  }
}
