package org.apache.hadoop.hdfs;

import java.io.IOException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.HdfsFileStatus;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.BlockConstructionStage;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.DataChecksum;
import org.apache.hadoop.util.Progressable;

/**
 * Client compat: what {@link DFSOutputStream#getStreamer()} gives for an
 * {@link HrdmaOutputStreamBase}, which has no DataStreamer: a {@link DataStreamer} (a
 * package-private class, hence this one in Hadoop's package, defined in Hadoop's class
 * loader by {@code StreamBaseLoader}) that answers the streamer's questions from the
 * stream's own writer, as it is at the moment of the call: the pipeline's DataNodes and
 * storage ids, the block (length acknowledged, current generation stamp), its token, the
 * stage, and stock's pipeline recovery count. Hadoop's tests (and tools that reach into a
 * DFSOutputStream) ask a stream these through its streamer.
 *
 * <p>It is never started and holds no packets: its superclass's constructor only allocates
 * (no thread, no socket), and every method that would send, queue or wait for packets, or
 * change the pipeline by other means than stock's {@link #updatePipeline(long)}, throws
 * {@link UnsupportedOperationException} saying so rather than act on state nobody reads.
 * The superclass's fields are not kept up to date (reflection on them sees the values of a
 * streamer that never ran); only the methods answer.
 *
 * <p>Thread-safety: every answer is read without the stream's monitor, as stock's streamer
 * is read by other threads while the writer holds it (waiting for the stage of a closing
 * pipeline, for instance). Refers to Hadoop and JDK types only (see HrdmaOutputStreamBase).
 */
class HrdmaStreamerView extends DataStreamer {
  private final HrdmaOutputStreamBase stream;

  /** Made by the stream's constructor, with what stock's gives its streamer (no block yet). */
  HrdmaStreamerView(HrdmaOutputStreamBase stream, HdfsFileStatus stat, Progressable progress, DataChecksum checksum) {
    super(stat, null, stream.dfsClient, stream.src, progress, checksum, stream.cachingStrategy,
        stream.byteArrayManager, null, stream.getAddBlockFlags());
    this.stream = stream;
    setName("hrdma streamer view of " + stream.src + " (never started)");
  }

  private UnsupportedOperationException unsupported(String what) {
    return new UnsupportedOperationException("DataStreamer#" + what + " is not supported for " + stream.src + ": "
        + stream.getClass().getSimpleName() + " writes its blocks itself, without a DataStreamer; this streamer only"
        + " answers from that writer (getNodes, getStorageIDs, getBlock, getBlockToken, getStage,"
        + " getPipelineRecoveryCount) and forwards updatePipeline");
  }

  // ------------------------------------------------------------------ answered from the writer

  /** The DataNodes of the current block's pipeline; null before a block's pipeline is set up and between blocks, as stock. */
  @Override
  DatanodeInfo[] getNodes() {
    return stream.currentNodes();
  }

  /** The storage ids of {@link #getNodes()}, in its order; null when it is. */
  @Override
  String[] getStorageIDs() {
    return stream.currentStorageIDs();
  }

  /**
   * The block being written (between blocks the last one), with its current generation stamp
   * and, as stock's, the length every DataNode acknowledged; null before the first block.
   */
  @Override
  ExtendedBlock getBlock() {
    return stream.currentBlock();
  }

  /** The block token the current (or last) pipeline was set up with; null before the first block. */
  @Override
  Token<BlockTokenIdentifier> getBlockToken() {
    return stream.currentBlockToken();
  }

  /** PIPELINE_SETUP_CREATE without a pipeline, DATA_STREAMING, PIPELINE_CLOSE once the block's last packet went. */
  @Override
  BlockConstructionStage getStage() {
    return stream.currentStage();
  }

  /** As stock's: pipeline recoveries since a data packet was last acknowledged (a DataNode restart is none). */
  @Override
  int getPipelineRecoveryCount() {
    return stream.pipelineRecoveryCount();
  }

  /**
   * As stock's: the generation stamp {@code newGS} has reached every DataNode of the
   * pipeline (the caller's word, as for stock's); the writer's block takes it and the
   * NameNode records the pipeline with it ({@code ClientProtocol#updatePipeline}), the last
   * step of the writer's own pipeline recoveries.
   */
  @Override
  public void updatePipeline(long newGS) throws IOException {
    stream.updatePipeline(newGS);
  }

  @Override
  public String toString() {
    return "HrdmaStreamerView[" + stream + "]";
  }

  // ------------------------------------------------------------------ the streamer's machinery

