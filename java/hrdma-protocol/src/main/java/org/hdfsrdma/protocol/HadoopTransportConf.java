package org.hdfsrdma.protocol;

import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.transport.TransportConf;

/** Transport settings from a Hadoop configuration: its {@code hrdma.*} entries. */
public final class HadoopTransportConf {
  private HadoopTransportConf() {}

  /** Stock's socket timeout (HdfsClientConfigKeys.DFS_CLIENT_SOCKET_TIMEOUT_KEY). */
  static final String SOCKET_TIMEOUT_KEY = "dfs.client.socket-timeout";

  /**
   * The {@code hrdma.*} entries of {@code conf}, with the hello wait
   * ({@value TransportConf#HELLO_TIMEOUT_KEY}) computed where it is unset or empty
   * ({@link #helloTimeoutMs}). Clients and DataNodes compute it alike, so that a client in a
   * DataNode's JVM asks for the same transport settings and shares its transports.
   */
  public static TransportConf of(Configuration conf) {
    Map<String, String> m = new HashMap<>();
    for (Map.Entry<String, String> e : conf.getPropsWithPrefix("hrdma.").entrySet()) {
      m.put("hrdma." + e.getKey(), e.getValue());
    }
    String hello = m.get(TransportConf.HELLO_TIMEOUT_KEY);
    if (hello == null || hello.trim().isEmpty()) {
      m.put(TransportConf.HELLO_TIMEOUT_KEY, String.valueOf(helloTimeoutMs(conf)));
    }
    return TransportConf.of(m);
  }

  /**
   * How long a DataNode's transports wait for a new connection's HELLO when
   * {@value TransportConf#HELLO_TIMEOUT_KEY} is unset or empty: dfs.client.socket-timeout, which
   * stock's DataXceiver waits for a connection's first op (a GC pause or a loaded host must not
   * send a client to the stock path), or {@value TransportConf#HELLO_TIMEOUT_DEFAULT} where that
   * is unset or 0 (stock's "no timeout": a connection that never says hello is still closed).
   */
  static int helloTimeoutMs(Configuration conf) {
    long ms = conf.getLong(SOCKET_TIMEOUT_KEY, TransportConf.HELLO_TIMEOUT_DEFAULT);
    return ms <= 0 ? TransportConf.HELLO_TIMEOUT_DEFAULT : (int) Math.min(ms, Integer.MAX_VALUE);
  }
}
