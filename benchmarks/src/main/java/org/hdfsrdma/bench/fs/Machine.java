package org.hdfsrdma.bench.fs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.concurrent.TimeUnit;
import org.hdfsrdma.tools.fs.LocalCluster;

/** What the figures were measured on, and where results go. */
public final class Machine {
  private Machine() {}

  public static String describe() {
    return String.format("cores=%d memory=%s disk=%s kernel=%s cpu=%s java=%s hadoop=%s %s", Runtime.getRuntime()
        .availableProcessors(), memTotal(), disk(), System.getProperty("os.version"), cpuModel(),
        System.getProperty("java.version"), org.apache.hadoop.util.VersionInfo.getVersion(),
        org.hdfsrdma.tools.Doctor.transportSummary());
  }

  /** The block device under the temporary directory (where the DataNodes keep blocks by default). */
  static String disk() {
    try {
      String dev = null;
      int best = -1;
      String tmp = Path.of(System.getProperty("java.io.tmpdir")).toRealPath().toString();
      for (String l : Files.readAllLines(Path.of("/proc/mounts"))) {
        String[] f = l.split(" ");
        if (f.length > 2 && f[0].startsWith("/dev/") && (tmp.equals(f[1]) || tmp.startsWith(f[1].equals("/") ? "/"
            : f[1] + "/")) && f[1].length() > best) {
          best = f[1].length();
          dev = f[0].substring(5) + "(" + f[2] + ")";
        }
      }
      if (dev == null) {
        return "unknown";
      }
      String name = dev.substring(0, dev.indexOf('('));
      Path block = Path.of("/sys/class/block", name);
      Path queue = Files.exists(block.resolve("queue")) ? block.resolve("queue") : block.resolve("../queue");
      String rot = Files.readString(queue.resolve("rotational")).trim();
      long sectors = Long.parseLong(Files.readString(block.resolve("size")).trim());
      return dev + ",rotational=" + rot + "," + (sectors * 512 >> 30) + "GiB";
    } catch (IOException | RuntimeException e) {
      return "unknown";
    }
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
