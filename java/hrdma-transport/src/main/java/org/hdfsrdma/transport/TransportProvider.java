package org.hdfsrdma.transport;

/**
 * Creates a transport by name; found with {@link java.util.ServiceLoader}
 * (META-INF/services/org.hdfsrdma.transport.TransportProvider).
 */
public interface TransportProvider {
  /** "ucx", "stream", "tcp". */
  String name();

  /** Null when the transport can run here, else why not (e.g. the native library is missing). */
  String unavailabilityCause();

  Transport create(TransportConf conf) throws TransportException;
}
