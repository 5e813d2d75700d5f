package org.hdfsrdma.datanode;

import org.apache.hadoop.conf.Configuration;

/** The read path's settings, from the DataNode configuration. */
record ReadSettings(int threads, int packetBytes, int packetsInFlight, int maxQueuedPerConnection,
    boolean localReads, boolean prepareAhead, long shmSegmentBytes, long shmMaxBytes, String shmDir,
    long shmMaxBytesPerClient, long shmMapTimeoutMs) {
  /**
   * Threads that read blocks from disk and feed the transports, per volume (each volume has
   * its own, so a hung one holds up only its reads); also the size of the front executor that
   * finds a read's volume and answers local-path and shared-memory requests.
   */
  static final String THREADS_KEY = HrdmaDataNodeKeys.READ_THREADS_KEY;
  static final int THREADS_DEFAULT = HrdmaDataNodeKeys.READ_THREADS_DEFAULT;
  /** Data bytes per DATA_PACKET (rounded down to whole checksum chunks). */
  static final String PACKET_BYTES_KEY = HrdmaDataNodeKeys.READ_PACKET_BYTES_KEY;
  static final int PACKET_BYTES_DEFAULT = HrdmaDataNodeKeys.READ_PACKET_BYTES_DEFAULT;
  /** DATA_PACKETs of one request sent and not yet completed by the transport. */
  static final String PACKETS_IN_FLIGHT_KEY = HrdmaDataNodeKeys.READ_PACKETS_IN_FLIGHT_KEY;
  static final int PACKETS_IN_FLIGHT_DEFAULT = HrdmaDataNodeKeys.READ_PACKETS_IN_FLIGHT_DEFAULT;
  /** Read requests a connection may have waiting behind the one being served. */
  static final String MAX_QUEUED_KEY = HrdmaDataNodeKeys.READ_MAX_QUEUED_KEY;
  static final int MAX_QUEUED_DEFAULT = HrdmaDataNodeKeys.READ_MAX_QUEUED_DEFAULT;
  /**
   * Short-circuit reads: listen on a Unix domain socket
   * ({@code ShortCircuitSocket#PATH_KEY}) where a client on this host with a
   * block's token gets its finalized replica's files as open descriptors.
   */
  static final String LOCAL_READS_KEY = HrdmaDataNodeKeys.LOCAL_READS_KEY;
  static final boolean LOCAL_READS_DEFAULT = HrdmaDataNodeKeys.LOCAL_READS_DEFAULT;
  /**
   * A read whose O_DIRECT reads are all issued lets the connection's next queued read open
   * its files and start its own disk reads (it sends nothing before its turn), so the
   * device's queue does not drain between one request and the next.
   */
  static final String PREPARE_AHEAD_KEY = HrdmaDataNodeKeys.READ_PREPARE_AHEAD_KEY;
  static final boolean PREPARE_AHEAD_DEFAULT = HrdmaDataNodeKeys.READ_PREPARE_AHEAD_DEFAULT;
  /**
   * Same-host reads by reference: a client on this host (same boot, same network namespace)
   * gets a shared-memory segment of this many bytes per connection; the read packets are
   * read into it and the client is told where they are, instead of receiving them over the
   * transport. 0: off.
   */
  static final String SHM_SEGMENT_BYTES_KEY = HrdmaDataNodeKeys.READ_SHM_SEGMENT_BYTES_KEY;
  static final long SHM_SEGMENT_BYTES_DEFAULT = HrdmaDataNodeKeys.READ_SHM_SEGMENT_BYTES_DEFAULT;
  /** All segments of the plugin together; a connection beyond it reads by value. */
  static final String SHM_MAX_BYTES_KEY = HrdmaDataNodeKeys.READ_SHM_MAX_BYTES_KEY;
  static final long SHM_MAX_BYTES_DEFAULT = HrdmaDataNodeKeys.READ_SHM_MAX_BYTES_DEFAULT;
  /**
   * Segments of one client together (the block token's user; without tokens, the client's
   * address); beyond, its connections read by value.
   */
  static final String SHM_MAX_BYTES_PER_CLIENT_KEY = HrdmaDataNodeKeys.READ_SHM_MAX_BYTES_PER_CLIENT_KEY;
  static final long SHM_MAX_BYTES_PER_CLIENT_DEFAULT = HrdmaDataNodeKeys.READ_SHM_MAX_BYTES_PER_CLIENT_DEFAULT;
  /** A granted segment the client has not mapped (no SHM_MAPPED) within this long is freed. */
  static final String SHM_MAP_TIMEOUT_KEY = HrdmaDataNodeKeys.READ_SHM_MAP_TIMEOUT_MS_KEY;
  static final long SHM_MAP_TIMEOUT_DEFAULT = HrdmaDataNodeKeys.READ_SHM_MAP_TIMEOUT_MS_DEFAULT;
  /** Where segment files are made (a tmpfs; each is removed once its client has mapped it). */
  static final String SHM_DIR_KEY = HrdmaDataNodeKeys.READ_SHM_DIR_KEY;
  static final String SHM_DIR_DEFAULT = HrdmaDataNodeKeys.READ_SHM_DIR_DEFAULT;
  /** Largest packet: the transport's messages must hold it. */
  static final int MAX_PACKET_BYTES = 8 << 20;

  ReadSettings {
    if (threads < 1 || packetBytes < 1 || packetBytes > MAX_PACKET_BYTES || packetsInFlight < 1
        || maxQueuedPerConnection < 1 || shmSegmentBytes < 0 || shmMaxBytes < 0 || shmDir == null
        || shmDir.isEmpty() || shmMaxBytesPerClient < 0 || shmMapTimeoutMs < 1) {
      throw new IllegalArgumentException("bad read settings: " + threads + " threads, " + packetBytes
          + " bytes per packet (max " + MAX_PACKET_BYTES + "), " + packetsInFlight + " packets in flight, "
          + maxQueuedPerConnection + " queued requests, shared-memory segments of " + shmSegmentBytes
          + " bytes (" + shmMaxBytes + " in all, " + shmMaxBytesPerClient + " per client, mapped within "
          + shmMapTimeoutMs + " ms) in '" + shmDir + "'; check hrdma.datanode.read.*");
    }
  }

  static ReadSettings of(Configuration conf) {
    return new ReadSettings(
        conf.getInt(THREADS_KEY, THREADS_DEFAULT),
        conf.getInt(PACKET_BYTES_KEY, PACKET_BYTES_DEFAULT),
        conf.getInt(PACKETS_IN_FLIGHT_KEY, PACKETS_IN_FLIGHT_DEFAULT),
        conf.getInt(MAX_QUEUED_KEY, MAX_QUEUED_DEFAULT),
        conf.getBoolean(LOCAL_READS_KEY, LOCAL_READS_DEFAULT),
        conf.getBoolean(PREPARE_AHEAD_KEY, PREPARE_AHEAD_DEFAULT),
        conf.getLongBytes(SHM_SEGMENT_BYTES_KEY, SHM_SEGMENT_BYTES_DEFAULT),
        conf.getLongBytes(SHM_MAX_BYTES_KEY, SHM_MAX_BYTES_DEFAULT),
        conf.getTrimmed(SHM_DIR_KEY, SHM_DIR_DEFAULT),
        conf.getLongBytes(SHM_MAX_BYTES_PER_CLIENT_KEY, SHM_MAX_BYTES_PER_CLIENT_DEFAULT),
        conf.getLong(SHM_MAP_TIMEOUT_KEY, SHM_MAP_TIMEOUT_DEFAULT));
  }
}
