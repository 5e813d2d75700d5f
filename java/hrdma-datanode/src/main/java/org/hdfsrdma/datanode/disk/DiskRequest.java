package org.hdfsrdma.datanode.disk;

/**
 * One disk operation of one stream (a block file being written or read),
 * queued at its volume's scheduler. {@code offset} is the position in the
 * stream's file; the scheduler uses it to see sequential runs.
 *
 * <p>Created by the submitting thread; its scheduling fields are touched only
 * under the owning {@link SchedulerCore}'s caller's lock.
 */
public final class DiskRequest {
  final Object stream;
  final boolean write;
  final long offset;
  final int length;
  long seq;            // arrival order, set by the core
  long submittedNanos; // set by the core
  long startedNanos;   // set when dispatched
  Object attachment;   // the caller's task (VolumeScheduler)

  public DiskRequest(Object stream, boolean write, long offset, int length) {
    if (stream == null || offset < 0 || length < 0) {
      throw new IllegalArgumentException("bad disk request: stream " + stream + ", offset " + offset
          + ", length " + length);
    }
    this.stream = stream;
    this.write = write;
    this.offset = offset;
    this.length = length;
  }

  public Object stream() {
    return stream;
  }

  public long offset() {
    return offset;
  }

  public int length() {
    return length;
  }

  @Override
  public String toString() {
    return (write ? "write " : "read ") + stream + " @" + offset + "+" + length;
  }
}
