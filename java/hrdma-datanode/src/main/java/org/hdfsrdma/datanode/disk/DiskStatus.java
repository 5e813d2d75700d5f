package org.hdfsrdma.datanode.disk;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;

/**
 * A DataNode's per-volume disk figures as its web server's {@code /jmx}
 * shows the {@link DiskMetrics} bean (for {@code hrdma cluster status}).
 * metrics2 puts one volume per record; the attributes of record n > 0 end
 * in {@code .n}.
 */
public final class DiskStatus {
  private DiskStatus() {}

  /** One volume's line. Latencies in microseconds, throughput in bytes per second while busy. */
  public record Volume(String storageId, String policy, long queued, long inFlight, long requests,
      long latencyP50Us, long latencyP99Us, double busyBytesPerSec, double avgRunBytes, double extentsPerBlock,
      long depth, long depthRaises, long depthLowers, long fallbacks, long runs, long runBytes,
      long finalizedBlocks) {}

  /** The JMX bean name of the plugin of the DataNode with this xfer port. */
  public static String beanName(int xferPort) {
    return "Hadoop:service=DataNode,name=HrdmaDisk-" + xferPort;
  }

  /** Fetches http://host:httpPort/jmx for the bean and parses it; empty when the bean is not there. */
  public static List<Volume> fetch(String host, int httpPort, int xferPort, int timeoutMs) throws IOException {
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

  static List<Volume> parse(JsonNode root) {
    List<Volume> out = new ArrayList<>();
    JsonNode beans = root.path("beans");
    if (!beans.isArray() || beans.isEmpty()) {
      return out;
    }
    JsonNode b = beans.get(0);
    for (int n = 0; ; n++) {
      String sfx = n == 0 ? "" : "." + n;
      JsonNode id = b.get("tag.StorageId" + sfx);
      if (id == null) {
        return out;
      }
      out.add(new Volume(id.asText(), b.path("tag.Policy" + sfx).asText(), b.path("QueueDepth" + sfx).asLong(),
          b.path("InFlight" + sfx).asLong(), b.path("Requests" + sfx).asLong(),
          b.path("LatencyP50Us" + sfx).asLong(), b.path("LatencyP99Us" + sfx).asLong(),
          b.path("BusyThroughput" + sfx).asDouble(), b.path("AvgSequentialRunBytes" + sfx).asDouble(),
          b.path("ExtentsPerBlock" + sfx).asDouble(), b.path("Depth" + sfx).asLong(),
          b.path("DepthRaises" + sfx).asLong(), b.path("DepthLowers" + sfx).asLong(),
          b.path("Fallbacks" + sfx).asLong(), b.path("SequentialRuns" + sfx).asLong(),
          b.path("SequentialRunBytes" + sfx).asLong(), b.path("FinalizedBlocks" + sfx).asLong()));
    }
  }

  /** The column header {@link #format} lines go under. */
  public static String header() {
    return String.format("  %-40s %-10s %6s %6s %10s %8s %8s %10s %8s %7s %5s %9s %4s", "volume", "policy",
        "queue", "flight", "requests", "p50[us]", "p99[us]", "busy[MB/s]", "run[MB]", "ext/blk", "depth",
        "raise/low", "fall");
  }

  public static String format(Volume v) {
    return String.format("  %-40s %-10s %6d %6d %10d %8d %8d %10.1f %8.2f %7.2f %5d %4d/%-4d %4d", v.storageId(),
        v.policy(), v.queued(), v.inFlight(), v.requests(), v.latencyP50Us(), v.latencyP99Us(),
        v.busyBytesPerSec() / 1e6, v.avgRunBytes() / (1 << 20), v.extentsPerBlock(), v.depth(), v.depthRaises(),
        v.depthLowers(), v.fallbacks());
  }
}
