package org.hdfsrdma.transport;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * Transport settings, {@code hrdma.<area>.<name>} keys with their defaults
 * side by side. Built from any string map (a Hadoop Configuration's entries,
 * system properties, command-line options). Immutable.
 */
public final class TransportConf {
  /** Ordered preference, e.g. "ucx,tcp": the first one both sides can use wins. */
  public static final String ORDER_KEY = HrdmaTransportKeys.TRANSPORT_ORDER_KEY;
  public static final String ORDER_DEFAULT = HrdmaTransportKeys.TRANSPORT_ORDER_DEFAULT;
  /** Messages a receiver can hold unreleased per endpoint (its credit window). */
  public static final String CREDITS_KEY = HrdmaTransportKeys.TRANSPORT_CREDITS_KEY;
  public static final int CREDITS_DEFAULT = HrdmaTransportKeys.TRANSPORT_CREDITS_DEFAULT;
  /** Largest message accepted from a peer; larger frames close the connection. */
  public static final String MAX_MESSAGE_KEY = HrdmaTransportKeys.TRANSPORT_MAX_MESSAGE_KEY;
  public static final int MAX_MESSAGE_DEFAULT = HrdmaTransportKeys.TRANSPORT_MAX_MESSAGE_DEFAULT;
  /** Whether sends carry their placement hints ({@link RegisteredBuffer#placeAligned}) to the peer. */
  public static final String PLACE_ALIGNED_KEY = HrdmaTransportKeys.TRANSPORT_PLACE_ALIGNED_KEY;
  public static final boolean PLACE_ALIGNED_DEFAULT = HrdmaTransportKeys.TRANSPORT_PLACE_ALIGNED_DEFAULT;
  public static final String CONNECT_TIMEOUT_KEY = HrdmaTransportKeys.TRANSPORT_CONNECT_TIMEOUT_KEY;
  public static final int CONNECT_TIMEOUT_DEFAULT = HrdmaTransportKeys.TRANSPORT_CONNECT_TIMEOUT_DEFAULT;
  public static final String HELLO_TIMEOUT_KEY = HrdmaTransportKeys.TRANSPORT_HELLO_TIMEOUT_KEY;
  public static final int HELLO_TIMEOUT_DEFAULT = HrdmaTransportKeys.TRANSPORT_HELLO_TIMEOUT_DEFAULT;
  /** Most accepted connections per transport still waiting for their HELLO ({@link PendingHellos}). */
  public static final String MAX_PENDING_HELLOS_KEY = HrdmaTransportKeys.TRANSPORT_MAX_PENDING_HELLOS_KEY;
  public static final int MAX_PENDING_HELLOS_DEFAULT = HrdmaTransportKeys.TRANSPORT_MAX_PENDING_HELLOS_DEFAULT;
  /**
   * A peer that has sent part of a message (a frame header, some of its bytes) and then
   * nothing for this long is closed: its partial message holds the receiver's memory.
   */
  public static final String READ_TIMEOUT_KEY = HrdmaTransportKeys.TRANSPORT_READ_TIMEOUT_KEY;
  public static final int READ_TIMEOUT_DEFAULT = HrdmaTransportKeys.TRANSPORT_READ_TIMEOUT_DEFAULT;
  /** UCX settings without the UCX_ prefix, "TLS=tcp;NET_DEVICES=lo". */
  public static final String UCX_CONFIG_KEY = HrdmaTransportKeys.UCX_CONFIG_KEY;
  public static final String UCX_CONFIG_DEFAULT = HrdmaTransportKeys.UCX_CONFIG_DEFAULT;
  /**
   * Busy-poll iterations of an idle UCX I/O thread before it sleeps on the
   * worker's fd. 0 (the default) sleeps at once: a DataNode or client shares
   * its cores with the rest of Hadoop, and spinning threads starved a 2-core
   * cluster (hrdma demo: writes 18.6 -> 51.7 MB/s, CPU a third, at 0). The
   * micro-benchmarks spin, as ucx_perftest does, for the lowest latency.
   */
  public static final String UCX_SPIN_KEY = HrdmaTransportKeys.UCX_SPIN_KEY;
  public static final int UCX_SPIN_DEFAULT = HrdmaTransportKeys.UCX_SPIN_DEFAULT;
  public static final String UCX_INIT_TIMEOUT_MS_KEY = HrdmaTransportKeys.UCX_INIT_TIMEOUT_MS_KEY;
  public static final int UCX_INIT_TIMEOUT_MS_DEFAULT = HrdmaTransportKeys.UCX_INIT_TIMEOUT_MS_DEFAULT;
  public static final String SLAB_SIZE_KEY = HrdmaTransportKeys.BUFFER_SLAB_BYTES_KEY;
  public static final int SLAB_SIZE_DEFAULT = HrdmaTransportKeys.BUFFER_SLAB_BYTES_DEFAULT;
  public static final String MAX_REGISTERED_KEY = HrdmaTransportKeys.BUFFER_MAX_REGISTERED_BYTES_KEY;
  public static final long MAX_REGISTERED_DEFAULT = HrdmaTransportKeys.BUFFER_MAX_REGISTERED_BYTES_DEFAULT;
  /**
   * What a peer's remote access (the memory keys UCX sends with a rendezvous active message)
   * may cover. "operation" (the default): no pool registration is passed with an active
   * message, and UCX's registration cache is off (RCACHE_ENABLE=n, IB_REG_METHODS=direct),
   * so UCX registers each rendezvous buffer for its operation alone and deregisters it when
   * the operation completes. "pool": the pool's slab registration is passed, whose key covers
   * the whole slab (other connections' buffers too) for the transport's life. See
   * docs/transport.md, "Remote access scope".
   */
  public static final String UCX_REMOTE_ACCESS_KEY = HrdmaTransportKeys.UCX_REMOTE_ACCESS_KEY;
  public static final String UCX_REMOTE_ACCESS_DEFAULT = HrdmaTransportKeys.UCX_REMOTE_ACCESS_DEFAULT;

