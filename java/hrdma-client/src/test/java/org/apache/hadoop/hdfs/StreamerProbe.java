package org.apache.hadoop.hdfs;

import java.io.IOException;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.BlockConstructionStage;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;

/**
 * Test access, from our tests' package, to what Hadoop's own tests (which sit in this
 * package) call on a stream: {@code DFSOutputStream#getStreamer()} and the streamer's
 * package-private accessors, and the stream's {@code getBlock()} / {@code getBlockToken()}.
 * Each call goes through {@code getStreamer()} again, as theirs do.
 */
public final class StreamerProbe {
  private final DFSOutputStream out;

  private StreamerProbe(DFSOutputStream out) {
    this.out = out;
  }

  /** The probe of the DFSOutputStream {@code out} wraps. */
  public static StreamerProbe of(FSDataOutputStream out) {
    return new StreamerProbe((DFSOutputStream) out.getWrappedStream());
  }

  /** The streamer's class name, or null when there is none. */
  public String streamerClass() {
    DataStreamer s = out.getStreamer();
    return s == null ? null : s.getClass().getName();
  }

  public DatanodeInfo[] nodes() {
    return out.getStreamer().getNodes();
  }

  public String[] storageIds() {
    return out.getStreamer().getStorageIDs();
  }

  public ExtendedBlock block() {
    return out.getStreamer().getBlock();
  }

  public Token<BlockTokenIdentifier> token() {
    return out.getStreamer().getBlockToken();
  }

  public BlockConstructionStage stage() {
    return out.getStreamer().getStage();
  }

  public int recoveryCount() {
    return out.getStreamer().getPipelineRecoveryCount();
  }

  public void updatePipeline(long newGs) throws IOException {
    out.getStreamer().updatePipeline(newGs);
  }

  /** The stream's own {@code getBlock()} (stock's, reading the streamer). */
  public ExtendedBlock streamBlock() {
    return out.getBlock();
  }

  /** The stream's own {@code getBlockToken()} (what {@code DFSTestUtil.getBlockToken} calls). */
  public Token<BlockTokenIdentifier> streamBlockToken() {
    return out.getBlockToken();
  }

  // what a streamer that moves no packets cannot answer

  public Object errorState() {
    return out.getStreamer().getErrorState();
  }

  public long bytesCurBlock() {
    return out.getStreamer().getBytesCurBlock();
  }

  public void waitForAckedSeqno(long seqno) throws IOException {
    out.getStreamer().waitForAckedSeqno(seqno);
  }

  public Object lastException() {
    return out.getStreamer().getLastException();
  }
}
