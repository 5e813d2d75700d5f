package org.hdfsrdma.client.compat;

import org.apache.hadoop.hdfs.DFSClientFaultInjector;

/**
 * The stock client's fault injector, so that Hadoop's fault tests reach our
 * write path too: {@code corruptPacket} flips the last data byte of a packet
 * on the wire (after its checksums), {@code uncorruptPacket} false keeps the
 * corruption in the packet for every resend, as in DFSPacket.
 */
public final class FaultInjection {
  private FaultInjection() {}

  public static boolean corruptPacket() {
    return DFSClientFaultInjector.get().corruptPacket();
  }

  public static boolean uncorruptPacket() {
    return DFSClientFaultInjector.get().uncorruptPacket();
  }
}
