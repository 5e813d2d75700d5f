package org.hdfsrdma.transport;

import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;

/** Finds transport providers by name. */
public final class Transports {
  private Transports() {}

  public static List<TransportProvider> providers() {
    List<TransportProvider> out = new ArrayList<>();
    ServiceLoader.load(TransportProvider.class, Transports.class.getClassLoader()).forEach(out::add);
    return out;
  }

  public static TransportProvider provider(String name) {
    for (TransportProvider p : providers()) {
      if (p.name().equals(name)) {
        return p;
      }
    }
    throw new IllegalArgumentException("unknown transport '" + name + "' (known: "
        + providers().stream().map(TransportProvider::name).toList() + ")");
  }

  /** Creates the named transport, or fails saying why it cannot run here. */
  public static Transport create(String name, TransportConf conf) throws TransportException {
    TransportProvider p = provider(name);
    String cause = p.unavailabilityCause();
    if (cause != null) {
      throw new TransportException("transport " + name + " is unavailable: " + cause);
    }
    return p.create(conf);
  }
}
