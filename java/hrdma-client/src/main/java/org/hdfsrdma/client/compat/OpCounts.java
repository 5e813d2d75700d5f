package org.hdfsrdma.client.compat;

import org.apache.hadoop.fs.GlobalStorageStatistics;
import org.apache.hadoop.fs.StorageStatistics;
import org.apache.hadoop.hdfs.DFSOpsCountStatistics;

/**
 * The per-operation counts DistributedFileSystem keeps (DFSOpsCountStatistics,
 * one instance in GlobalStorageStatistics for every DistributedFileSystem): the
 * calls our subclass makes itself instead of the superclass's count as its do.
 */
public final class OpCounts {
  private OpCounts() {}

  /** One OPEN, as DistributedFileSystem#open counts it. */
  public static void countOpen() {
    StorageStatistics s = GlobalStorageStatistics.INSTANCE.get(DFSOpsCountStatistics.NAME);
    if (s instanceof DFSOpsCountStatistics ops) {
      ops.incrementOpCounter(DFSOpsCountStatistics.OpType.OPEN);
    }
  }

  /** One CREATE, as DistributedFileSystem#create counts it. */
  public static void countCreate() {
    StorageStatistics s = GlobalStorageStatistics.INSTANCE.get(DFSOpsCountStatistics.NAME);
    if (s instanceof DFSOpsCountStatistics ops) {
      ops.incrementOpCounter(DFSOpsCountStatistics.OpType.CREATE);
    }
  }
}

