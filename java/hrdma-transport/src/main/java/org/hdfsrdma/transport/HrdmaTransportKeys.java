package org.hdfsrdma.transport;

/**
 * The configuration keys of the transports (hrdma.transport.*, hrdma.ucx.*, hrdma.buffer.*, hrdma.tcp.*),
 * each {@code _KEY} beside its {@code _DEFAULT}. Every key is also in hrdma-default.xml
 * (hrdma-protocol's jar) with its default and a description, and docs/configuration.md is
 * generated from that file; ConfigurationRegistryTest fails when the three disagree or when
 * code uses an {@code "hrdma.*"} name not listed here. Adding a key: one constant pair here,
 * one {@code <property>} in hrdma-default.xml, then {@code make docs}.
 *
 * <p>Constants only; thread-safe.
 */
public final class HrdmaTransportKeys {
  private HrdmaTransportKeys() {}

  /** Transports tried in order per connection (ucx, stream, tcp); the first both sides can use wins. */
  public static final String TRANSPORT_ORDER_KEY = "hrdma.transport.order";
  public static final String TRANSPORT_ORDER_DEFAULT = "ucx,stream,tcp";
  /** Messages a receiver may hold unreleased per endpoint (its credit window). */
  public static final String TRANSPORT_CREDITS_KEY = "hrdma.transport.credits";
  public static final int TRANSPORT_CREDITS_DEFAULT = 64;
  /** Largest message accepted from a peer, in bytes; a larger frame closes the connection. */
  public static final String TRANSPORT_MAX_MESSAGE_KEY = "hrdma.transport.max-message-bytes";
  public static final int TRANSPORT_MAX_MESSAGE_DEFAULT = 16 << 20;
  /**
   * How long the connection itself may take to come up (the tcp connect, UCX's wire-up), per
   * transport tried; the peer's hello reply is then waited for {@link #TRANSPORT_HELLO_TIMEOUT_KEY}.
   */
  public static final String TRANSPORT_CONNECT_TIMEOUT_KEY = "hrdma.transport.connect-timeout-ms";
  public static final int TRANSPORT_CONNECT_TIMEOUT_DEFAULT = 5000;
  /**
   * How long the accepting side (a DataNode) waits for a new connection's HELLO before closing it,
   * and the connecting side (a client) for the HELLO reply once the connection is up (ms): as long
   * as stock's DataXceiver waits for a connection's first op and stock's client for a DataNode's
   * responses (dfs.client.socket-timeout), so that a slow but honest peer (a GC pause, a loaded
   * host) is served and a silent one closed.
   * Empty: dfs.client.socket-timeout (HadoopTransportConf computes it from a Hadoop configuration).
   */
  public static final String TRANSPORT_HELLO_TIMEOUT_KEY = "hrdma.transport.hello-timeout-ms";
  public static final int TRANSPORT_HELLO_TIMEOUT_DEFAULT = 60_000;
  /**
   * Most accepted connections per transport that have not said HELLO yet; past it the oldest is
   * closed (a silent peer may hold one for the whole hello timeout; an honest one says HELLO at
   * once, so closing the oldest keeps a flood of silent connections from locking it out).
   */
  public static final String TRANSPORT_MAX_PENDING_HELLOS_KEY = "hrdma.transport.max-pending-hellos";
  public static final int TRANSPORT_MAX_PENDING_HELLOS_DEFAULT = 256;
  /**
   * Whether this side asks its peers to place the data of the packets it sends at page-aligned
   * addresses (ucx, stream), so that DataNodes write it O_DIRECT without a copy. Received hints are
   * honoured either way.
   */
  public static final String TRANSPORT_PLACE_ALIGNED_KEY = "hrdma.transport.place-aligned";
  public static final boolean TRANSPORT_PLACE_ALIGNED_DEFAULT = true;
  /** A peer that sent part of a message and then nothing for this long is closed (ms). */
  public static final String TRANSPORT_READ_TIMEOUT_KEY = "hrdma.transport.read-timeout-ms";
  public static final int TRANSPORT_READ_TIMEOUT_DEFAULT = 60_000;
  /**
   * What a peer's remote access (UCX rendezvous memory keys) may cover: "operation" (each
   * rendezvous buffer registered for its operation alone) or "pool" (the whole slab).
   */
  public static final String UCX_REMOTE_ACCESS_KEY = "hrdma.ucx.remote-access";
  public static final String UCX_REMOTE_ACCESS_DEFAULT = "operation";
  /**
   * UCX settings without the UCX_ prefix, ';'-separated, e.g. TLS=sm,tcp;MM_ERROR_HANDLING=y here or
   * TLS=rc,ud,sm,self on InfiniBand/RoCE. Empty: UCX's own defaults.
   */
  public static final String UCX_CONFIG_KEY = "hrdma.ucx.config";
  public static final String UCX_CONFIG_DEFAULT = "";
  /**
   * Busy-poll iterations of an idle UCX I/O thread before it sleeps on its fd; 0 sleeps at once (less
   * CPU on a loaded node), the micro-benchmarks spin for latency.
   */
  public static final String UCX_SPIN_KEY = "hrdma.ucx.spin-count";
  public static final int UCX_SPIN_DEFAULT = 0;
  /**
   * Longest wait for UCX to create a context (it queries every network device); past it the
   * transport fails and the next in hrdma.transport.order is used (ms).
   */
  public static final String UCX_INIT_TIMEOUT_MS_KEY = "hrdma.ucx.init-timeout-ms";
  public static final int UCX_INIT_TIMEOUT_MS_DEFAULT = 60_000;
  /** Size of one slab of the registered-memory pool, in bytes. */
  public static final String BUFFER_SLAB_BYTES_KEY = "hrdma.buffer.slab-bytes";
  public static final int BUFFER_SLAB_BYTES_DEFAULT = 8 << 20;
  /** Cap on the bytes the registered-memory pool may register with the transports. */
  public static final String BUFFER_MAX_REGISTERED_BYTES_KEY = "hrdma.buffer.max-registered-bytes";
  public static final long BUFFER_MAX_REGISTERED_BYTES_DEFAULT = 2L << 30;
  /** I/O threads per tcp transport. Empty: two, or one on a single-core machine. */
  public static final String TCP_IO_THREADS_KEY = "hrdma.tcp.io-threads";
  public static final int TCP_IO_THREADS_DEFAULT = Math.min(2, Runtime.getRuntime().availableProcessors());
}
