package org.hdfsrdma.datanode.compat;

import java.io.IOException;
import org.apache.hadoop.hdfs.server.datanode.ReplicaHandler;
import org.apache.hadoop.hdfs.server.datanode.ReplicaInPipeline;

/**
 * A replica being written, as {@code FsDatasetSpi#createRbw} returns it: the
 * replica plus a reference on its volume, released by {@link #close()}. The
 * write path (next step) adds its stream and checksum calls here.
 *
 * <p>Not thread-safe: one writer owns it.
 */
public final class RbwReplica implements AutoCloseable {
  private final ReplicaHandler handler;
  private boolean closed;

  RbwReplica(ReplicaHandler handler) {
    this.handler = handler;
  }

  ReplicaInPipeline replica() {
    return handler.getReplica();
  }

  /** The storage (volume) the replica is on, for the NameNode's received-block report. */
  public String storageUuid() {
    return replica().getStorageUuid();
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

  /** Releases the volume reference. Idempotent. */
  @Override
  public void close() throws IOException {
    if (!closed) {
      closed = true;
      handler.close();
    }
  }
}
