package org.hdfsrdma.transport.tcp;

/**
 * Settings for the Netty this project carries, made before any of its classes initialize.
 * Touches no Netty class itself: a JVM that never uses Netty (a client on ucx) loads none.
 *
 * <p>In the plugin jar Netty is relocated (under {@code org.hdfsrdma.shaded.}), and so are the
 * system properties it reads: a property set here by its plain name reaches only that copy
 * there, never the application's own Netty. Where Netty is not relocated (a build's class
 * path, where it is the application's too) nothing is set.
 *
 * <p>Netty 4.2 registers its JFR event classes as it first allocates; in a fresh JVM that took
 * about 0.25 s of CPU of a short command ({@code hadoop fs -put} of a small file) for events no
 * recording of the relocated copy is ever asked for. They are off unless the user set the
 * (relocated) property.
 *
 * <p>Called where Netty starts: {@link TcpTransport}'s class initialization (every tcp
 * transport, client or server), and by the other users of Netty before theirs.
 */
public final class NettyStartup {
  private static final String RELOCATED_PREFIX = "org.hdfsrdma.shaded.";
  /**
   * Netty's property. The shade plugin relocates string constants that name Netty's packages
   * as it relocates its classes: in the plugin jar this reads
   * {@code org.hdfsrdma.shaded.io.netty.jfr.enabled}, which is also how {@link #relocated}
   * tells (ShadedJarOnStockHadoopTest checks both).
   */
  private static final String JFR_KEY = "io.netty.jfr.enabled";

  private NettyStartup() {}

  /** Whether the Netty this class goes with is the plugin jar's own relocated copy. */
  static boolean relocated() {
    return JFR_KEY.startsWith(RELOCATED_PREFIX);
  }

  /** Applies the defaults; call before the first use of Netty. Cheap, idempotent, thread-safe. */
  public static void apply() {
    if (relocated() && System.getProperty(JFR_KEY) == null) {
      System.setProperty(JFR_KEY, "false");
    }
  }
}
