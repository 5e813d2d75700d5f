package org.hdfsrdma.transport;

import java.util.List;
import org.hdfsrdma.nativelib.HrdmaNative;

/**
 * What the transports hold in this process right now, over every transport
 * instance: endpoints not closed, pooled buffers not released, and the
 * native core's contexts, workers, endpoints and registered regions. All
 * zero once every transport is closed: test suites assert it at their end.
 */
public record ProcessResources(List<String> openEndpoints, long buffersOutstanding,
    HrdmaNative.ProcessStats nativeStats) {
  public static ProcessResources snapshot() {
    return new ProcessResources(AbstractEndpoint.openEndpoints(), BufferPool.processBuffersOutstanding(),
        HrdmaNative.processStats());
  }

  public boolean isEmpty() {
    return openEndpoints.isEmpty() && buffersOutstanding == 0 && nativeStats.isEmpty();
  }
}
