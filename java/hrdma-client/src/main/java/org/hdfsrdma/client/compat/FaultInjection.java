package org.hdfsrdma.client.compat;

import java.io.IOException;

import org.apache.hadoop.hdfs.DFSClientFaultInjector;

/**
 * The stock client's fault injector, so that Hadoop's fault tests reach our
 * data path too: {@code corruptPacket} flips the last data byte of a packet
 * on the wire (after its checksums), {@code uncorruptPacket} false keeps the
 * corruption in the packet for every resend, as in DFSPacket; a positional
 * read from one DataNode calls the three hooks stock's
 * {@code actualGetFromOneDataNode} calls, at the same points.
 */
public final class FaultInjection {
  private FaultInjection() {}

  public static boolean corruptPacket() {
    return DFSClientFaultInjector.get().corruptPacket();
  }

  public static boolean uncorruptPacket() {
    return DFSClientFaultInjector.get().uncorruptPacket();
  }

  /** Before a positional read of one range from one DataNode (tests make it slow). */
  public static void startFetchFromDatanode() {
    DFSClientFaultInjector.get().startFetchFromDatanode();
  }

  /** Before the reader of that range is made (tests throw from it). */
  public static void fetchFromDatanodeException() throws IOException {
    try {
      DFSClientFaultInjector.get().fetchFromDatanodeException();
    } catch (Throwable t) { // a mock throws checked exceptions (ChecksumException) undeclared
      if (t instanceof IOException io) {
        throw io;
      }
      if (t instanceof RuntimeException r) {
        throw r;
      }
      if (t instanceof Error e) {
        throw e;
      }
      throw new IOException(t);
    }
  }

  /** Stock's knob for rolling-upgrade tests: take every restarting DataNode as remote (no wait for it). */
  public static boolean skipRollingRestartWait() {
    return DFSClientFaultInjector.get().skipRollingRestartWait();
  }

  /** After the range was read. */
  public static void readFromDatanodeDelay() {
    DFSClientFaultInjector.get().readFromDatanodeDelay();
  }
}
