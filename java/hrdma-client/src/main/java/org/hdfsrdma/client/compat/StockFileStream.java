package org.hdfsrdma.client.compat;

import java.util.EnumSet;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.hdfs.DFSClient;
import org.apache.hadoop.hdfs.DFSOutputStream;
import org.apache.hadoop.hdfs.protocol.HdfsFileStatus;
import org.apache.hadoop.util.DataChecksum;
import org.apache.hadoop.util.Progressable;

/**
 * The stock output stream (DataStreamer and all) for a file that is already
 * created and under this client's lease, with no block yet: what
 * {@code DFSOutputStream.newStreamForCreate} does after the NameNode's create.
 * The fallback of our stream when the first block cannot be written over
 * hrdma: the file is neither deleted nor created again, so its id, lease,
 * creation metrics and bytes stay those of the one create.
 *
 * <p>Thread-safety: as DFSOutputStream.
 */
public final class StockFileStream extends DFSOutputStream {

  private StockFileStream(DFSClient dfs, String src, HdfsFileStatus stat, EnumSet<CreateFlag> flags,
      Progressable progress, DataChecksum checksum, String[] favoredNodes) {
    super(dfs, src, stat, flags, progress, checksum, favoredNodes, true);
  }

  /** Opens the stock stream of {@code stat}'s file (created, empty, leased by {@code dfs}) and starts it. */
  public static DFSOutputStream open(DFSClient dfs, String src, HdfsFileStatus stat, EnumSet<CreateFlag> flags,
      Progressable progress, DataChecksum checksum, String[] favoredNodes) {
    StockFileStream s = new StockFileStream(dfs, src, stat, flags, progress, checksum, favoredNodes);
    s.start();
    return s;
  }
}
