package org.hdfsrdma.bench;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Child processes of the comparison runs (ucx_perftest, iperf3). Every process
 * started here is killed when it is done with, and by a shutdown hook if this
 * JVM exits first. Output goes to a temporary file (no pipe to fill up).
 */
final class Procs {
  private Procs() {}

  private static final Set<Child> LIVE = ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(Child::close),
        "hrdma-kill-children"));
  }

  /** A started process and its output file. {@link #close()} kills it (idempotent). */
  static final class Child implements AutoCloseable {
    final String name;
    final Process process;
    final Path output;

    private Child(String name, Process process, Path output) {
      this.name = name;
      this.process = process;
      this.output = output;
    }

    String output() {
      try {
        return Files.readString(output, StandardCharsets.UTF_8);
      } catch (IOException e) {
        return "";
      }
    }

    /** Waits for exit; on timeout kills the process and fails. */
    int waitFor(long seconds) throws IOException, InterruptedException {
      if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
        close();
        throw new IOException(name + " did not finish in " + seconds + " s; output:\n"
            + tail(output(), 20));
      }
      return process.exitValue();
    }

    @Override
    public void close() {
      process.descendants().forEach(ProcessHandle::destroy);
      process.destroy();
      try {
        if (!process.waitFor(2, TimeUnit.SECONDS)) {
          process.descendants().forEach(ProcessHandle::destroyForcibly);
          process.destroyForcibly();
          process.waitFor(5, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
      }
      LIVE.remove(this);
      try {
        Files.deleteIfExists(output);
      } catch (IOException e) {
        // a leftover temp file is harmless
      }
    }
  }

  static Child start(String name, List<String> command, Map<String, String> env)
      throws IOException {
    Path out = Files.createTempFile("hrdma-" + name + "-", ".out");
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(out.toFile()).redirectInput(ProcessBuilder.Redirect.from(new File(
            "/dev/null")));
    pb.environment().putAll(env);
    Process p;
    try {
      p = pb.start();
    } catch (IOException e) {
      Files.deleteIfExists(out);
      throw new IOException("cannot run " + command.get(0) + ": " + e.getMessage()
          + " (bin/hrdma setup installs it)", e);
    }
    Child c = new Child(name, p, out);
    LIVE.add(c);
    return c;
  }

  /** A port nobody listens on now (the kernel's pick for an ephemeral bind). */
  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      return s.getLocalPort();
    }
  }

  /**
   * Waits until something listens on TCP {@code port}, looking in
   * /proc/net/tcp{,6} rather than connecting: a probe connection would count
   * as the peer for one-shot servers (ucx_perftest, iperf3 -1).
   */
  static void awaitListening(Child c, int port, long seconds)
      throws IOException, InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (!listening(port)) {
      if (!c.process.isAlive()) {
        throw new IOException(c.name + " exited with status " + c.process.exitValue()
            + " before listening; output:\n" + tail(c.output(), 20));
      }
      if (System.nanoTime() > deadline) {
        throw new IOException(c.name + " did not listen on port " + port + " in " + seconds
            + " s");
      }
      Thread.sleep(20);
    }
  }

  static boolean listening(int port) throws IOException {
    String hex = String.format(Locale.ROOT, ":%04X", port);
    for (String f : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
      Path p = Path.of(f);
      if (!Files.exists(p)) {
        continue;
      }
      for (String line : Files.readAllLines(p)) {
        String[] w = line.trim().split("\\s+");
        // sl local_address rem_address st ...; st 0A = LISTEN
        if (w.length > 3 && w[1].endsWith(hex) && w[3].equals("0A")) {
          return true;
        }
      }
    }
    return false;
  }

  static String tail(String s, int lines) {
    String[] ls = s.split("\n");
    int from = Math.max(0, ls.length - lines);
    return String.join("\n", java.util.Arrays.copyOfRange(ls, from, ls.length));
  }
}
