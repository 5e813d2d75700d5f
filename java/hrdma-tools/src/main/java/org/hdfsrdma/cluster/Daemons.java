package org.hdfsrdma.cluster;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.hdfsrdma.nativelib.UcxStartEnvironment;

/**
 * Starting, recognising and stopping the daemon JVMs.
 *
 * <p>Each daemon is {@code java <jvm opts> -Dhrdma.cluster=DIR/NAME ... -cp DIR/conf/NAME:<classpath>
 * MainClass}, started through {@code setsid} (when present) so it leaves the CLI's
 * session and survives the terminal, with stdin from /dev/null and stdout+stderr
 * appended to DIR/logs/NAME.log. The {@code -Dhrdma.cluster=} argument is how a pid
 * from cluster.properties is recognised as still ours (not a reused pid).
 */
final class Daemons {
  static final String MARKER_PROPERTY = "hrdma.cluster";
  private static final String SETSID = "/usr/bin/setsid";

  private Daemons() {}

  /** The argument that marks the JVM of daemon {@code name} of the cluster in {@code layout}. */
  static String marker(ClusterLayout layout, String name) {
    return "-D" + MARKER_PROPERTY + "=" + layout.dir().resolve(name);
  }

  /** JDK 17 module opens as Hadoop's own launch scripts add them for Java 17. */
  static final List<String> JDK17_OPENS = List.of(
      "--add-opens=java.base/java.lang=ALL-UNNAMED",
      "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
      "--add-opens=java.base/java.io=ALL-UNNAMED",
      "--add-opens=java.base/java.net=ALL-UNNAMED",
      "--add-opens=java.base/java.nio=ALL-UNNAMED",
      "--add-opens=java.base/java.util=ALL-UNNAMED",
      "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
      "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
      "--add-opens=java.base/sun.security.x509=ALL-UNNAMED");

  /**
   * The java command line of daemon {@code name} running {@code mainClass args} with the
   * configuration in DIR/conf/{@code confName}.
   */
  static List<String> command(ClusterLayout layout, String name, String confName, String mainClass,
      String classpath, String jvmOpts, String... args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    for (String o : jvmOpts.trim().split("\\s+")) {
      if (!o.isEmpty()) {
        cmd.add(o);
      }
    }
    cmd.addAll(JDK17_OPENS);
    cmd.add(marker(layout, name));
    cmd.add("-Dproc_" + (mainClass.endsWith(".NameNode") ? "namenode" : "datanode"));
    cmd.add("-Djava.net.preferIPv4Stack=true");
    cmd.add("-Dhadoop.log.dir=" + layout.logDir());
    cmd.add("-Dhadoop.log.file=" + name + ".log");
    cmd.add("-Dhadoop.root.logger=INFO,console");
    cmd.add("-Dlog4j.configuration=" + layout.confDir(confName).resolve("log4j.properties").toUri());
    cmd.add("-cp");
    cmd.add(layout.confDir(confName) + File.pathSeparator + classpath);
    cmd.add(mainClass);
    cmd.addAll(Arrays.asList(args));
    return cmd;
  }

