package org.hdfsrdma.datanode.compat;

import java.util.List;

/**
 * The stock DataNode's own classes a write's replica goes through ({@code createRbw}, the replica
 * being written, its finalization), named here with the rest of the Hadoop-internal uses so that
 * the plugin's warm-up can load them before its first write. Stateless.
 */
public final class ReplicaClasses {
  private ReplicaClasses() {}

  /** The classes, to load and initialize; nothing is run. */
  public static List<Class<?>> all() {
    return List.of(org.apache.hadoop.hdfs.server.datanode.ReplicaBeingWritten.class,
        org.apache.hadoop.hdfs.server.datanode.ChunkChecksum.class,
        org.apache.hadoop.hdfs.server.datanode.ReplicaBuilder.class,
        org.apache.hadoop.hdfs.server.datanode.FinalizedReplica.class);
  }
}
