package org.apache.hadoop.hdfs;

/** Tests only: the client's hedged-read metrics, package-private in DFSClient (as Hadoop's tests reach them). */
public final class HedgedReadMetricsAccess {
  private HedgedReadMetricsAccess() {}

  public static DFSHedgedReadMetrics of(DistributedFileSystem fs) {
    return fs.getClient().getHedgedReadMetrics();
  }
}