  private final Map<String, String> values;

  private TransportConf(Map<String, String> values) {
    this.values = Collections.unmodifiableMap(new TreeMap<>(values));
  }

  public static TransportConf of(Map<String, String> values) {
    return new TransportConf(values);
  }

  public static TransportConf defaults() {
    return new TransportConf(Map.of());
  }

  public TransportConf with(String key, String value) {
    TreeMap<String, String> m = new TreeMap<>(values);
    m.put(key, value);
    return new TransportConf(m);
  }

  public String get(String key, String def) {
    return values.getOrDefault(key, def);
  }

  public int getInt(String key, int def) {
    String v = values.get(key);
    if (v == null) {
      return def;
    }
    try {
      return Integer.parseInt(v.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + " must be an integer, not '" + v + "'");
    }
  }

  public long getLong(String key, long def) {
    String v = values.get(key);
    if (v == null) {
      return def;
    }
    try {
      return Long.parseLong(v.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + " must be an integer, not '" + v + "'");
    }
  }

  public int getPositiveInt(String key, int def) {
    int v = getInt(key, def);
    if (v <= 0) {
      throw new IllegalArgumentException(key + " must be positive, not " + v);
    }
    return v;
  }

  /** The transport order, lower-cased, without blanks or repeats. */
  public List<String> order() {
    List<String> out = new ArrayList<>();
    for (String s : get(ORDER_KEY, ORDER_DEFAULT).split(",")) {
      String t = s.trim().toLowerCase(Locale.ROOT);
      if (!t.isEmpty() && !out.contains(t)) {
        out.add(t);
      }
    }
    if (out.isEmpty()) {
      throw new IllegalArgumentException(ORDER_KEY + " names no transport");
    }
    return out;
  }

  public Map<String, String> asMap() {
    return values;
  }
}
