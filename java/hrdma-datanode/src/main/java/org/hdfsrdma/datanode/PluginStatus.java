package org.hdfsrdma.datanode;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.util.Map;
import java.util.TreeMap;

/**
 * A DataNode plugin's counters as its web server's {@code /jmx} shows the
 * {@link PluginMetrics} bean (for {@code hrdma cluster status}). Record 0 is the plugin's,
 * each later record ({@code .n} attributes) one transport's.
 */
public final class PluginStatus {
  private PluginStatus() {}

  /** One plugin's figures; {@code connectionsByTransport} in transport-name order. */
  public record Figures(long openConnections, long openWrites, long buffersOutstanding, long readsPreparedAhead,
      long readPacketsByReference, long sharedSegmentsGranted, long sharedSegmentsRefused, long sharedSegmentBytes,
      Map<String, Long> connectionsByTransport) {
    public Figures {
      connectionsByTransport = Map.copyOf(connectionsByTransport);
    }
  }

  /** The JMX bean name of the plugin of the DataNode with this xfer port. */
  public static String beanName(int xferPort) {
    return "Hadoop:service=DataNode,name=" + PluginMetrics.PREFIX + xferPort;
  }

  /** Fetches http://host:httpPort/jmx for the bean and parses it; null when the bean is not there. */
  public static Figures fetch(String host, int httpPort, int xferPort, int timeoutMs) throws IOException {
    URI u = URI.create("http://" + host + ":" + httpPort + "/jmx?qry=" + beanName(xferPort));
    HttpURLConnection c = (HttpURLConnection) u.toURL().openConnection();
    c.setConnectTimeout(timeoutMs);
    c.setReadTimeout(timeoutMs);
    try (InputStream in = c.getInputStream()) {
      return parse(new ObjectMapper().readTree(in));
    } finally {
      c.disconnect();
    }
  }

  static Figures parse(JsonNode root) {
    JsonNode beans = root.path("beans");
    if (!beans.isArray() || beans.isEmpty() || beans.get(0).get("OpenConnections") == null) {
      return null;
    }
    JsonNode b = beans.get(0);
    Map<String, Long> byTransport = new TreeMap<>();
    for (int n = 1; b.get("tag.Transport." + n) != null; n++) {
      byTransport.put(b.get("tag.Transport." + n).asText(), b.path("Connections." + n).asLong());
    }
    return new Figures(b.path("OpenConnections").asLong(), b.path("OpenWrites").asLong(),
        b.path("BuffersOutstanding").asLong(), b.path("ReadsPreparedAhead").asLong(),
        b.path("ReadPacketsByReference").asLong(), b.path("SharedSegmentsGranted").asLong(),
        b.path("SharedSegmentsRefused").asLong(), b.path("SharedSegmentBytes").asLong(), byTransport);
  }

  /** One line: connections (per transport), writes, buffers, reads by reference and prepared ahead, segments. */
  public static String format(Figures f) {
    StringBuilder t = new StringBuilder();
    for (Map.Entry<String, Long> e : new TreeMap<>(f.connectionsByTransport()).entrySet()) {
      t.append(t.length() == 0 ? " (" : ", ").append(e.getKey()).append(' ').append(e.getValue());
    }
    if (t.length() > 0) {
      t.append(')');
    }
    return String.format("  connections %d%s, writes %d, buffers out %d, packets by reference %d, "
        + "prepared ahead %d, segments %d granted / %d refused, %.1f MB mapped", f.openConnections(), t,
        f.openWrites(), f.buffersOutstanding(), f.readPacketsByReference(), f.readsPreparedAhead(),
        f.sharedSegmentsGranted(), f.sharedSegmentsRefused(), f.sharedSegmentBytes() / 1e6);
  }
}
