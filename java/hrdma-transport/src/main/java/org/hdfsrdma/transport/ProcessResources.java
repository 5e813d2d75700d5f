package org.hdfsrdma.transport;

import java.util.List;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeShm;

/**
 * What the transports hold in this process right now, over every transport
 * instance: endpoints not closed, pooled buffers not released, and the
 * native core's contexts, workers, endpoints and registered regions, and
 * the shared-memory segments mapped for same-host reads. All
 * zero once every transport is closed: test suites assert it at their end.
 */
public record ProcessResources(List<String> openEndpoints, long buffersOutstanding,
    HrdmaNative.ProcessStats nativeStats, long sharedMemoryMapped) {
  public static ProcessResources snapshot() {
    return new ProcessResources(AbstractEndpoint.openEndpoints(), BufferPool.processBuffersOutstanding(),
        HrdmaNative.processStats(), NativeShm.mappedBytes());
  }

  /**
   * Waits up to {@code timeoutMs} until nothing is left and {@code alsoDone}
   * holds (a component's own check, described by {@code alsoWhat}); returns
   * null then, else what is still there.
   */
  public static String awaitNothingLeft(long timeoutMs, java.util.function.BooleanSupplier alsoDone,
      java.util.function.Supplier<String> alsoWhat) throws InterruptedException {
    long end = System.nanoTime() + timeoutMs * 1_000_000L;
    while (!(alsoDone.getAsBoolean() && snapshot().isEmpty())) {
      if (System.nanoTime() > end) {
        return alsoWhat.get() + ", " + snapshot();
      }
      Thread.sleep(50);
    }
    return null;
  }

  public boolean isEmpty() {
    return openEndpoints.isEmpty() && buffersOutstanding == 0 && nativeStats.isEmpty() && sharedMemoryMapped == 0;
  }
}