  @Override
  public void work() {
    throw unsupported("run");
  }

  @Override
  void setPipelineInConstruction(LocatedBlock lastBlock) {
    throw unsupported("setPipelineInConstruction");
  }

  @Override
  void setAccessToken(Token<BlockTokenIdentifier> t) {
    throw unsupported("setAccessToken");
  }

  @Override
  protected void setPipeline(LocatedBlock lb) {
    throw unsupported("setPipeline");
  }

  @Override
  protected void setPipeline(DatanodeInfo[] newNodes, StorageType[] newStorageTypes, String[] newStorageIDs) {
    throw unsupported("setPipeline");
  }

  @Override
  protected void endBlock() {
    throw unsupported("endBlock");
  }

  @Override
  void release() {
    throw unsupported("release");
  }

  @Override
  void waitForAckedSeqno(long seqno) {
    throw unsupported("waitForAckedSeqno");
  }

  @Override
  void waitAndQueuePacket(DFSPacket packet) {
    throw unsupported("waitAndQueuePacket");
  }

  @Override
  void queuePacket(DFSPacket packet) {
    throw unsupported("queuePacket");
  }

  @Override
  void close(boolean force) {
    throw unsupported("close");
  }

  @Override
  void setStreamerAsClosed() {
    throw unsupported("setStreamerAsClosed");
  }

  @Override
  boolean streamerClosed() {
    throw unsupported("streamerClosed");
  }

  @Override
  void closeStream() {
    throw unsupported("closeStream");
  }

  @Override
  void closeSocket() {
    throw unsupported("closeSocket");
  }

  @Override
  void setSocketToNull() {
    throw unsupported("setSocketToNull");
  }

  @Override
  boolean shouldWaitForRestart(int index) {
    throw unsupported("shouldWaitForRestart");
  }

  @Override
  void setHflush() {
    throw unsupported("setHflush");
  }

  @Override
  protected boolean setupPipelineInternal(DatanodeInfo[] datanodes, StorageType[] nodeStorageTypes,
      String[] nodeStorageIDs) {
    throw unsupported("setupPipelineInternal");
  }

  @Override
  protected void setupPipelineForCreate() {
    throw unsupported("setupPipelineForCreate");
  }

  @Override
  boolean createBlockOutputStream(DatanodeInfo[] nodes, StorageType[] nodeStorageTypes, String[] nodeStorageIDs,
      long newGS, boolean recoveryFlag) {
    throw unsupported("createBlockOutputStream");
  }

  @Override
  boolean handleRestartingDatanode() {
    throw unsupported("handleRestartingDatanode");
  }

  @Override
  boolean handleBadDatanode() {
    throw unsupported("handleBadDatanode");
  }

  @Override
  void failPacket4Testing() {
    throw unsupported("failPacket4Testing");
  }

  @Override
  void updateBlockGS(long newGS) {
    throw unsupported("updateBlockGS (updatePipeline is: it tells the NameNode too)");
  }

  @Override
  DatanodeInfo[] getExcludedNodes() {
    throw unsupported("getExcludedNodes");
  }

  @Override
  ErrorState getErrorState() {
    // the writer's failure is recovered (or thrown) by the thread that meets it; it keeps no
    // error state between calls that another thread could read or change
    throw unsupported("getErrorState");
  }

  @Override
  LastExceptionInStreamer getLastException() {
    throw unsupported("getLastException (the stream's failures are thrown by its own calls)");
  }

  @Override
  AtomicBoolean getPersistBlocks() {
    throw unsupported("getPersistBlocks");
  }

  @Override
  void setAppendChunk(boolean appendChunk) {
    throw unsupported("setAppendChunk");
  }

  @Override
  boolean getAppendChunk() {
    throw unsupported("getAppendChunk");
  }

  @Override
  long getAndIncCurrentSeqno() {
    throw unsupported("getAndIncCurrentSeqno");
  }

  @Override
  long getLastQueuedSeqno() {
    throw unsupported("getLastQueuedSeqno");
  }

  @Override
  long getBytesCurBlock() {
    throw unsupported("getBytesCurBlock");
  }

  @Override
  void setBytesCurBlock(long bytesCurBlock) {
    throw unsupported("setBytesCurBlock");
  }

  @Override
  void incBytesCurBlock(long len) {
    throw unsupported("incBytesCurBlock");
  }

  @Override
  void setArtificialSlowdown(long period) {
    throw unsupported("setArtificialSlowdown (DFSOutputStream#setArtificialSlowdown is)");
  }
}
