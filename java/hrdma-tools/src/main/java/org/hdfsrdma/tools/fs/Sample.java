package org.hdfsrdma.tools.fs;

/**
 * One timed write or read of one file. Immutable.
 *
 * @param client      "ours" (RdmaDistributedFileSystem) or "stock" (DistributedFileSystem)
 * @param op          "write" or "read"
 * @param file        the HDFS path
 * @param writtenBy   who wrote the file ("ours"/"stock")
 * @param replication the file's replication
 * @param bytes       bytes moved through the stream
 * @param nanos       create/open to close
 * @param clientCpu   this JVM's process CPU seconds over the operation
 * @param dataNodeCpu the DataNodes' CPU seconds (sum, /proc/PID/stat) over the operation
 * @param oursBytes   bytes our transport carried, from the client's counters; -1: no counter
 * @param stockBytes  bytes the stock data path carried, from the counters; -1: no counter
 * @param fallbacks   DataNodes our client fell back from during the operation
 * @param crc         CRC32C of the bytes the stream carried
 */
public record Sample(String client, String op, String file, String writtenBy, int replication, long bytes,
    long nanos, double clientCpu, double dataNodeCpu, long oursBytes, long stockBytes, long fallbacks, long crc) {

  public double mbps() {
    return Stats.mbPerSecond(bytes, nanos);
  }

  public double seconds() {
    return nanos / 1e9;
  }
}
