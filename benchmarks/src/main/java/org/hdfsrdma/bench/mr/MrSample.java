package org.hdfsrdma.bench.mr;

/**
 * One measured operation of one run: a TestDFSIO write or read, a RandomWriter, a Sort.
 * Immutable.
 *
 * @param job        dfsio, randomwriter, sort
 * @param op         write, read, sort
 * @param path       ours or stock
 * @param run        1-based run number
 * @param bytes      bytes the operation moved (TestDFSIO's total; the output's length for RandomWriter and Sort)
 * @param wallSeconds the Tool's run() from call to return, as this harness timed it
 * @param mbPerSec   MB/s (10^6 bytes): TestDFSIO's "Throughput" (a per-task rate), else bytes / wall time
 * @param clientCpu  CPU seconds of the client JVM (the job's tasks run there with the local job runner)
 * @param dataNodeCpu CPU seconds of the DataNodes over the operation
 * @param oursBytes  bytes that went over our transport (our client's counters); -1 when not known
 * @param detail     what the Hadoop program itself reported (TestDFSIO's fields, "The job took N seconds.")
 */
public record MrSample(String job, String op, String path, int run, long bytes, double wallSeconds, double mbPerSec,
    double clientCpu, double dataNodeCpu, long oursBytes, String detail) {

  /** Client + DataNode CPU seconds per GB (10^9 bytes) moved. */
  public double cpuPerGB() {
    return bytes <= 0 ? Double.NaN : (clientCpu + dataNodeCpu) / (bytes / 1e9);
  }
}
