package org.hdfsrdma.client;

import java.util.concurrent.atomic.AtomicBoolean;
import org.hdfsrdma.nativelib.HrdmaNative;

/**
 * Loads libhrdma ({@link HrdmaNative}: extracted from the jar, with UCX's libraries) on a daemon
 * thread, once per JVM, so that the first stream that needs it (a UCX transport, a short-circuit
 * exchange) finds it loaded instead of loading it on its own critical path. The load holds
 * nothing to release (a JVM keeps a library it loaded); a stream that needs the library before
 * the load is done waits for it in the class's initialization, as it would have loaded it itself.
 * A failure is {@link HrdmaNative#unavailabilityCause()}'s, as without the warm-up.
 *
 * <p>Thread-safe.
 */
final class NativeWarmUp {
  /** The name of the thread that loads the library. */
  static final String THREAD = "hrdma-native-warm-up";
  private static final AtomicBoolean STARTED = new AtomicBoolean();

  private NativeWarmUp() {}

  /** Starts the load unless this JVM started it already; true when this call did. */
  static boolean start() {
    if (!STARTED.compareAndSet(false, true)) {
      return false;
    }
    Thread t = new Thread(() -> HrdmaNative.isAvailable(), THREAD);
    t.setDaemon(true);
    t.start();
    return true;
  }
}
