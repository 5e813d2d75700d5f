package org.hdfsrdma.protocol;

import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.transport.TransportConf;

/** Transport settings from a Hadoop configuration: its {@code hrdma.*} entries. */
public final class HadoopTransportConf {
  private HadoopTransportConf() {}

  public static TransportConf of(Configuration conf) {
    Map<String, String> m = new HashMap<>();
    for (Map.Entry<String, String> e : conf.getPropsWithPrefix("hrdma.").entrySet()) {
      m.put("hrdma." + e.getKey(), e.getValue());
    }
    return TransportConf.of(m);
  }
}
