package org.hdfsrdma.datanode;

import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;

/**
 * The write that owns each replica being written here over hrdma: one writer per replica, a
 * recovery takes over from the write it replaces (stock: ReplicaInPipeline#stopWriter).
 * Thread-safe.
 */
final class WriterRegistry {
  /** A replica by block pool and block id (the generation stamp changes in a recovery). */
  private record ReplicaKey(String pool, long id) {}

  private final ConcurrentHashMap<ReplicaKey, BlockWriteTask> writers = new ConcurrentHashMap<>();
  private final long stopTimeoutMs;

  WriterRegistry(long stopTimeoutMs) {
    this.stopTimeoutMs = stopTimeoutMs;
  }

  /**
   * Makes {@code t} the writer of {@code block}'s replica. A write already there (the
   * pipeline a recovery replaces) is stopped first, as stock stops a replica's writer
   * before recoverRbw.
   *
   * @return false when the earlier write did not stop within the setup timeout
   */
  boolean takeOver(ExtendedBlock block, BlockWriteTask t) {
    BlockWriteTask old = writers.put(new ReplicaKey(block.getBlockPoolId(), block.getBlockId()), t);
    return old == null || old == t || old.stop(stopTimeoutMs);
  }

  void release(ExtendedBlock block, BlockWriteTask t) {
    writers.remove(new ReplicaKey(block.getBlockPoolId(), block.getBlockId()), t);
  }
}
