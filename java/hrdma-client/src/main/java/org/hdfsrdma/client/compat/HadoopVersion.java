package org.hdfsrdma.client.compat;

import java.io.IOException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.util.VersionInfo;

/**
 * The Hadoop release the client runs on. The client is built against Hadoop 3.5.0's
 * hdfs-client classes (not all of them public APIs) and is tested with 3.5.0 only, so it
 * refuses other releases at initialize with a message that says what to use, instead of
 * failing later inside a read with a NoSuchMethodError. Stateless; thread-safe.
 */
public final class HadoopVersion {
  /** The release line the client supports: 3.5.x. */
  public static final String SUPPORTED = "3.5";
  private static final Pattern MAJOR_MINOR = Pattern.compile("^(\\d+)\\.(\\d+)(?:[.-].*)?$");

  private HadoopVersion() {}

  /** The running Hadoop's version (VersionInfo; "Unknown" when its version file is missing). */
  public static String running() {
    return VersionInfo.getVersion();
  }

  /**
   * Whether {@code version} is supported. A version the build did not record ("Unknown",
   * as repackaged jars may leave it) is let through: nothing shows it is another release.
   *
   * @throws IOException naming {@code version} and the supported line, when it is another
   */
  public static void check(String version) throws IOException {
    if (version == null || version.isBlank() || version.equalsIgnoreCase("Unknown")) {
      return;
    }
    Matcher m = MAJOR_MINOR.matcher(version.trim());
    if (m.matches() && (m.group(1) + "." + m.group(2)).equals(SUPPORTED)) {
      return;
    }
    throw new IOException("hrdma: this client needs Hadoop " + SUPPORTED + ".x client classes, but the classpath has "
        + "Hadoop " + version + " (org.apache.hadoop.util.VersionInfo); use a Hadoop " + SUPPORTED + " client "
        + "(e.g. PySpark 4.x, which bundles hadoop-client-api 3.5.0) or the stock client (unset fs.hdfs.impl)");
  }
}
