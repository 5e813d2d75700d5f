package org.hdfsrdma.datanode.compat;

import java.io.FileNotFoundException;
import java.io.IOException;
import org.apache.hadoop.hdfs.server.datanode.DataNodeFaultInjector;

/**
 * Stock's DataNode fault-injection points ({@link DataNodeFaultInjector}, set by tests with
 * {@code DataNodeFaultInjector.set}), called where our write and read paths do what stock's
 * DataXceiver, BlockReceiver, PacketResponder and BlockSender do at the same point. The default
 * injector does nothing; a test's may delay or throw, and what a throw means is what it means
 * to stock at that point (each caller says). One point is the plugin's own, set directly
 * ({@link #setShortCircuitOpenHook}).
 */
public final class FaultHooks {
  private FaultHooks() {}

  /** DataXceiver#writeBlock: before connecting to the mirror (a throw: the mirror is unreachable). */
  public static void failMirrorConnection() throws IOException {
    DataNodeFaultInjector.get().failMirrorConnection();
  }

  /** DataXceiver#writeBlock: the connect ack (WRITE_RESPONSE) went upstream. */
  public static void writeBlockAfterFlush() throws IOException {
    DataNodeFaultInjector.get().writeBlockAfterFlush();
  }

  /** BlockReceiver#receivePacket: before a packet is sent on to the mirror (a throw: the mirror failed). */
  public static void stopSendingPacketDownstream(String mirror) throws IOException {
    DataNodeFaultInjector.get().stopSendingPacketDownstream(mirror);
  }

  /**
   * BlockReceiver#receivePacket: whether to drop a heartbeat packet (true: it is neither relayed
   * downstream nor, at the last DataNode, acked; a node with a mirror still waits for its ack).
   */
  public static boolean dropHeartbeatPacket() {
    return DataNodeFaultInjector.get().dropHeartbeatPacket();
  }

  /** BlockReceiver#receivePacket: the packet went to the mirror, {@code millis} after it was due. */
  public static void logDelaySendingPacketDownstream(String mirror, long millis) throws IOException {
    DataNodeFaultInjector.get().logDelaySendingPacketDownstream(mirror, millis);
  }

  /** BlockReceiver#receivePacket: before a packet's data is written to disk. */
  public static void delayWriteToDisk() {
    DataNodeFaultInjector.get().delayWriteToDisk();
  }

  /** PacketResponder#sendAckUpstream: before the ack is sent (a throw: the responder fails). */
  public static void delaySendingAckToUpstream(String upstream) throws IOException {
    DataNodeFaultInjector.get().delay();
    DataNodeFaultInjector.get().delaySendingAckToUpstream(upstream);
  }

  /** PacketResponder#sendAckUpstream: the ack went up {@code millis} after it was ready. */
  public static void logDelaySendingAckToUpstream(String mirror, long millis) throws IOException {
    DataNodeFaultInjector.get().logDelaySendingAckToUpstream(mirror, millis);
  }

  /**
   * PacketResponder#sendAckUpstreamUnprotected: the headers of an ack about to go up (this
   * node's, then the downstream's as they came), which the injector may change in place (a test
   * flags a node SLOW). {@code mirror}: the next DataNode's xfer address, null on the last one.
   */
  public static void markSlow(String mirror, int[] replies) {
    DataNodeFaultInjector.get().markSlow(mirror, replies);
  }

  /** PacketResponder#run: before a packet's ack is processed (a throw: the responder fails). */
  public static void failPipeline(RbwReplica replica, String mirror) throws IOException {
    DataNodeFaultInjector.get().failPipeline(replica.replica(), mirror);
  }

  /** BlockSender's constructor: the replica's files are about to be opened for a read. */
  public static void throwTooManyOpenFiles() throws FileNotFoundException {
    DataNodeFaultInjector.get().throwTooManyOpenFiles();
  }

  /** Not one of stock's points (stock has none there): what a test hangs or fails a volume's opens with. */
  @FunctionalInterface
  public interface VolumeHook {
    /** Called with the volume's storage ID; may block (a hung volume) or throw (the open fails). */
    void at(String storageId) throws IOException;
  }

  private static volatile VolumeHook shortCircuitOpen;

  /** Tests: {@code hook} runs at every {@link #shortCircuitOpen}; null: none (the default). */
  public static void setShortCircuitOpenHook(VolumeHook hook) {
    shortCircuitOpen = hook;
  }

  /**
   * The short-circuit server is about to look up a replica's files on volume {@code storageId}
   * and open them for a client, on that volume's read thread (a throw: the request is refused
   * with its message). The plugin's own point: stock's DataXceiver#requestShortCircuitFds has none.
   */
  public static void shortCircuitOpen(String storageId) throws IOException {
    VolumeHook h = shortCircuitOpen;
    if (h != null) {
      h.at(storageId);
    }
  }
}
