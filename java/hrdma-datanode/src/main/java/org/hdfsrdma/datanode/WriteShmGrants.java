package org.hdfsrdma.datanode;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier.AccessMode;
import org.hdfsrdma.datanode.compat.DataNodeAccess;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.nativelib.NativeShm;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.protocol.SameHost;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plugin's write segments (same-host writes by reference, {@link WriteShmSegment}): who
 * gets one (a sender on this host, by its {@link SameHost} name, whose request carries a block
 * token valid for WRITE when tokens are on, checked as for a write; then the token's user,
 * else its address, is who is charged), within this DataNode's budget of
 * {@value HrdmaDataNodeKeys#WRITE_SHM_MAX_BYTES_KEY} and the sender's of
 * {@value HrdmaDataNodeKeys#WRITE_SHM_MAX_BYTES_PER_CLIENT_KEY}; each grant has a random
 * one-time id (128 bits) that the sender presents on the domain socket to get the
 * descriptor ({@link #take}); a segment whose descriptor is not fetched within
 * {@value HrdmaDataNodeKeys#WRITE_SHM_MAP_TIMEOUT_MS_KEY} is freed. Thread-safe.
 */
final class WriteShmGrants {
  private static final Logger LOG = LoggerFactory.getLogger(WriteShmGrants.class);
  private static final SecureRandom RANDOM = new SecureRandom();

  private final boolean enabled;
  private final int slotBytes;
  private final int slots;
  private final long maxBytes;
  private final long maxBytesPerClient;
  private final long mapTimeoutMs;
  private final AtomicLong bytesMapped = new AtomicLong();
  private final AtomicLong segments = new AtomicLong();
  private final AtomicLong granted = new AtomicLong();
  private final AtomicLong refused = new AtomicLong();
  private final AtomicLong fetched = new AtomicLong();
  private final AtomicLong mapTimeouts = new AtomicLong();
  private final AtomicLong byReference = new AtomicLong();
  private final AtomicLong badReferences = new AtomicLong();
  private final AtomicLong forwardedByReference = new AtomicLong();
  private final AtomicLong forwardSegments = new AtomicLong();
  private final ConcurrentHashMap<String, Long> byClient = new ConcurrentHashMap<>();
  /** Granted and not fetched yet, by grant id. */
  private final ConcurrentHashMap<ByteBuffer, WriteShmSegment> pending = new ConcurrentHashMap<>();

  WriteShmGrants(boolean enabled, int slotBytes, int slots, long maxBytes, long maxBytesPerClient,
      long mapTimeoutMs) {
    long page = org.hdfsrdma.transport.RegisteredBuffer.PLACE_PAGE;
    if (slotBytes < 4096 || slotBytes % page != 0 || slots < 1 || maxBytes < 0 || maxBytesPerClient < 0
        || mapTimeoutMs < 1) {
      throw new IllegalArgumentException("bad write segment settings: " + HrdmaDataNodeKeys.WRITE_SHM_SLOT_BYTES_KEY
          + "=" + slotBytes + " (whole pages), " + HrdmaDataNodeKeys.WRITE_SHM_SLOTS_KEY + "=" + slots + ", "
          + HrdmaDataNodeKeys.WRITE_SHM_MAP_TIMEOUT_MS_KEY + "=" + mapTimeoutMs);
    }
    this.enabled = enabled;
    this.slotBytes = slotBytes;
    this.slots = slots;
    this.maxBytes = maxBytes;
    this.maxBytesPerClient = maxBytesPerClient;
    this.mapTimeoutMs = mapTimeoutMs;
  }

  static WriteShmGrants of(Configuration conf) {
    return new WriteShmGrants(conf.getBoolean(HrdmaDataNodeKeys.WRITE_SHM_KEY, HrdmaDataNodeKeys.WRITE_SHM_DEFAULT),
        conf.getInt(HrdmaDataNodeKeys.WRITE_SHM_SLOT_BYTES_KEY, HrdmaDataNodeKeys.WRITE_SHM_SLOT_BYTES_DEFAULT),
        conf.getInt(HrdmaDataNodeKeys.WRITE_SHM_SLOTS_KEY, HrdmaDataNodeKeys.WRITE_SHM_SLOTS_DEFAULT),
        conf.getLongBytes(HrdmaDataNodeKeys.WRITE_SHM_MAX_BYTES_KEY, HrdmaDataNodeKeys.WRITE_SHM_MAX_BYTES_DEFAULT),
        conf.getLongBytes(HrdmaDataNodeKeys.WRITE_SHM_MAX_BYTES_PER_CLIENT_KEY,
            HrdmaDataNodeKeys.WRITE_SHM_MAX_BYTES_PER_CLIENT_DEFAULT),
        conf.getLong(HrdmaDataNodeKeys.WRITE_SHM_MAP_TIMEOUT_MS_KEY,
            HrdmaDataNodeKeys.WRITE_SHM_MAP_TIMEOUT_MS_DEFAULT));
  }

  /** Whether this DataNode takes part in writes by reference ({@value HrdmaDataNodeKeys#WRITE_SHM_KEY}). */
  boolean enabled() {
    return enabled;
  }

  /**
   * Who asks: the user of the request's block token, checked for WRITE when tokens are on for the
   * block's pool, else the sender's address.
   *
   * @throws ShmGrants.Refused the token is missing or not valid, or the request is bad
   */
  String authorize(DataNodeAccess dn, HrdmaProtos.ShmRequest req, InetSocketAddress remote)
      throws ShmGrants.Refused {
    try {
      return ShmGrants.identify(dn, req, remote, AccessMode.WRITE, "WRITE_SHM_REQUEST");
    } catch (ShmGrants.Refused e) {
      refused.incrementAndGet();
      throw e;
    }
  }

  /**
   * A new segment for sender {@code client} on host {@code host}, registered under a fresh
   * grant id (returned in {@code id[0]}); freed unless its descriptor is fetched in time.
   *
   * @throws ShmGrants.Refused off, not this host, or not now (budgets, no memory)
   */
  WriteShmSegment grant(String host, String client, byte[][] id) throws ShmGrants.Refused {
    WriteShmSegment s;
    try {
      s = create(host, client);
    } catch (ShmGrants.Refused e) {
      refused.incrementAndGet();
      throw e;
    }
    byte[] g = new byte[16];
    RANDOM.nextBytes(g);
    ByteBuffer key = ByteBuffer.wrap(g.clone());
    pending.put(key, s);
    id[0] = g;
    granted.incrementAndGet();
    CompletableFuture.delayedExecutor(mapTimeoutMs, TimeUnit.MILLISECONDS).execute(() -> {
      pending.remove(key, s);
      if (s.closeUnlessFetched()) {
        mapTimeouts.incrementAndGet();
        LOG.info("hrdma datanode: {} did not fetch its write segment within {} ms ({}), freed", client,
            mapTimeoutMs, HrdmaDataNodeKeys.WRITE_SHM_MAP_TIMEOUT_MS_KEY);
      }
    });
    return s;
  }

  /**
   * The descriptor of the segment granted as {@code id}, once (the id is forgotten whatever
   * happens); -1 for an unknown, used or expired id. The caller closes it after passing it.
   */
  int take(byte[] id) {
    if (id == null) {
      return -1;
    }
    WriteShmSegment s = pending.remove(ByteBuffer.wrap(id));
    int fd = s == null ? -1 : s.takeDescriptor();
    if (fd >= 0) {
      fetched.incrementAndGet();
    }
    return fd;
  }

  private WriteShmSegment create(String host, String client) throws ShmGrants.Refused {
    if (!enabled) {
      throw new ShmGrants.Refused("same-host writes by reference are off here (" + HrdmaDataNodeKeys.WRITE_SHM_KEY
          + ")");
    }
    if (SameHost.name().isEmpty() || !SameHost.name().equals(host)) {
      throw new ShmGrants.Refused("the sender is not on this DataNode's host");
    }
    if (!HrdmaNative.isAvailable()) {
      throw new ShmGrants.Refused("the native library is not loaded: " + HrdmaNative.unavailabilityCause());
    }
    long size = (long) slotBytes * slots;
    if (!charge(client, size)) {
      throw new ShmGrants.Refused("the write segments of " + client + " ("
          + HrdmaDataNodeKeys.WRITE_SHM_MAX_BYTES_PER_CLIENT_KEY + " = " + maxBytesPerClient + " bytes) are in use");
    }
    if (bytesMapped.addAndGet(size) > maxBytes) {
      bytesMapped.addAndGet(-size);
      charge(client, -size);
      throw new ShmGrants.Refused("the DataNode's write segments (" + HrdmaDataNodeKeys.WRITE_SHM_MAX_BYTES_KEY
          + " = " + maxBytes + " bytes) are in use");
    }
    NativeShm.Segment mem;
    try {
      mem = NativeShm.createSealed(size);
    } catch (NativeException | RuntimeException e) {
      bytesMapped.addAndGet(-size);
      charge(client, -size);
      LOG.warn("hrdma datanode: cannot make a write segment of {} bytes: {}", size, e.toString());
      throw new ShmGrants.Refused("the DataNode cannot make a write segment: " + e.getMessage());
    }
    segments.incrementAndGet();
    return new WriteShmSegment(mem, slotBytes, client, () -> {
      segments.decrementAndGet();
      bytesMapped.addAndGet(-size);
      charge(client, -size);
    });
  }

  private boolean charge(String client, long delta) {
    boolean[] ok = {true};
    byClient.compute(client, (k, v) -> {
      long now = (v == null ? 0 : v) + delta;
      if (delta > 0 && now > maxBytesPerClient) {
        ok[0] = false;
        return v;
      }
      return now == 0 ? null : now;
    });
    return ok[0];
  }

  void countReference() {
    byReference.incrementAndGet();
  }

  void countBadReference() {
    badReferences.incrementAndGet();
  }

  AtomicLong forwardedByReferenceCounter() {
    return forwardedByReference;
  }

  /** Packets forwarded downstream by reference. */
  long forwardedByReference() {
    return forwardedByReference.get();
  }

  void forwardMapped() {
    forwardSegments.incrementAndGet();
  }

  void forwardUnmapped() {
    forwardSegments.decrementAndGet();
  }

  /** Segments of downstream DataNodes this DataNode maps now, as a sender. */
  long forwardSegments() {
    return forwardSegments.get();
  }

  /** Write segments mapped now. */
  long segments() {
    return segments.get();
  }

  long bytesMapped() {
    return bytesMapped.get();
  }

  /** Grants whose descriptor is not fetched yet. */
  int pendingGrants() {
    return pending.size();
  }

  long granted() {
    return granted.get();
  }

  long refused() {
    return refused.get();
  }

  long fetched() {
    return fetched.get();
  }

  long mapTimeouts() {
    return mapTimeouts.get();
  }

  /** Write packets received by reference. */
  long packetsByReference() {
    return byReference.get();
  }

  /** References refused as malformed (each ended its connection). */
  long badReferences() {
    return badReferences.get();
  }
}
