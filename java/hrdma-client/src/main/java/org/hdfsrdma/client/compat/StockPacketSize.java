package org.hdfsrdma.client.compat;

import org.apache.hadoop.hdfs.protocol.datatransfer.PacketHeader;

/**
 * The data bytes of one stock write packet, as {@code DFSOutputStream#computePacketChunkSize}
 * sizes it: the packet size less the largest packet header, in whole chunks of data plus
 * checksum, at least one chunk. {@link PacketHeader} is a Hadoop-internal class. Stateless.
 */
public final class StockPacketSize {
  private StockPacketSize() {}

  /**
   * Data bytes of a stock packet of {@code packetSize} bytes ({@code dfs.client-write-packet-size})
   * for chunks of {@code bytesPerChecksum} data and {@code checksumSize} checksum bytes.
   */
  public static int dataBytes(int packetSize, int bytesPerChecksum, int checksumSize) {
    int body = packetSize - PacketHeader.PKT_MAX_HEADER_LEN;
    int chunks = Math.max(body / (bytesPerChecksum + checksumSize), 1);
    return chunks * bytesPerChecksum;
  }
}
