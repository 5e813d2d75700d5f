package org.hdfsrdma.client;

/**
 * The configuration keys of the client (hrdma.client.*),
 * each {@code _KEY} beside its {@code _DEFAULT}. Every key is also in hrdma-default.xml
 * (hrdma-protocol's jar) with its default and a description, and docs/configuration.md is
 * generated from that file; ConfigurationRegistryTest fails when the three disagree or when
 * code uses an {@code "hrdma.*"} name not listed here. Adding a key: one constant pair here,
 * one {@code <property>} in hrdma-default.xml, then {@code make docs}.
 *
 * <p>Constants only; thread-safe.
 */
public final class HrdmaClientKeys {
  private HrdmaClientKeys() {}

  /**
   * false: every read and write takes the stock path (RdmaDistributedFileSystem is then a plain
   * DistributedFileSystem).
   */
  public static final String ENABLED_KEY = "hrdma.client.enabled";
  public static final boolean ENABLED_DEFAULT = true;
  /** How long a DataNode that failed over hrdma is used through the stock path before it is tried again. */
  public static final String FALLBACK_RETRY_MS_KEY = "hrdma.client.fallback.retry-ms";
  public static final long FALLBACK_RETRY_MS_DEFAULT = 600_000;
  /**
   * How long a DataNode whose plugin refused a connection as still starting (it listens, its
   * DataNode registered, it does not serve yet: after a restart) is used through the stock path
   * before it is tried again; every other failure waits {@value #FALLBACK_RETRY_MS_KEY}.
   */
  public static final String FALLBACK_STARTING_RETRY_MS_KEY = "hrdma.client.fallback.starting-retry-ms";
  public static final long FALLBACK_STARTING_RETRY_MS_DEFAULT = 1_500;
  /**
   * Publish this client's counters as a metrics2 source and JMX bean ({@code HrdmaClient-<n>}); in a
   * JVM without a running metrics system that starts one (prefix HrdmaClient).
   */
  public static final String METRICS_ENABLED_KEY = "hrdma.client.metrics.enabled";
  public static final boolean METRICS_ENABLED_DEFAULT = true;
  /**
   * How long after a file system is created its metrics source is registered (and a metrics
   * system started where none runs); one closed before that registers nothing, so a short command
   * does not pay for a bean nobody reads. Default: one metrics period.
   */
  public static final String METRICS_DELAY_MS_KEY = "hrdma.client.metrics.delay-ms";
  public static final long METRICS_DELAY_MS_DEFAULT = 10_000;
  /**
   * Whether the data path is warmed up in the background from a file system's first create (or
   * open), while the NameNode answers it: the native library is loaded and the block client made,
   * for a create with the transport its first connection will use (a UCX context, worker and I/O
   * thread). A short command (hadoop fs -put, -cat) then does not wait for them between the
   * NameNode's answer and its first block; one that never creates or opens a file (-ls) starts
   * none of it.
   */
  public static final String WARM_UP_KEY = "hrdma.client.warm-up";
  public static final boolean WARM_UP_DEFAULT = true;
  /**
   * Whether the client leases the JVM's shared transports (those the DataNode plugins of a
   * MiniDFSCluster in this JVM run) instead of transports of its own: auto (when the JVM has shared
   * transports open when the client starts, that is DataNodes run in it), true or false. Off by
   * default: its gain was within the noise of the measurements, and a client with its own
   * transports is what every deployment runs, so that is what the in-process tests exercise.
   */
  public static final String SHARE_TRANSPORTS_KEY = "hrdma.client.share-transports";
  public static final String SHARE_TRANSPORTS_DEFAULT = "false";
  /** Connections kept; beyond this the least recently used idle one is closed. */
  public static final String MAX_CONNECTIONS_KEY = "hrdma.client.max-connections";
  public static final int MAX_CONNECTIONS_DEFAULT = 64;
  /**
   * Data bytes per write packet (rounded down to whole checksum chunks). Unset, an explicitly set
   * {@code dfs.client-write-packet-size} that makes smaller packets is followed as stock sizes them.
   */
  public static final String WRITE_PACKET_BYTES_KEY = "hrdma.client.write.packet-bytes";
  public static final int WRITE_PACKET_BYTES_DEFAULT = 1 << 20;
  /** Bytes of packets sent and not acknowledged yet, per block write. */
  public static final String WRITE_WINDOW_BYTES_KEY = "hrdma.client.write.window-bytes";
  public static final long WRITE_WINDOW_BYTES_DEFAULT = 5L << 20;
  /** Pipeline recoveries of one block before the write gives up. */
  public static final String WRITE_MAX_PIPELINE_RECOVERIES_KEY = "hrdma.client.write.max-pipeline-recoveries";
  public static final int WRITE_MAX_PIPELINE_RECOVERIES_DEFAULT = 5;
  /** Bytes asked for by one read request; a reader splits its range into such requests. */
  public static final String READ_REQUEST_BYTES_KEY = "hrdma.client.read.request-bytes";
  public static final long READ_REQUEST_BYTES_DEFAULT = 4L << 20;
  /**
   * On storage types in hrdma.client.read.ramp-storage-types, requests double up to this while a reader
   * reads on sequentially.
   */
  public static final String READ_MAX_REQUEST_BYTES_KEY = "hrdma.client.read.max-request-bytes";
  public static final long READ_MAX_REQUEST_BYTES_DEFAULT = 64L << 20;
  /** Storage types whose sequential reads grow their requests up to hrdma.client.read.max-request-bytes. */
  public static final String READ_RAMP_STORAGE_TYPES_KEY = "hrdma.client.read.ramp-storage-types";
  public static final String READ_RAMP_STORAGE_TYPES_DEFAULT = "SSD,RAM_DISK";
  /** Read requests a reader keeps in flight (the one being read, plus read-ahead). */
  public static final String READ_REQUESTS_IN_FLIGHT_KEY = "hrdma.client.read.requests-in-flight";
  public static final int READ_REQUESTS_IN_FLIGHT_DEFAULT = 2;
  /** How long a reader waits for the next message of a request. */
  public static final String READ_TIMEOUT_MS_KEY = "hrdma.client.read.timeout-ms";
  public static final long READ_TIMEOUT_MS_DEFAULT = 60_000;
  /**
   * Short-circuit reads: a finalized replica on this host is read from its files, which the plugin opens
   * and passes as descriptors over its domain socket after the token check (no permission on its files needed).
   */
  public static final String READ_LOCAL_KEY = "hrdma.client.read.local";
  public static final boolean READ_LOCAL_DEFAULT = true;
  /**
   * Same-host reads by reference: the client maps the DataNode's shared-memory segment read-only (it
   * must run as the DataNode's user, else it reads by value).
   */
  public static final String READ_SHM_KEY = "hrdma.client.read.shm";
  public static final boolean READ_SHM_DEFAULT = true;
  /**
   * Same-host writes by reference: the client builds its write packets in a shared-memory segment
   * the DataNode grants (its descriptor passed over the DataNode's domain socket, so any user can
   * map it) and sends only their place; else they go by value.
   */
  public static final String WRITE_SHM_KEY = "hrdma.client.write.shm";
  public static final boolean WRITE_SHM_DEFAULT = true;
  /** Bytes a short-circuit reader verifies (and at most hands out) at a time. */
  public static final String READ_LOCAL_WINDOW_BYTES_KEY = "hrdma.client.read.local.window-bytes";
  public static final int READ_LOCAL_WINDOW_BYTES_DEFAULT = 512 * 1024;
  /**
   * Threads verifying short-circuit windows ahead of the one being read; 0: every reader verifies its
   * own.
   */
  public static final String READ_LOCAL_VERIFY_THREADS_KEY = "hrdma.client.read.local.verify-threads";
  public static final int READ_LOCAL_VERIFY_THREADS_DEFAULT = 1;
  /**
   * Windows a short-circuit reader hands to the verifier beyond the one being read (in batches of
   * half of them).
   */
  public static final String READ_LOCAL_VERIFY_AHEAD_KEY = "hrdma.client.read.local.verify-ahead";
  public static final int READ_LOCAL_VERIFY_AHEAD_DEFAULT = 8;
  /**
   * How far ahead of a short-circuit reader the kernel is asked to read the block file into the page
   * cache (posix_fadvise WILLNEED, in halves of this); 0: off, the reader's reads fetch it.
   */
  public static final String READ_LOCAL_READ_AHEAD_BYTES_KEY = "hrdma.client.read.local.read-ahead-bytes";
  public static final long READ_LOCAL_READ_AHEAD_BYTES_DEFAULT = 16L << 20;
  /**
   * A sequential short-circuit read of at least 64 KiB at a chunk boundary reads the block file
   * straight into the caller's buffer and verifies it there (one copy; pieces of a window shared
   * with the verifier thread); false: it copies out of the windows verified ahead (two copies).
   * Pages not in the page cache go through the windows either way. On by default: 10-20% less
   * client CPU per GiB and warm reads even with or faster than the windows' (docs/benchmarks.md).
   */
  public static final String READ_LOCAL_DIRECT_KEY = "hrdma.client.read.local.direct";
  public static final boolean READ_LOCAL_DIRECT_DEFAULT = true;
  /**
   * A short-circuit reader with direct reads on that finds the replica not in the page cache (its
   * range's first chunk at open, or a direct read's miss further on) reads the rest of the range, when
   * at least depth x request-bytes are left, with O_DIRECT through an io_uring: depth requests in
   * flight into private buffers that it verifies and copies out of (fio's pattern; the page cache is
   * neither filled nor copied from, and what is read this way is not left in it). Falls back to the
   * page cache where O_DIRECT cannot be had. false (the default): cold pages go through the
   * windows and stay in the page cache, as stock's reads leave them; true pays where a file is read
   * once (scans) or on SSD tiers, at about half the client's CPU per cold GiB.
   */
  public static final String READ_LOCAL_COLD_DIRECT_KEY = "hrdma.client.read.local.cold-direct";
  public static final boolean READ_LOCAL_COLD_DIRECT_DEFAULT = false;
  /** O_DIRECT requests a cold short-circuit reader keeps in flight (1-64). */
  public static final String READ_LOCAL_COLD_DIRECT_DEPTH_KEY = "hrdma.client.read.local.cold-direct.depth";
  public static final int READ_LOCAL_COLD_DIRECT_DEPTH_DEFAULT = 4;
  /** Bytes of each O_DIRECT request of a cold short-circuit reader (whole O_DIRECT blocks and chunks). */
  public static final String READ_LOCAL_COLD_DIRECT_REQUEST_BYTES_KEY =
      "hrdma.client.read.local.cold-direct.request-bytes";
  public static final int READ_LOCAL_COLD_DIRECT_REQUEST_BYTES_DEFAULT = 1 << 20;
  /**
   * Replicas of this host kept open for positional reads (the first positional read of a replica asks its
   * DataNode for the files, later ones read the block file kept open); 0: every positional read asks again.
   */
  public static final String READ_LOCAL_CACHED_REPLICAS_KEY = "hrdma.client.read.local.cached-replicas";
  public static final int READ_LOCAL_CACHED_REPLICAS_DEFAULT = 256;
  /**
   * Where several replicas of a block are on this host (equally near), read one whose range is in
   * the page cache: its DataNode is asked, in the short-circuit exchange, how much of it is cached,
   * once per replica and block; false: the first the NameNode lists, as before.
   */
  public static final String READ_LOCAL_PREFER_CACHED_KEY = "hrdma.client.read.local.prefer-cached";
  public static final boolean READ_LOCAL_PREFER_CACHED_DEFAULT = true;
  /** A replica kept open for positional reads is dropped after this long unused. */
  public static final String READ_LOCAL_CACHE_EXPIRY_MS_KEY = "hrdma.client.read.local.cache-expiry-ms";
  public static final long READ_LOCAL_CACHE_EXPIRY_MS_DEFAULT = 300_000;
}
