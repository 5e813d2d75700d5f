package org.hdfsrdma.datanode;

import org.apache.hadoop.conf.Configuration;

/**
 * How much any one peer may take of this DataNode's plugin: connections, time, message
 * sizes. Stock's counterparts: dfs.datanode.max.transfer.threads (connections), the 60 s
 * socket timeout of every DataXceiver (dfs.client.socket-timeout) and its socket write timeout
 * (dfs.datanode.socket.write.timeout). Immutable.
 */
record DataNodeLimits(int maxConnections, long idleTimeoutMs, long packetTimeoutMs, int maxRequestBytes,
    int maxPacketBytes, long writeTimeoutMs) {

  /** Connections open at once on all transports; more are refused at the hello (REFUSED). */
  static final String MAX_CONNECTIONS_KEY = HrdmaDataNodeKeys.MAX_CONNECTIONS_KEY;
  static final int MAX_CONNECTIONS_DEFAULT = HrdmaDataNodeKeys.MAX_CONNECTIONS_DEFAULT; // as dfs.datanode.max.transfer.threads
  /** A connection with no operation in progress for this long is closed. */
  static final String IDLE_TIMEOUT_KEY = HrdmaDataNodeKeys.IDLE_TIMEOUT_MS_KEY;
  static final long IDLE_TIMEOUT_DEFAULT = HrdmaDataNodeKeys.IDLE_TIMEOUT_MS_DEFAULT; // as dfs.client.socket-timeout
  /** An open write that receives no packet for this long fails (the replica stays for recovery). */
  static final String PACKET_TIMEOUT_KEY = HrdmaDataNodeKeys.WRITE_PACKET_TIMEOUT_MS_KEY;
  static final long PACKET_TIMEOUT_DEFAULT = HrdmaDataNodeKeys.WRITE_PACKET_TIMEOUT_MS_DEFAULT; // stock: the upstream socket's read timeout
  /** The largest request other than a DATA_PACKET (INFO, READ_REQUEST, SHM_*, WRITE_REQUEST...). */
  static final String MAX_REQUEST_BYTES_KEY = HrdmaDataNodeKeys.MAX_REQUEST_BYTES_KEY;
  static final int MAX_REQUEST_BYTES_DEFAULT = HrdmaDataNodeKeys.MAX_REQUEST_BYTES_DEFAULT; // the largest header the codec takes
  /** The most data one DATA_PACKET of a write may carry (stock PacketReceiver: 16 MiB per packet). */
  static final String MAX_PACKET_BYTES_KEY = HrdmaDataNodeKeys.WRITE_MAX_PACKET_BYTES_KEY;
  static final int MAX_PACKET_BYTES_DEFAULT = HrdmaDataNodeKeys.WRITE_MAX_PACKET_BYTES_DEFAULT; // the client sends 1 MiB (hrdma.client.write.packet-bytes)

  /**
   * Stock's key: a connection whose sends wait and none of which completes for this long is
   * closed (stock's DataXceiver writes with this timeout). 0 or less: no such timeout, as in stock.
   */
  static final String WRITE_TIMEOUT_KEY = org.apache.hadoop.hdfs.client.HdfsClientConfigKeys
      .DFS_DATANODE_SOCKET_WRITE_TIMEOUT_KEY;
  static final long WRITE_TIMEOUT_DEFAULT = org.apache.hadoop.hdfs.protocol.HdfsConstants.WRITE_TIMEOUT; // 8 min

  DataNodeLimits(int maxConnections, long idleTimeoutMs, long packetTimeoutMs, int maxRequestBytes,
      int maxPacketBytes) {
    this(maxConnections, idleTimeoutMs, packetTimeoutMs, maxRequestBytes, maxPacketBytes, WRITE_TIMEOUT_DEFAULT);
  }

  DataNodeLimits {
    writeTimeoutMs = Math.max(0, writeTimeoutMs); // stock: a timeout only when positive
    if (maxConnections <= 0 || idleTimeoutMs <= 0 || packetTimeoutMs <= 0 || maxRequestBytes < 1024
        || maxPacketBytes < 512) {
      throw new IllegalArgumentException("bad DataNode limits: " + MAX_CONNECTIONS_KEY + "=" + maxConnections
          + ", " + IDLE_TIMEOUT_KEY + "=" + idleTimeoutMs + ", " + PACKET_TIMEOUT_KEY + "=" + packetTimeoutMs
          + ", " + MAX_REQUEST_BYTES_KEY + "=" + maxRequestBytes + " (at least 1024), " + MAX_PACKET_BYTES_KEY + "="
          + maxPacketBytes + " (at least 512)");
    }
  }

  static DataNodeLimits from(Configuration conf) {
    return new DataNodeLimits(conf.getInt(MAX_CONNECTIONS_KEY, MAX_CONNECTIONS_DEFAULT),
        conf.getLong(IDLE_TIMEOUT_KEY, IDLE_TIMEOUT_DEFAULT),
        packetTimeoutMs(conf),
        conf.getInt(MAX_REQUEST_BYTES_KEY, MAX_REQUEST_BYTES_DEFAULT),
        conf.getInt(MAX_PACKET_BYTES_KEY, MAX_PACKET_BYTES_DEFAULT),
        conf.getLong(WRITE_TIMEOUT_KEY, WRITE_TIMEOUT_DEFAULT));
  }

  /**
   * {@value #PACKET_TIMEOUT_KEY}, or where it is unset or empty dfs.client.socket-timeout (stock's
   * DataNode reads a write's packets with that timeout, and the client sends heartbeats at half of
   * it), or {@value #PACKET_TIMEOUT_DEFAULT}.
   */
  static long packetTimeoutMs(Configuration conf) {
    String v = conf.getTrimmed(PACKET_TIMEOUT_KEY);
    if (v != null && !v.isEmpty()) {
      return conf.getLong(PACKET_TIMEOUT_KEY, PACKET_TIMEOUT_DEFAULT);
    }
    return conf.getLong(org.apache.hadoop.hdfs.client.HdfsClientConfigKeys.DFS_CLIENT_SOCKET_TIMEOUT_KEY,
        PACKET_TIMEOUT_DEFAULT);
  }

  /**
   * The largest DATA_PACKET message of a write: fixed bytes, header, checksums (at most 4 bytes
   * per chunk of at least 512 bytes, a 1/128 share) and the data.
   */
  long maxPacketMessageBytes() {
    return org.hdfsrdma.protocol.MessageCodec.FIXED_BYTES + org.hdfsrdma.protocol.MessageCodec.MAX_HEADER_BYTES
        + (long) maxPacketBytes + ((long) maxPacketBytes / 512 + 1) * 4;
  }

  static DataNodeLimits defaults() {
    return new DataNodeLimits(MAX_CONNECTIONS_DEFAULT, IDLE_TIMEOUT_DEFAULT, PACKET_TIMEOUT_DEFAULT,
        MAX_REQUEST_BYTES_DEFAULT, MAX_PACKET_BYTES_DEFAULT);
  }
}
