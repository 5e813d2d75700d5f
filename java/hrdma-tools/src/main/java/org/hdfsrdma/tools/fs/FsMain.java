package org.hdfsrdma.tools.fs;

/** Shared set-up of the fs commands. */
public final class FsMain {
  private FsMain() {}

  /** Hadoop's client logs at INFO through slf4j-simple; keep warnings only (unless set on the command line). */
  public static void quietLogging() {
    if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
      System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    }
  }
}
