package org.hdfsrdma.datanode;

/**
 * The configuration keys of the DataNode plugin (hrdma.datanode.*),
 * each {@code _KEY} beside its {@code _DEFAULT}. Every key is also in hrdma-default.xml
 * (hrdma-protocol's jar) with its default and a description, and docs/configuration.md is
 * generated from that file; ConfigurationRegistryTest fails when the three disagree or when
 * code uses an {@code "hrdma.*"} name not listed here. Adding a key: one constant pair here,
 * one {@code <property>} in hrdma-default.xml, then {@code make docs}.
 *
 * <p>Constants only; thread-safe.
 */
public final class HrdmaDataNodeKeys {
  private HrdmaDataNodeKeys() {}

  /** Prefix of the disk scheduler's keys. */
  public static final String DISK_PREFIX = "hrdma.datanode.disk.";
  /** Policy per storage type: {@code hrdma.datanode.disk.policy.<type>} (ssd, disk, archive, ...) = a policy name. */
  public static final String DISK_POLICY_KEY_PREFIX = DISK_PREFIX + "policy.";
  /**
   * How block data is written per storage type: {@code hrdma.datanode.disk.write-mode.<type>} = cache,
   * drop-behind, direct, cache-first or auto (what that leaves in the page cache).
   */
  public static final String DISK_WRITE_MODE_KEY_PREFIX = DISK_PREFIX + "write-mode.";

