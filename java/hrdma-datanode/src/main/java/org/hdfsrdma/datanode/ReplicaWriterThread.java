package org.hdfsrdma.datanode;

import java.util.concurrent.locks.LockSupport;

/**
 * The thread recorded as the writer of a replica one of our writes goes to. Stock's writer is
 * the xceiver thread itself, and a block recovery ({@code ReplicaInPipeline#stopWriter}, called
 * by the dataset's initReplicaRecovery, recoverRbw, append...) interrupts it and joins it before
 * it touches the replica: the interrupted writer stops, its upstream sees its connection fail,
 * and the replica holds no write in flight once the join returns. Our writes run on pooled
 * executor threads, so this thread stands for one write: it waits until it is interrupted or
 * released. Interrupted, it stops the write ({@link BlockWriteTask#stopForRecovery}: no packet
 * is written or acked after, the upstream connection closes, a disk write in flight finishes,
 * the replica's files are closed) and only then ends, so that the recovery's join returns with
 * the replica quiescent. Released (the write ended on its own), it ends at once.
 */
final class ReplicaWriterThread extends Thread {
  private final BlockWriteTask task;
  private volatile boolean released;

  ReplicaWriterThread(BlockWriteTask task, String name) {
    super(name);
    this.task = task;
    setDaemon(true);
  }

  @Override
  public void run() {
    while (!released) {
      if (Thread.interrupted()) {
        if (!released) {
          task.stopForRecovery();
        }
        return;
      }
      LockSupport.park(this);
    }
  }

  /** The write ended (its files are closed): this thread ends without stopping anything. */
  void release() {
    released = true;
    LockSupport.unpark(this);
  }
}
