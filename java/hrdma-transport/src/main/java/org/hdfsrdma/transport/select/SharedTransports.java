package org.hdfsrdma.transport.select;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.hdfsrdma.transport.Transports;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Transports shared by the servers and connectors of one JVM that ask for the same
 * transport with the same transport settings: several DataNodes in one process (a
 * MiniDFSCluster) then run one UCX context, worker, progress thread and registered
 * buffer pool per transport, and one tcp event-loop group, instead of one each.
 *
 * <p>What is shared is the machinery only: every server keeps its own listeners (ports)
 * and handler (limits, tokens), and closes the endpoints it accepted when it closes
 * ({@link HrdmaServer}); a connector closes the endpoints it made. A transport is
 * closed with its last lease. Only the transport keys (those of HrdmaTransportKeys) decide
 * whether two asks share; the registered-memory cap ({@code hrdma.buffer.max-registered-bytes}) is
 * then one budget for all of them. Thread-safe.
 */
public final class SharedTransports {
  private static final Logger LOG = LoggerFactory.getLogger(SharedTransports.class);
  /** Every key of the transports' registry: what decides whether two asks share. */
  private static final java.util.Set<String> TRANSPORT_KEYS = transportKeys();

  private record Key(String name, Map<String, String> settings) {}

  private static final class Entry {
    final Transport transport;
    int leases;

    Entry(Transport transport) {
      this.transport = transport;
    }
  }

  private static final Map<Key, Entry> LIVE = new HashMap<>(); // guarded by SharedTransports.class
  private static long created;                                  // guarded by SharedTransports.class

  private SharedTransports() {}

  /** One holder's use of a shared transport; {@link #close()} gives it back (idempotent). */
  public static final class Lease implements AutoCloseable {
    private final Key key;
    private final Transport transport;
    private boolean released; // guarded by this

    private Lease(Key key, Transport transport) {
      this.key = key;
      this.transport = transport;
    }

    public Transport transport() {
      return transport;
    }

    @Override
    public void close() {
      synchronized (this) {
        if (released) {
          return;
        }
        released = true;
      }
      release(key);
    }
  }

  /**
   * A lease on the JVM's {@code name} transport for {@code conf}'s transport settings,
   * created now when none is open.
   *
   * @throws TransportException the transport cannot run here or failed to start
   */
  public static Lease acquire(String name, TransportConf conf) throws TransportException {
    Key key = new Key(name, transportSettings(conf));
    synchronized (SharedTransports.class) {
      Entry e = LIVE.get(key);
      if (e == null) {
        // created under the lock: two DataNodes starting together must not make two
        e = new Entry(Transports.create(name, conf));
        LIVE.put(key, e);
        created++;
      }
      e.leases++;
      return new Lease(key, e.transport);
    }
  }

  private static void release(Key key) {
    Transport last;
    synchronized (SharedTransports.class) {
      Entry e = LIVE.get(key);
      if (e == null || --e.leases > 0) {
        return;
      }
      LIVE.remove(key);
      last = e.transport;
    }
    try {
      last.close();
    } catch (RuntimeException ex) {
      LOG.warn("hrdma: closing the shared {} transport failed: {}", last.name(), ex.toString());
    }
  }

  /** The entries of {@code conf} that configure a transport (the share key). */
  static Map<String, String> transportSettings(TransportConf conf) {
    Map<String, String> m = new TreeMap<>();
    for (Map.Entry<String, String> e : conf.asMap().entrySet()) {
      if (TRANSPORT_KEYS.contains(e.getKey())) {
        m.put(e.getKey(), e.getValue());
      }
    }
    return m;
  }

  private static java.util.Set<String> transportKeys() {
    java.util.Set<String> keys = new java.util.HashSet<>();
    for (java.lang.reflect.Field f : org.hdfsrdma.transport.HrdmaTransportKeys.class.getFields()) {
      if (f.getName().endsWith("_KEY") && f.getType() == String.class
          && java.lang.reflect.Modifier.isStatic(f.getModifiers())) {
        try {
          keys.add((String) f.get(null));
        } catch (IllegalAccessException e) {
          throw new AssertionError(e);
        }
      }
    }
    return java.util.Set.copyOf(keys);
  }

  /** Shared transports open now, by name, with their lease counts (tests, status). */
  public static synchronized Map<String, Integer> open() {
    Map<String, Integer> out = new LinkedHashMap<>();
    LIVE.forEach((k, e) -> out.merge(k.name(), e.leases, Integer::sum));
    return out;
  }

  /** Shared transports open now. */
  public static synchronized int openCount() {
    return LIVE.size();
  }

  /** Shared transports created in this JVM so far (tests: that a second holder did not make one). */
  public static synchronized long createdCount() {
    return created;
  }
}
