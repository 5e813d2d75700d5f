package org.hdfsrdma.transport.ucx;

import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.hdfsrdma.transport.TransportProvider;

/** Provides the {@code ucx} transport when libhrdma loads. */
public final class UcxTransportProvider implements TransportProvider {
  @Override
  public String name() {
    return "ucx";
  }

  @Override
  public String unavailabilityCause() {
    return cause();
  }

  static String cause() {
    Throwable t = HrdmaNative.unavailabilityCause();
    return t == null ? null : "native library: " + t.getMessage();
  }

  @Override
  public Transport create(TransportConf conf) throws TransportException {
    return new UcxTransport(conf);
  }
}