  /** Starts {@code cmd} detached (setsid), output appended to {@code log}. */
  static Process launch(List<String> cmd, Path log, Path workDir, boolean detach) throws IOException {
    List<String> full = new ArrayList<>();
    if (detach && Files.isExecutable(Path.of(SETSID))) {
      full.add(SETSID);
    }
    full.addAll(cmd);
    Files.createDirectories(log.getParent());
    Files.writeString(log, "==== " + Instant.now() + " hrdma cluster: " + String.join(" ", full) + "\n",
        StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
    ProcessBuilder pb = new ProcessBuilder(full)
        .directory(workDir.toFile())
        .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
    // UCX's settings that libhrdma-preload would otherwise set while the JVM's threads run (a user's win)
    UcxStartEnvironment.VARIABLES.forEach(pb.environment()::putIfAbsent);
    return pb.start();
  }

  /** Process start time in epoch ms, 0 if unknown. */
  static long startMillis(ProcessHandle h) {
    return h.info().startInstant().map(Instant::toEpochMilli).orElse(0L);
  }

  /**
   * The live process of {@code d} if its pid still runs daemon {@code d} of this cluster:
   * its command line has our marker or, where the command line cannot be read, its
   * start time is the recorded one.
   */
  static Optional<ProcessHandle> find(ClusterLayout layout, DaemonState d) {
    if (d.pid() <= 0) {
      return Optional.empty();
    }
    return ProcessHandle.of(d.pid()).filter(Daemons::isLive).filter(h -> isOurs(h, layout, d));
  }

  /**
   * Alive and not a zombie. A daemon outlives the CLI that started it, so when it dies
   * its parent is whatever adopted it, and in a container that may never reap it:
   * ProcessHandle.isAlive() is true for such a zombie.
   */
  static boolean isLive(ProcessHandle h) {
    if (!h.isAlive()) {
      return false;
    }
    try {
      String stat = Files.readString(Path.of("/proc", Long.toString(h.pid()), "stat"), StandardCharsets.UTF_8);
      int close = stat.lastIndexOf(')');
      return close < 0 || close + 2 >= stat.length() || stat.charAt(close + 2) != 'Z';
    } catch (IOException | SecurityException e) {
      return h.isAlive();
    }
  }

  /**
   * The process's arguments from /proc/PID/cmdline. (ProcessHandle.Info.arguments() is
   * empty for command lines as long as a Hadoop classpath makes them.)
   */
  static Optional<List<String>> arguments(ProcessHandle h) {
    Path cmdline = Path.of("/proc", Long.toString(h.pid()), "cmdline");
    try {
      String all = new String(Files.readAllBytes(cmdline), StandardCharsets.UTF_8);
      if (!all.isEmpty()) {
        return Optional.of(Arrays.asList(all.split("\0")));
      }
    } catch (IOException | SecurityException e) {
      // not Linux, gone, or not ours to read: fall back
    }
    return h.info().arguments().filter(a -> a.length > 0).map(Arrays::asList);
  }

  private static boolean isOurs(ProcessHandle h, ClusterLayout layout, DaemonState d) {
    Optional<List<String>> args = arguments(h);
    if (args.isPresent()) {
      return args.get().contains(marker(layout, d.name()));
    }
    long start = startMillis(h);
    return start != 0 && start == d.startMillis();
  }

  /** Every live JVM carrying a marker of this cluster (whatever cluster.properties says). */
  static List<ProcessHandle> allOf(ClusterLayout layout) {
    String prefix = "-D" + MARKER_PROPERTY + "=" + layout.dir() + File.separator;
    return ProcessHandle.allProcesses()
        .filter(h -> h.pid() != ProcessHandle.current().pid())
        .filter(Daemons::isLive)
        .filter(h -> arguments(h).map(a -> a.stream().anyMatch(x -> x.startsWith(prefix))).orElse(false))
        .toList();
  }

  /**
   * SIGTERM to each process, then waits up to {@code timeoutMs} for all of them;
   * SIGKILL to those left, and waits for them to go. Returns the pids that needed SIGKILL.
   */
  static List<Long> stop(Collection<ProcessHandle> procs, long timeoutMs) {
    for (ProcessHandle h : procs) {
      h.destroy();
    }
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    List<Long> killed = new ArrayList<>();
    for (ProcessHandle h : procs) {
      long left = Math.max(0, deadline - System.nanoTime());
      if (!waitFor(h, TimeUnit.NANOSECONDS.toMillis(left))) {
        h.destroyForcibly();
        killed.add(h.pid());
      }
    }
    for (ProcessHandle h : procs) {
      waitFor(h, 10_000);
    }
    return killed;
  }

  /** Waits up to {@code ms} for {@code h} to end (or become a zombie); true when it did. */
  static boolean waitFor(ProcessHandle h, long ms) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
    while (isLive(h)) {
      if (System.nanoTime() >= deadline) {
        return false;
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return !isLive(h);
      }
    }
    return true;
  }

  /** The last {@code lines} lines of {@code log} (reads at most the last 64 KiB). */
  static String tail(Path log, int lines) {
    try (RandomAccessFile f = new RandomAccessFile(log.toFile(), "r")) {
      long len = f.length();
      long from = Math.max(0, len - 65536);
      byte[] b = new byte[(int) (len - from)];
      f.seek(from);
      f.readFully(b);
      String[] all = new String(b, StandardCharsets.UTF_8).split("\n");
      int start = Math.max(0, all.length - lines);
      return String.join("\n", Arrays.asList(all).subList(start, all.length));
    } catch (IOException e) {
      return "(cannot read " + log + ": " + e.getMessage() + ")";
    }
  }
}
