package org.hdfsrdma.bench.fs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.concurrent.TimeUnit;

/** What the figures were measured on, and where results go. */
public final class Machine {
  private Machine() {}

  public static String describe() {
    return String.format("cores=%d memory=%s kernel=%s cpu=%s java=%s hadoop=%s", Runtime.getRuntime()
        .availableProcessors(), memTotal(), System.getProperty("os.version"), cpuModel(),
        System.getProperty("java.version"), org.apache.hadoop.util.VersionInfo.getVersion());
  }

  private static String memTotal() {
    return grep("/proc/meminfo", "MemTotal:").replaceAll("\\s+", " ");
  }

  private static String cpuModel() {
    return "\"" + grep("/proc/cpuinfo", "model name") + "\"";
  }

  private static String grep(String file, String prefix) {
    try {
      for (String l : Files.readAllLines(Path.of(file))) {
        if (l.startsWith(prefix)) {
          return l.substring(l.indexOf(':') + 1).trim();
        }
      }
    } catch (IOException e) {
      // fall through
    }
    return "unknown";
  }

  /** ROOT/results/DATE-COMMIT, ROOT from hrdma.root (bin/hrdma sets it), else the working directory. */
  public static Path defaultResultsDir(LocalDateTime when) {
    Path root = Path.of(System.getProperty(LocalCluster.ROOT_PROPERTY, ".")).toAbsolutePath().normalize();
    return root.resolve("results").resolve(when.format(DateTimeFormatter.ISO_LOCAL_DATE) + "-" + commit(root));
  }

  public static String commit(Path root) {
    try {
      Process p = new ProcessBuilder("git", "-C", root.toString(), "rev-parse", "--short", "HEAD")
          .redirectErrorStream(true).start();
      String s = new String(p.getInputStream().readAllBytes()).trim();
      if (p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0 && s.matches("[0-9a-f]{4,40}")) {
        return s;
      }
    } catch (IOException e) {
      // no git
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return "nogit";
  }
}