  /**
   * How long the plugin waits for the DataNode's dataset and UUID before giving up (the DataNode runs on
   * without it).
   */
  public static final String START_TIMEOUT_KEY = "hrdma.datanode.start-timeout-ms";
  public static final long START_TIMEOUT_DEFAULT = 120_000;
  /** Address the plugin listens on; empty: the host of the DataNode's xfer address. */
  public static final String BIND_HOST_KEY = "hrdma.datanode.bind-host";
  public static final String BIND_HOST_DEFAULT = "";
  /**
   * Whether the plugins of DataNodes sharing one JVM (a MiniDFSCluster) share its transports: one UCX
   * context, worker, progress thread and registered buffer pool per transport, one tcp event-loop group.
   * Ports, limits, tokens and endpoints stay each DataNode's own. {@code true} (the default): the servers
   * and the connector that forwards a DataNode's writes lease the JVM's transports, so a lone DataNode
   * forwards on its server's I/O thread (no hand-off between I/O threads to forward a packet or relay an
   * ack); {@code auto}: the servers lease them, the connector only when another DataNode plugin runs in
   * the JVM (a lone DataNode's connector on transports of its own); {@code false}: every server and
   * connector its own.
   */
  public static final String SHARE_TRANSPORTS_KEY = "hrdma.datanode.share-transports";
  public static final String SHARE_TRANSPORTS_DEFAULT = "true";
  /** Threads per volume that write received packets to disk (a hung volume holds up only its own writes). */
  public static final String WRITE_THREADS_KEY = "hrdma.datanode.write.threads";
  public static final int WRITE_THREADS_DEFAULT = 8;
  /**
   * Write set-ups (block token, replica creation, downstream connection) in progress at once, each on a
   * thread of its own (stock: one DataXceiver thread each, within dfs.datanode.max.transfer.threads), so a
   * replica creation hung on its volume holds up only its own write; one more is refused.
   */
  public static final String WRITE_MAX_SETUPS_KEY = "hrdma.datanode.write.max-setups";
  public static final int WRITE_MAX_SETUPS_DEFAULT = 256;
  /** How long a write's setup waits for the downstream DataNode's response. */
  public static final String WRITE_SETUP_TIMEOUT_KEY = "hrdma.datanode.write.setup-timeout-ms";
  public static final long WRITE_SETUP_TIMEOUT_DEFAULT = 30_000;
  /**
   * Idle connections to the next DataNodes of write pipelines kept for the next blocks (0: a new
   * connection, and on this host a new write segment, for every block; stock's client keeps 16).
   */
  public static final String WRITE_MIRROR_POOL_KEY = "hrdma.datanode.write.mirror-pool";
  public static final int WRITE_MIRROR_POOL_DEFAULT = 16;
  /**
   * Whether the plugin runs its write path once on made-up messages before it listens
   * ({@code DataNodeWarmUp}), so that a fresh DataNode's first write does not pay the classes and
   * first runs of that code at every hop; off: the plugin listens that much sooner.
   */
  public static final String WARM_UP_KEY = "hrdma.datanode.warm-up";
  public static final boolean WARM_UP_DEFAULT = true;
  /** How long such a connection is kept idle (stock's client keeps a DataNode socket 3 s). */
  public static final String WRITE_MIRROR_IDLE_KEY = "hrdma.datanode.write.mirror-idle-ms";
  public static final long WRITE_MIRROR_IDLE_DEFAULT = 3_000;
  /** Threads that read blocks from disk and feed the transports, per volume (a hung volume holds up only its reads). */
  public static final String READ_THREADS_KEY = "hrdma.datanode.read.threads";
  public static final int READ_THREADS_DEFAULT = 4;
  /** Data bytes per read packet (rounded down to whole checksum chunks). */
  public static final String READ_PACKET_BYTES_KEY = "hrdma.datanode.read.packet-bytes";
  public static final int READ_PACKET_BYTES_DEFAULT = 1 << 20;
  /** Packets of one read request sent and not yet completed by the transport. */
  public static final String READ_PACKETS_IN_FLIGHT_KEY = "hrdma.datanode.read.packets-in-flight";
  public static final int READ_PACKETS_IN_FLIGHT_DEFAULT = 4;
  /** Read requests a connection may have waiting behind the one being served; more are refused. */
  public static final String READ_MAX_QUEUED_KEY = "hrdma.datanode.read.max-queued-requests";
  public static final int READ_MAX_QUEUED_DEFAULT = 16;
  /**
   * Serve short-circuit reads: a Unix domain socket where a same-host client with a block token gets the
   * finalized replica's files as open descriptors.
   */
  public static final String LOCAL_READS_KEY = "hrdma.datanode.local-reads";
  public static final boolean LOCAL_READS_DEFAULT = true;
  /**
   * While a connection's request is served, the next queued one opens its files and starts its disk
   * reads, so the device's queue does not drain between requests.
   */
  public static final String READ_PREPARE_AHEAD_KEY = "hrdma.datanode.read.prepare-ahead";
  public static final boolean READ_PREPARE_AHEAD_DEFAULT = true;
  /**
   * Shared-memory segment per same-host connection: packets are read into it and the client is told
   * where they lie (reads by reference). 0: off.
   */
  public static final String READ_SHM_SEGMENT_BYTES_KEY = "hrdma.datanode.read.shm.segment-bytes";
  public static final long READ_SHM_SEGMENT_BYTES_DEFAULT = 32L << 20;
  /** All shared-memory segments of the plugin together; a connection beyond it reads by value. */
  public static final String READ_SHM_MAX_BYTES_KEY = "hrdma.datanode.read.shm.max-bytes";
  public static final long READ_SHM_MAX_BYTES_DEFAULT = 1L << 30;
  /** Where segment files are made (a tmpfs); each is removed once its client has mapped it. */
  public static final String READ_SHM_DIR_KEY = "hrdma.datanode.read.shm.dir";
  public static final String READ_SHM_DIR_DEFAULT = "/dev/shm";
  /** false: every volume's I/O runs on the caller's thread, unscheduled (for comparisons). */
  public static final String DISK_SCHEDULER_KEY = "hrdma.datanode.disk.scheduler.enabled";
  public static final boolean DISK_SCHEDULER_DEFAULT = true;
  /**
   * Per-volume policy overrides: comma-separated &lt;volume dir&gt;=&lt;policy&gt; (rotational, ssd,
   * adaptive, fifo, inline, auto).
   */
  public static final String DISK_POLICY_OVERRIDES_KEY = "hrdma.datanode.disk.policy.overrides";
  public static final String DISK_POLICY_OVERRIDES_DEFAULT = "";
  /** rotational policy: bytes one stream is served before the next stream's turn. */
  public static final String DISK_ROTATIONAL_SLICE_BYTES_KEY = "hrdma.datanode.disk.rotational.slice-bytes";
  public static final long DISK_ROTATIONAL_SLICE_BYTES_DEFAULT = 32L << 20;
  /** rotational policy: how long a stream whose queue ran dry keeps its turn after its last completion. */
  public static final String DISK_ROTATIONAL_LINGER_MS_KEY = "hrdma.datanode.disk.rotational.linger-ms";
  public static final long DISK_ROTATIONAL_LINGER_MS_DEFAULT = 5;
  /** ssd policy: requests in flight per volume, round-robin between streams. */
  public static final String DISK_SSD_QUEUE_DEPTH_KEY = "hrdma.datanode.disk.ssd.queue-depth";
  public static final int DISK_SSD_QUEUE_DEPTH_DEFAULT = 4;
  /** ssd policy: bytes per disk request. */
  public static final String DISK_SSD_REQUEST_BYTES_KEY = "hrdma.datanode.disk.ssd.request-bytes";
  public static final int DISK_SSD_REQUEST_BYTES_DEFAULT = 1 << 20;
  /** adaptive policy: lowest queue depth. */
  public static final String DISK_ADAPTIVE_MIN_QUEUE_DEPTH_KEY = "hrdma.datanode.disk.adaptive.min-queue-depth";
  public static final int DISK_ADAPTIVE_MIN_QUEUE_DEPTH_DEFAULT = 2;
  /** adaptive policy: highest queue depth. */
  public static final String DISK_ADAPTIVE_MAX_QUEUE_DEPTH_KEY = "hrdma.datanode.disk.adaptive.max-queue-depth";
  public static final int DISK_ADAPTIVE_MAX_QUEUE_DEPTH_DEFAULT = 32;
  /** adaptive policy: smallest disk request, in bytes. */
  public static final String DISK_ADAPTIVE_MIN_REQUEST_BYTES_KEY = "hrdma.datanode.disk.adaptive.min-request-bytes";
  public static final int DISK_ADAPTIVE_MIN_REQUEST_BYTES_DEFAULT = 256 << 10;
  /** adaptive policy: largest disk request, in bytes. */
  public static final String DISK_ADAPTIVE_MAX_REQUEST_BYTES_KEY = "hrdma.datanode.disk.adaptive.max-request-bytes";
  public static final int DISK_ADAPTIVE_MAX_REQUEST_BYTES_DEFAULT = 8 << 20;
  /** adaptive policy: completions per measuring window. */
  public static final String DISK_ADAPTIVE_WINDOW_REQUESTS_KEY = "hrdma.datanode.disk.adaptive.window-requests";
  public static final int DISK_ADAPTIVE_WINDOW_REQUESTS_DEFAULT = 64;
  /**
   * adaptive policy: a fall of throughput by more than this (against the recent best) doubles depth and
   * request size.
   */
  public static final String DISK_ADAPTIVE_DROP_PERCENT_KEY = "hrdma.datanode.disk.adaptive.drop-percent";
  public static final int DISK_ADAPTIVE_DROP_PERCENT_DEFAULT = 10;
  /** adaptive policy: a raise that does not gain at least this in the next window is undone. */
  public static final String DISK_ADAPTIVE_GAIN_PERCENT_KEY = "hrdma.datanode.disk.adaptive.gain-percent";
  public static final int DISK_ADAPTIVE_GAIN_PERCENT_DEFAULT = 5;
  /** adaptive policy: windows without a fall after which depth and size are halved as a probe. */
  public static final String DISK_ADAPTIVE_CALM_WINDOWS_KEY = "hrdma.datanode.disk.adaptive.calm-windows";
  public static final int DISK_ADAPTIVE_CALM_WINDOWS_DEFAULT = 8;
  /** fifo policy: requests in flight, in arrival order. */
  public static final String DISK_FIFO_QUEUE_DEPTH_KEY = "hrdma.datanode.disk.fifo.queue-depth";
  public static final int DISK_FIFO_QUEUE_DEPTH_DEFAULT = 8;
  /** Requests queued per volume; a caller waits for room beyond it. */
  public static final String DISK_MAX_QUEUED_KEY = "hrdma.datanode.disk.max-queued-requests";
  public static final int DISK_MAX_QUEUED_DEFAULT = 1024;
  /** Requests queued per stream (one block read or write); a caller waits for room beyond it. */
  public static final String DISK_MAX_QUEUED_PER_STREAM_KEY = "hrdma.datanode.disk.max-queued-per-stream";
  public static final int DISK_MAX_QUEUED_PER_STREAM_DEFAULT = 64;
  /** A request that waited this long is served next, whatever the policy prefers. */
  public static final String DISK_MAX_WAIT_MS_KEY = "hrdma.datanode.disk.max-wait-ms";
  public static final long DISK_MAX_WAIT_MS_DEFAULT = 500;
  /** How long a caller waits for room in a full queue before its request fails. */
  public static final String DISK_QUEUE_TIMEOUT_MS_KEY = "hrdma.datanode.disk.queue-timeout-ms";
  public static final long DISK_QUEUE_TIMEOUT_MS_DEFAULT = 60_000;
  /** Preallocate a block's file (fallocate) when its write starts, trimmed at finalize. */
  public static final String DISK_PREALLOCATE_KEY = "hrdma.datanode.disk.preallocate";
  public static final boolean DISK_PREALLOCATE_DEFAULT = true;
  /**
   * Per-volume write-mode overrides: comma-separated &lt;volume dir&gt;=&lt;mode&gt; (cache, drop-behind,
   * direct, cache-first, auto).
   */
  public static final String DISK_WRITE_MODE_OVERRIDES_KEY = "hrdma.datanode.disk.write-mode.overrides";
  public static final String DISK_WRITE_MODE_OVERRIDES_DEFAULT = "";
  /** Drop from the page cache what a read stream has read. */
  public static final String DISK_DROP_BEHIND_READS_KEY = "hrdma.datanode.disk.drop-cache-behind-reads";
  public static final boolean DISK_DROP_BEHIND_READS_DEFAULT = false;
  /** Granularity of write-back and page-cache dropping behind a stream, in bytes. */
  public static final String DISK_DROP_BYTES_KEY = "hrdma.datanode.disk.drop-cache-bytes";
  public static final long DISK_DROP_BYTES_DEFAULT = 8L << 20;
  /**
   * A write's packet is written by the thread that verified it when its volume is idle (nothing
   * queued or in flight), not handed to the volume's disk worker and back.
   */
  public static final String DISK_WRITE_WHEN_IDLE_HERE_KEY = "hrdma.datanode.disk.write-when-idle-here";
  public static final boolean DISK_WRITE_WHEN_IDLE_HERE_DEFAULT = true;
  /**
   * Reads on volumes with the ssd or adaptive policy: O_DIRECT through an io_uring, several requests in
   * flight per refill of the read-ahead window.
   */
  public static final String DISK_DIRECT_READS_KEY = "hrdma.datanode.disk.direct-reads";
  public static final boolean DISK_DIRECT_READS_DEFAULT = true;
  /** Read-ahead window of one direct read stream (depth x request size is capped by it). */
  public static final String DISK_READ_AHEAD_BYTES_KEY = "hrdma.datanode.disk.read-ahead-bytes";
  public static final int DISK_READ_AHEAD_BYTES_DEFAULT = 8 << 20;
  /** Connections a DataNode plugin serves at once on all transports (as dfs.datanode.max.transfer.threads). */
  public static final String MAX_CONNECTIONS_KEY = "hrdma.datanode.max-connections";
  public static final int MAX_CONNECTIONS_DEFAULT = 4096;
  /**
   * A client connection with no operation in progress for this long is closed (ms). One whose
   * sends make no progress is closed at stock's dfs.datanode.socket.write.timeout instead
   * ({@link DataNodeLimits#WRITE_TIMEOUT_KEY}).
   */
  public static final String IDLE_TIMEOUT_MS_KEY = "hrdma.datanode.idle-timeout-ms";
  public static final long IDLE_TIMEOUT_MS_DEFAULT = 60_000;
  /**
   * An open write that receives no packet (heartbeats included) for this long fails. Empty:
   * dfs.client.socket-timeout, as stock's DataNode reads packets with that timeout (else the default).
   */
  public static final String WRITE_PACKET_TIMEOUT_MS_KEY = "hrdma.datanode.write.packet-timeout-ms";
  public static final long WRITE_PACKET_TIMEOUT_MS_DEFAULT = 60_000;
  /** Largest request message other than a DATA_PACKET (the codec's 16-byte fixed part and 64 KiB header). */
  public static final String MAX_REQUEST_BYTES_KEY = "hrdma.datanode.max-request-bytes";
  public static final int MAX_REQUEST_BYTES_DEFAULT = 65552;
  /** Most data one DATA_PACKET of a write may carry. */
  public static final String WRITE_MAX_PACKET_BYTES_KEY = "hrdma.datanode.write.max-packet-bytes";
  public static final int WRITE_MAX_PACKET_BYTES_DEFAULT = 4 << 20;
  /** Shared-memory segments of one client together (the block token's user, else the client's address). */
  public static final String READ_SHM_MAX_BYTES_PER_CLIENT_KEY = "hrdma.datanode.read.shm.max-bytes-per-client";
  public static final long READ_SHM_MAX_BYTES_PER_CLIENT_DEFAULT = 256L << 20;
  /** A granted shared-memory segment the client has not mapped within this long is freed (ms). */
  public static final String READ_SHM_MAP_TIMEOUT_MS_KEY = "hrdma.datanode.read.shm.map-timeout-ms";
  public static final long READ_SHM_MAP_TIMEOUT_MS_DEFAULT = 10_000;
  /**
   * How long a short-circuit connection may stay silent (ms); also how long a replica's volume has
   * to open its files for a request before the request is refused with an error naming the volume.
   */
  public static final String SHORT_CIRCUIT_TIMEOUT_MS_KEY = "hrdma.datanode.short-circuit.timeout-ms";
  public static final long SHORT_CIRCUIT_TIMEOUT_MS_DEFAULT = 10_000;
  /** Short-circuit connections open at once. */
  public static final String SHORT_CIRCUIT_MAX_CONNECTIONS_KEY = "hrdma.datanode.short-circuit.max-connections";
  public static final int SHORT_CIRCUIT_MAX_CONNECTIONS_DEFAULT = 256;
  /**
   * Same-host writes by reference: this DataNode grants a same-host sender of write packets a
   * shared-memory segment (its descriptor passed over the domain socket), and forwards packets
   * downstream by reference to a DataNode on this host that grants one.
   */
  public static final String WRITE_SHM_KEY = "hrdma.datanode.write.shm";
  public static final boolean WRITE_SHM_DEFAULT = true;
  /** Bytes of one slot of a write segment: a packet message larger than this goes by value. */
  public static final String WRITE_SHM_SLOT_BYTES_KEY = "hrdma.datanode.write.shm.slot-bytes";
  public static final int WRITE_SHM_SLOT_BYTES_DEFAULT = (1 << 20) + (64 << 10);
  /**
   * Slots of one connection's write segment: packets in transit by reference at once (a slot comes
   * back as soon as the DataNode has copied its packet out, so a few suffice; a DataNode's forward
   * makes a segment per block, and new memory is not free to touch).
   */
  public static final String WRITE_SHM_SLOTS_KEY = "hrdma.datanode.write.shm.slots";
  public static final int WRITE_SHM_SLOTS_DEFAULT = 4;
  /** Write segments of this DataNode together; beyond, senders write by value. */
  public static final String WRITE_SHM_MAX_BYTES_KEY = "hrdma.datanode.write.shm.max-bytes";
  public static final long WRITE_SHM_MAX_BYTES_DEFAULT = 512L << 20;
  /** Write segments of one sender together (the block token's user, else its address). */
  public static final String WRITE_SHM_MAX_BYTES_PER_CLIENT_KEY = "hrdma.datanode.write.shm.max-bytes-per-client";
  public static final long WRITE_SHM_MAX_BYTES_PER_CLIENT_DEFAULT = 128L << 20;
  /** A granted write segment whose descriptor the sender has not fetched within this long is freed (ms). */
  public static final String WRITE_SHM_MAP_TIMEOUT_MS_KEY = "hrdma.datanode.write.shm.map-timeout-ms";
  public static final long WRITE_SHM_MAP_TIMEOUT_MS_DEFAULT = 10_000;
}
