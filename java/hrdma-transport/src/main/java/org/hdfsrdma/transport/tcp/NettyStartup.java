package org.hdfsrdma.transport.tcp;

import io.netty.util.internal.PlatformDependent;

/**
 * Settings for the Netty this project carries, made before any of its classes initialize.
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
 */
public final class NettyStartup {
  private static final String RELOCATED_PREFIX = "org.hdfsrdma.shaded.";
  /** Relocated with the rest of Netty in the plugin jar. */
  private static final String JFR_KEY = "io.netty.jfr.enabled";

  private NettyStartup() {}

  /** Whether this Netty is the plugin jar's own relocated copy. */
  static boolean relocated() {
    // a class literal, not a string: it names the class this jar actually carries
    return PlatformDependent.class.getName().startsWith(RELOCATED_PREFIX);
  }

  /**
   * Applies the defaults; call before the first use of Netty. {@code PlatformDependent.class}
   * is only referred to, not initialized, here.
   */
  public static void apply() {
    if (relocated() && System.getProperty(JFR_KEY) == null) {
      System.setProperty(JFR_KEY, "false");
    }
  }
}
