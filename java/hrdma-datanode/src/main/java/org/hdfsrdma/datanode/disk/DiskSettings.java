package org.hdfsrdma.datanode.disk;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.StorageType;
import org.hdfsrdma.datanode.HrdmaDataNodeKeys;

/**
 * The disk settings of the plugin, from the DataNode configuration
 * ({@code hrdma.datanode.disk.*}). Every bad value is refused with an
 * {@link IllegalArgumentException} naming the key.
 */
public record DiskSettings(boolean schedulerEnabled, Map<StorageType, String> policyByType,
    Map<String, String> policyByDir, long sliceBytes, long lingerNanos, int ssdDepth, int ssdRequestBytes,
    int adaptiveMinDepth, int adaptiveMaxDepth, int adaptiveMinBytes, int adaptiveMaxBytes, int adaptiveWindow,
    double adaptiveDrop, double adaptiveGain, int adaptiveCalmWindows, int fifoDepth, int maxQueued,
    int maxQueuedPerStream, long maxWaitNanos, long queueTimeoutNanos, boolean preallocate,
    Map<StorageType, String> writeModeByType, Map<String, String> writeModeByDir, boolean dropBehindReads,
    long dropBytes, boolean directReads, int readAheadBytes, boolean writeWhenIdleHere) {

  public static final String PREFIX = HrdmaDataNodeKeys.DISK_PREFIX;
  /** false: every volume's I/O runs on the caller's thread, unscheduled (for comparisons). */
  public static final String SCHEDULER_KEY = HrdmaDataNodeKeys.DISK_SCHEDULER_KEY;
  public static final boolean SCHEDULER_DEFAULT = HrdmaDataNodeKeys.DISK_SCHEDULER_DEFAULT;
  /** Policy per storage type: {@code hrdma.datanode.disk.policy.ssd = adaptive} etc. */
  public static final String POLICY_KEY_PREFIX = HrdmaDataNodeKeys.DISK_POLICY_KEY_PREFIX;
  /** Per-volume overrides: comma-separated {@code <volume dir>=<policy>}. */
  public static final String POLICY_OVERRIDES_KEY = HrdmaDataNodeKeys.DISK_POLICY_OVERRIDES_KEY;
  public static final String SLICE_BYTES_KEY = HrdmaDataNodeKeys.DISK_ROTATIONAL_SLICE_BYTES_KEY;
  public static final long SLICE_BYTES_DEFAULT = HrdmaDataNodeKeys.DISK_ROTATIONAL_SLICE_BYTES_DEFAULT;
  public static final String LINGER_MS_KEY = HrdmaDataNodeKeys.DISK_ROTATIONAL_LINGER_MS_KEY;
  public static final long LINGER_MS_DEFAULT = HrdmaDataNodeKeys.DISK_ROTATIONAL_LINGER_MS_DEFAULT;
  public static final String SSD_DEPTH_KEY = HrdmaDataNodeKeys.DISK_SSD_QUEUE_DEPTH_KEY;
  public static final int SSD_DEPTH_DEFAULT = HrdmaDataNodeKeys.DISK_SSD_QUEUE_DEPTH_DEFAULT;
  public static final String SSD_REQUEST_BYTES_KEY = HrdmaDataNodeKeys.DISK_SSD_REQUEST_BYTES_KEY;
  public static final int SSD_REQUEST_BYTES_DEFAULT = HrdmaDataNodeKeys.DISK_SSD_REQUEST_BYTES_DEFAULT;
  public static final String ADAPTIVE_MIN_DEPTH_KEY = HrdmaDataNodeKeys.DISK_ADAPTIVE_MIN_QUEUE_DEPTH_KEY;
  public static final int ADAPTIVE_MIN_DEPTH_DEFAULT = HrdmaDataNodeKeys.DISK_ADAPTIVE_MIN_QUEUE_DEPTH_DEFAULT;
  public static final String ADAPTIVE_MAX_DEPTH_KEY = HrdmaDataNodeKeys.DISK_ADAPTIVE_MAX_QUEUE_DEPTH_KEY;
  public static final int ADAPTIVE_MAX_DEPTH_DEFAULT = HrdmaDataNodeKeys.DISK_ADAPTIVE_MAX_QUEUE_DEPTH_DEFAULT;
  public static final String ADAPTIVE_MIN_BYTES_KEY = HrdmaDataNodeKeys.DISK_ADAPTIVE_MIN_REQUEST_BYTES_KEY;
  public static final int ADAPTIVE_MIN_BYTES_DEFAULT = HrdmaDataNodeKeys.DISK_ADAPTIVE_MIN_REQUEST_BYTES_DEFAULT;
  public static final String ADAPTIVE_MAX_BYTES_KEY = HrdmaDataNodeKeys.DISK_ADAPTIVE_MAX_REQUEST_BYTES_KEY;
  public static final int ADAPTIVE_MAX_BYTES_DEFAULT = HrdmaDataNodeKeys.DISK_ADAPTIVE_MAX_REQUEST_BYTES_DEFAULT;
  public static final String ADAPTIVE_WINDOW_KEY = HrdmaDataNodeKeys.DISK_ADAPTIVE_WINDOW_REQUESTS_KEY;
  public static final int ADAPTIVE_WINDOW_DEFAULT = HrdmaDataNodeKeys.DISK_ADAPTIVE_WINDOW_REQUESTS_DEFAULT;
  public static final String ADAPTIVE_DROP_KEY = HrdmaDataNodeKeys.DISK_ADAPTIVE_DROP_PERCENT_KEY;
  public static final int ADAPTIVE_DROP_DEFAULT = HrdmaDataNodeKeys.DISK_ADAPTIVE_DROP_PERCENT_DEFAULT;
  public static final String ADAPTIVE_GAIN_KEY = HrdmaDataNodeKeys.DISK_ADAPTIVE_GAIN_PERCENT_KEY;
  public static final int ADAPTIVE_GAIN_DEFAULT = HrdmaDataNodeKeys.DISK_ADAPTIVE_GAIN_PERCENT_DEFAULT;
  public static final String ADAPTIVE_CALM_KEY = HrdmaDataNodeKeys.DISK_ADAPTIVE_CALM_WINDOWS_KEY;
  public static final int ADAPTIVE_CALM_DEFAULT = HrdmaDataNodeKeys.DISK_ADAPTIVE_CALM_WINDOWS_DEFAULT;
  public static final String FIFO_DEPTH_KEY = HrdmaDataNodeKeys.DISK_FIFO_QUEUE_DEPTH_KEY;
  public static final int FIFO_DEPTH_DEFAULT = HrdmaDataNodeKeys.DISK_FIFO_QUEUE_DEPTH_DEFAULT;
  public static final String MAX_QUEUED_KEY = HrdmaDataNodeKeys.DISK_MAX_QUEUED_KEY;
  public static final int MAX_QUEUED_DEFAULT = HrdmaDataNodeKeys.DISK_MAX_QUEUED_DEFAULT;
  public static final String MAX_QUEUED_PER_STREAM_KEY = HrdmaDataNodeKeys.DISK_MAX_QUEUED_PER_STREAM_KEY;
  public static final int MAX_QUEUED_PER_STREAM_DEFAULT = HrdmaDataNodeKeys.DISK_MAX_QUEUED_PER_STREAM_DEFAULT;
  /** A request that waited this long is served next, whatever the policy prefers. */
  public static final String MAX_WAIT_MS_KEY = HrdmaDataNodeKeys.DISK_MAX_WAIT_MS_KEY;
  public static final long MAX_WAIT_MS_DEFAULT = HrdmaDataNodeKeys.DISK_MAX_WAIT_MS_DEFAULT;
  /** How long a caller waits for room in a full queue before its request fails. */
  public static final String QUEUE_TIMEOUT_MS_KEY = HrdmaDataNodeKeys.DISK_QUEUE_TIMEOUT_MS_KEY;
  public static final long QUEUE_TIMEOUT_MS_DEFAULT = HrdmaDataNodeKeys.DISK_QUEUE_TIMEOUT_MS_DEFAULT;
  public static final String PREALLOCATE_KEY = HrdmaDataNodeKeys.DISK_PREALLOCATE_KEY;
  public static final boolean PREALLOCATE_DEFAULT = HrdmaDataNodeKeys.DISK_PREALLOCATE_DEFAULT;
  /** Write mode per storage type: {@code hrdma.datanode.disk.write-mode.disk = cache} etc. */
  public static final String WRITE_MODE_KEY_PREFIX = HrdmaDataNodeKeys.DISK_WRITE_MODE_KEY_PREFIX;
  /** Per-volume write modes: comma-separated {@code <volume dir>=<mode>}. */
  public static final String WRITE_MODE_OVERRIDES_KEY = HrdmaDataNodeKeys.DISK_WRITE_MODE_OVERRIDES_KEY;
  public static final String DROP_BEHIND_READS_KEY = HrdmaDataNodeKeys.DISK_DROP_BEHIND_READS_KEY;
  public static final boolean DROP_BEHIND_READS_DEFAULT = HrdmaDataNodeKeys.DISK_DROP_BEHIND_READS_DEFAULT;
  /** Granularity of write-back and page-cache dropping behind a stream. */
  public static final String DROP_BYTES_KEY = HrdmaDataNodeKeys.DISK_DROP_BYTES_KEY;
  public static final long DROP_BYTES_DEFAULT = HrdmaDataNodeKeys.DISK_DROP_BYTES_DEFAULT;

  /**
   * Reads on volumes with the ssd or adaptive policy: O_DIRECT through an io_uring, several
   * requests in flight per refill of a read-ahead window.
   */
  public static final String DIRECT_READS_KEY = HrdmaDataNodeKeys.DISK_DIRECT_READS_KEY;
  public static final boolean DIRECT_READS_DEFAULT = HrdmaDataNodeKeys.DISK_DIRECT_READS_DEFAULT;
  /** The read-ahead window of one direct read stream (depth x request size is capped by it). */
  public static final String READ_AHEAD_BYTES_KEY = HrdmaDataNodeKeys.DISK_READ_AHEAD_BYTES_KEY;
  public static final int READ_AHEAD_BYTES_DEFAULT = HrdmaDataNodeKeys.DISK_READ_AHEAD_BYTES_DEFAULT;
  public static final String WRITE_WHEN_IDLE_HERE_KEY = HrdmaDataNodeKeys.DISK_WRITE_WHEN_IDLE_HERE_KEY;
  public static final boolean WRITE_WHEN_IDLE_HERE_DEFAULT = HrdmaDataNodeKeys.DISK_WRITE_WHEN_IDLE_HERE_DEFAULT;

  /**
   * What a volume's block writes leave in the page cache. {@code auto} in the
   * configuration is resolved per volume by {@link #writeMode}.
   */
  public enum WriteMode {
    /**
     * Buffered; every {@code drop-cache-bytes} the range just written is handed to write-back
     * ({@code sync_file_range WRITE}, so dirty pages do not pile up), and it stays cached: a read
     * right after the write is served from memory, as on a stock DataNode.
     */
    CACHE("cache"),
    /** As {@link #CACHE}, and the range before the one being written back is dropped from the cache. */
    DROP_BEHIND("drop-behind"),
    /** O_DIRECT from an aligned buffer: the page cache is neither copied into nor filled. */
    DIRECT("direct"),
    /**
     * {@link #CACHE} for a replica written by the first DataNode of a client's pipeline (on
     * the writer's host where the writer runs on a DataNode: the replica its host's readers
     * read), {@link #DIRECT} for the replicas downstream. Resolved per write by {@link #forPipeline}.
     */
    CACHE_FIRST("cache-first");

    private final String key;

    WriteMode(String key) {
      this.key = key;
    }

    /** The name in the configuration. */
    public String key() {
      return key;
    }

    /** The mode of one replica's write: {@link #CACHE_FIRST} resolved by the replica's place in its pipeline. */
    public WriteMode forPipeline(boolean firstOfPipeline) {
      if (this != CACHE_FIRST) {
        return this;
      }
      return firstOfPipeline ? CACHE : DIRECT;
    }
  }

  /** The write-mode names the configuration takes. */
  public static final java.util.List<String> WRITE_MODES = java.util.List.of("cache", "drop-behind", "direct",
      "cache-first", "auto");

  /**
   * Default write mode per storage type: ARCHIVE drops behind (data written to the
   * archive tier is rarely read soon and should not push hotter data out of the
   * cache); the rest are "auto".
   */
  static String defaultWriteMode(StorageType t) {
    return t == StorageType.ARCHIVE ? "drop-behind" : "auto";
  }

  /** The policy names {@link #policyFor} knows. */
  public static final java.util.List<String> POLICIES = java.util.List.of("rotational", "ssd", "adaptive",
      "fifo", "inline", "auto");

  /**
   * Default policy per storage type: DISK (HDFS's default type, also what an
   * untagged SSD volume is) goes by its device ("auto"); ARCHIVE is
   * rotational; RAM_DISK needs no queue.
   */
  static String defaultPolicy(StorageType t) {
    return switch (t) {
      case DISK -> "auto";
      case ARCHIVE -> "rotational";
      case SSD -> "adaptive";
      case RAM_DISK, NVDIMM -> "inline";
      default -> "fifo";
    };
  }

  public static DiskSettings of(Configuration conf) {
    Map<StorageType, String> byType = new LinkedHashMap<>();
    for (StorageType t : StorageType.values()) {
      String key = POLICY_KEY_PREFIX + t.name().toLowerCase(Locale.ROOT);
      byType.put(t, policyName(key, conf.getTrimmed(key, defaultPolicy(t))));
    }
    Map<String, String> byDir = new LinkedHashMap<>();
    for (String entry : conf.getTrimmedStringCollection(POLICY_OVERRIDES_KEY)) {
      int eq = entry.lastIndexOf('=');
      if (eq <= 0 || eq == entry.length() - 1) {
        throw new IllegalArgumentException(POLICY_OVERRIDES_KEY + ": \"" + entry
            + "\" is not <volume dir>=<policy>");
      }
      byDir.put(normalizeDir(entry.substring(0, eq).trim()),
          policyName(POLICY_OVERRIDES_KEY, entry.substring(eq + 1).trim()));
    }
    Map<StorageType, String> modeByType = new LinkedHashMap<>();
    for (StorageType t : StorageType.values()) {
      String key = WRITE_MODE_KEY_PREFIX + t.name().toLowerCase(Locale.ROOT);
      modeByType.put(t, writeModeName(key, conf.getTrimmed(key, defaultWriteMode(t))));
    }
    Map<String, String> modeByDir = new LinkedHashMap<>();
    for (String entry : conf.getTrimmedStringCollection(WRITE_MODE_OVERRIDES_KEY)) {
      int eq = entry.lastIndexOf('=');
      if (eq <= 0 || eq == entry.length() - 1) {
        throw new IllegalArgumentException(WRITE_MODE_OVERRIDES_KEY + ": \"" + entry
            + "\" is not <volume dir>=<mode>");
      }
      modeByDir.put(normalizeDir(entry.substring(0, eq).trim()),
          writeModeName(WRITE_MODE_OVERRIDES_KEY, entry.substring(eq + 1).trim()));
    }
    return new DiskSettings(conf.getBoolean(SCHEDULER_KEY, SCHEDULER_DEFAULT), byType, byDir,
        positiveLong(conf, SLICE_BYTES_KEY, SLICE_BYTES_DEFAULT, 64L << 10, 1L << 30),
        TimeUnit.MILLISECONDS.toNanos(positiveLong(conf, LINGER_MS_KEY, LINGER_MS_DEFAULT, 0, 1000)),
        positiveInt(conf, SSD_DEPTH_KEY, SSD_DEPTH_DEFAULT, 1, 256),
        positiveInt(conf, SSD_REQUEST_BYTES_KEY, SSD_REQUEST_BYTES_DEFAULT, 4096, 64 << 20),
        positiveInt(conf, ADAPTIVE_MIN_DEPTH_KEY, ADAPTIVE_MIN_DEPTH_DEFAULT, 1, 256),
        positiveInt(conf, ADAPTIVE_MAX_DEPTH_KEY, ADAPTIVE_MAX_DEPTH_DEFAULT, 1, 256),
        positiveInt(conf, ADAPTIVE_MIN_BYTES_KEY, ADAPTIVE_MIN_BYTES_DEFAULT, 4096, 64 << 20),
        positiveInt(conf, ADAPTIVE_MAX_BYTES_KEY, ADAPTIVE_MAX_BYTES_DEFAULT, 4096, 64 << 20),
        positiveInt(conf, ADAPTIVE_WINDOW_KEY, ADAPTIVE_WINDOW_DEFAULT, 1, 1 << 20),
        positiveInt(conf, ADAPTIVE_DROP_KEY, ADAPTIVE_DROP_DEFAULT, 1, 99) / 100.0,
        positiveInt(conf, ADAPTIVE_GAIN_KEY, ADAPTIVE_GAIN_DEFAULT, 0, 99) / 100.0,
        positiveInt(conf, ADAPTIVE_CALM_KEY, ADAPTIVE_CALM_DEFAULT, 1, 1 << 20),
        positiveInt(conf, FIFO_DEPTH_KEY, FIFO_DEPTH_DEFAULT, 1, 256),
        positiveInt(conf, MAX_QUEUED_KEY, MAX_QUEUED_DEFAULT, 1, 1 << 20),
        positiveInt(conf, MAX_QUEUED_PER_STREAM_KEY, MAX_QUEUED_PER_STREAM_DEFAULT, 1, 1 << 20),
        TimeUnit.MILLISECONDS.toNanos(positiveLong(conf, MAX_WAIT_MS_KEY, MAX_WAIT_MS_DEFAULT, 1, 3_600_000)),
        TimeUnit.MILLISECONDS.toNanos(positiveLong(conf, QUEUE_TIMEOUT_MS_KEY, QUEUE_TIMEOUT_MS_DEFAULT, 1,
            3_600_000)),
        conf.getBoolean(PREALLOCATE_KEY, PREALLOCATE_DEFAULT),
        modeByType, modeByDir,
        conf.getBoolean(DROP_BEHIND_READS_KEY, DROP_BEHIND_READS_DEFAULT),
        positiveLong(conf, DROP_BYTES_KEY, DROP_BYTES_DEFAULT, 64L << 10, 1L << 30),
        conf.getBoolean(DIRECT_READS_KEY, DIRECT_READS_DEFAULT),
        positiveInt(conf, READ_AHEAD_BYTES_KEY, READ_AHEAD_BYTES_DEFAULT, 64 << 10, 256 << 20),
        conf.getBoolean(WRITE_WHEN_IDLE_HERE_KEY, WRITE_WHEN_IDLE_HERE_DEFAULT));
  }

  public DiskSettings {
    if (adaptiveMaxDepth < adaptiveMinDepth) {
      throw new IllegalArgumentException(ADAPTIVE_MAX_DEPTH_KEY + " (" + adaptiveMaxDepth + ") is below "
          + ADAPTIVE_MIN_DEPTH_KEY + " (" + adaptiveMinDepth + ")");
    }
    if (adaptiveMaxBytes < adaptiveMinBytes) {
      throw new IllegalArgumentException(ADAPTIVE_MAX_BYTES_KEY + " (" + adaptiveMaxBytes + ") is below "
          + ADAPTIVE_MIN_BYTES_KEY + " (" + adaptiveMinBytes + ")");
    }
  }

  /** The policy name for a volume: its directory's override, else its storage type's; "inline" when off. */
  public String policyName(StorageType type, String dir) {
    if (!schedulerEnabled) {
      return "inline";
    }
    String d = normalizeDir(dir);
    String o = policyByDir.get(d);
    String p = o != null ? o : policyByType.get(type);
    return p.equals("auto") ? autoPolicy(dir, DeviceKind.SYS) : p;
  }

  /** "auto": adaptive on a device Linux reports as not rotational, else (rotational or unknown) rotational. */
  static String autoPolicy(String dir, java.nio.file.Path sysRoot) {
    Boolean r = DeviceKind.rotational(java.nio.file.Path.of(dir), sysRoot);
    return Boolean.FALSE.equals(r) ? "adaptive" : "rotational";
  }

  /**
   * The write mode of a volume: its directory's override, else its storage type's;
   * {@code auto} is {@link WriteMode#DIRECT} where the volume's reads are O_DIRECT
   * ({@code directReads}: an ssd or adaptive policy, direct reads on and possible),
   * since reads there never look in the page cache, and {@link WriteMode#CACHE_FIRST} elsewhere
   * (docs/storage.md says why).
   */
  public WriteMode writeMode(StorageType type, String dir, boolean directReads) {
    String o = writeModeByDir.get(normalizeDir(dir));
    String m = o != null ? o : writeModeByType.get(type);
    return switch (m) {
      case "cache" -> WriteMode.CACHE;
      case "drop-behind" -> WriteMode.DROP_BEHIND;
      case "direct" -> WriteMode.DIRECT;
      case "cache-first" -> WriteMode.CACHE_FIRST;
      case "auto" -> directReads ? WriteMode.DIRECT : WriteMode.CACHE_FIRST;
      default -> throw new AssertionError("checked when read");
    };
  }

  private static String writeModeName(String key, String v) {
    String m = v.toLowerCase(Locale.ROOT);
    if (!WRITE_MODES.contains(m)) {
      throw new IllegalArgumentException(key + ": unknown write mode \"" + v + "\"; one of " + WRITE_MODES);
    }
    return m;
  }

  /** A new policy object for a volume (each volume has its own state). */
  public Policy policyFor(StorageType type, String dir) {
    int packet = 64 << 10;
    return switch (policyName(type, dir)) {
      case "rotational" -> new Policies.Rotational(sliceBytes, lingerNanos, packet);
      case "ssd" -> new Policies.RoundRobin("ssd", ssdDepth, ssdRequestBytes);
      case "adaptive" -> new Policies.Adaptive(adaptiveMinDepth, adaptiveMaxDepth, adaptiveMinBytes,
          adaptiveMaxBytes, adaptiveWindow, adaptiveDrop, adaptiveGain, adaptiveCalmWindows);
      case "fifo" -> new Policies.Fifo(fifoDepth, packet, false);
      case "inline" -> new Policies.Fifo(1, packet, true);
      default -> throw new AssertionError("checked when read");
    };
  }

  private static String policyName(String key, String v) {
    String p = v.toLowerCase(Locale.ROOT);
    if (!POLICIES.contains(p)) {
      throw new IllegalArgumentException(key + ": unknown disk policy \"" + v + "\"; one of " + POLICIES);
    }
    return p;
  }

  private static String normalizeDir(String d) {
    String s = d.startsWith("file://") ? d.substring("file://".length()) : d;
    while (s.length() > 1 && s.endsWith("/")) {
      s = s.substring(0, s.length() - 1);
    }
    return s;
  }

  private static long positiveLong(Configuration conf, String key, long def, long min, long max) {
    long v;
    try {
      v = conf.getLongBytes(key, def);
    } catch (IllegalArgumentException e) { // NumberFormatException, or a bad size suffix
      throw new IllegalArgumentException(key + ": not a size or number: \"" + conf.get(key) + "\" ("
          + e.getMessage() + ")");
    }
    if (v < min || v > max) {
      throw new IllegalArgumentException(key + " = " + v + " is out of range [" + min + ", " + max + "]");
    }
    return v;
  }

  private static int positiveInt(Configuration conf, String key, int def, int min, int max) {
    return (int) positiveLong(conf, key, def, min, max);
  }
}
