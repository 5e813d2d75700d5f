package org.hdfsrdma.bench.net;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;

/**
 * An emulated multi-host network on this machine: one network namespace per role
 * (NameNode, each DataNode, the client), each joined to a bridge by a veth link whose
 * two ends are shaped with tc (tbf) to one rate, so every byte between two roles
 * crosses two shaped links, as between two hosts on a switch.
 *
 * <pre>
 *   root namespace:  bridge hrd&lt;tag&gt;br 10.213.S.1/24 (no other ports: traffic stays here)
 *                    |-- hrd&lt;tag&gt;nn  ==veth==  hr0 10.213.S.2   in hrdma-&lt;tag&gt;-nn
 *                    |-- hrd&lt;tag&gt;cl  ==veth==  hr0 10.213.S.3   in hrdma-&lt;tag&gt;-cl
 *                    |-- hrd&lt;tag&gt;dnI ==veth==  hr0 10.213.S.(10+I) in hrdma-&lt;tag&gt;-dnI
 * </pre>
 *
 * The link inside every namespace is called {@value #IFACE}, so one UCX setting
 * ({@code NET_DEVICES=hr0}) fits every process. Everything is named with the project's
 * prefixes ({@value #NS_PREFIX}, {@value #LINK_PREFIX}+4 hex digits) so that
 * {@link #cleanupAll} can find what a killed run left. {@link #close()} (and a shutdown
 * hook, for Ctrl-C) kills what still runs in the namespaces and removes them with their
 * links. Needs root. Thread-safe: close runs once.
 */
public final class NetLab implements AutoCloseable {
  public static final String NS_PREFIX = "hrdma-";
  public static final String LINK_PREFIX = "hrd";
  public static final String IFACE = "hr0";
  /** Root-side links and bridges of any run: hrd + 4 hex digits of the tag + role. */
  static final Pattern OUR_LINK = Pattern.compile(LINK_PREFIX + "[0-9a-f]{4}[a-z0-9]*");
  static final Pattern TAG = Pattern.compile("[0-9a-f]{4}");

  private final String tag;
  private final int subnet;
  private final double gbit;
  private final List<String> roles;
  private final List<String> created = new ArrayList<>();
  private final PrintStream log;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Thread hook = new Thread(this::cleanup, "hrdma-netlab-cleanup");

  private NetLab(String tag, List<String> roles, double gbit, PrintStream log) {
    this.tag = tag;
    this.subnet = 16 + Integer.parseInt(tag, 16) % 224;
    this.roles = List.copyOf(roles);
    this.gbit = gbit;
    this.log = log;
  }

  /** A new random tag (4 hex digits). */
  public static String newTag() {
    return String.format(Locale.ROOT, "%04x", new java.util.Random().nextInt(1 << 16));
  }

  /**
   * Creates the namespaces of {@code roles} (e.g. nn, cl, dn1..dnN) and their links,
   * shaped to {@code gbit} Gbit/s (0: unshaped). On any failure everything created so
   * far is removed before the exception leaves.
   */
  public static NetLab create(String tag, List<String> roles, double gbit, PrintStream log) throws IOException {
    if (!TAG.matcher(tag).matches()) {
      throw new IllegalArgumentException("tag must be 4 hex digits, not '" + tag + "'");
    }
    checkRoot();
    NetLab lab = new NetLab(tag, roles, gbit, log);
    Runtime.getRuntime().addShutdownHook(lab.hook);
    try {
      lab.build();
      return lab;
    } catch (IOException | RuntimeException e) {
      lab.close();
      throw e;
    }
  }

  static void checkRoot() throws IOException {
    String uid = Sh.run(List.of("id", "-u")).trim();
    if (!uid.equals("0")) {
      throw new IOException("network namespaces need root (this runs as uid " + uid + "); run as root or "
          + "without --net");
    }
  }

  private void build() throws IOException {
    String br = bridge();
    String prefix = "10.213." + subnet + ".";
    for (String l : Sh.run(List.of("ip", "-4", "-o", "addr", "show")).split("\n")) {
      if (l.contains(" " + prefix)) {
        throw new IOException("subnet " + prefix + "0/24 is in use here (" + l.trim() + "); run again (a new "
            + "tag picks another), or 'hrdma bench netns cleanup' if a killed run left it");
      }
    }
    Sh.run(List.of("ip", "link", "add", br, "type", "bridge"));
    created.add("link:" + br);
    Sh.run(List.of("ip", "addr", "add", prefix + "1/24", "dev", br));
    Sh.run(List.of("ip", "link", "set", br, "up"));
    for (String role : roles) {
      String ns = namespace(role);
      String host = hostLink(role);
      Sh.run(List.of("ip", "netns", "add", ns));
      created.add("netns:" + ns);
      Sh.run(List.of("ip", "link", "add", host, "type", "veth", "peer", "name", IFACE, "netns", ns));
      created.add("link:" + host);
      Sh.run(List.of("ip", "link", "set", host, "master", br, "up"));
      Sh.run(List.of("ip", "-n", ns, "addr", "add", address(role) + "/24", "dev", IFACE));
      Sh.run(List.of("ip", "-n", ns, "link", "set", IFACE, "up"));
      Sh.run(List.of("ip", "-n", ns, "link", "set", "lo", "up"));
      if (gbit > 0) {
        Sh.run(tbf(List.of("tc"), host, gbit));
        Sh.run(tbf(List.of("tc", "-n", ns), IFACE, gbit));
      }
    }
    log.printf("netns: %d namespaces %s%s-*, bridge %s %s0/24, links %s%n", roles.size(), NS_PREFIX, tag, br,
        prefix, gbit > 0 ? "shaped to " + rateText(gbit) + " each way (tc tbf)" : "unshaped");
  }

  /** tbf at {@code gbit}: a burst of 1 ms at that rate (at least 64 KiB, one GSO segment). */
  static List<String> tbf(List<String> tc, String dev, double gbit) {
    long bitsPerSec = Math.round(gbit * 1e9);
    long burst = Math.max(64 * 1024, bitsPerSec / 8 / 1000);
    List<String> c = new ArrayList<>(tc);
    c.addAll(List.of("qdisc", "replace", "dev", dev, "root", "tbf", "rate", bitsPerSec + "bit", "burst",
        Long.toString(burst), "latency", "50ms"));
    return c;
  }

  public static String rateText(double gbit) {
    return gbit <= 0 ? "unshaped" : (gbit == Math.rint(gbit) ? Long.toString((long) gbit) : Double.toString(gbit))
        + " Gbit/s";
  }

  public String tag() {
    return tag;
  }

  public double gbit() {
    return gbit;
  }

  public String namespace(String role) {
    return NS_PREFIX + tag + "-" + role;
  }

  String bridge() {
    return LINK_PREFIX + tag + "br";
  }

  String hostLink(String role) {
    return LINK_PREFIX + tag + role;
  }

  /** The address of {@code role}: nn .2, cl .3, dnI .(10+I). */
  public String address(String role) {
    String p = "10.213." + subnet + ".";
    if (role.equals("nn")) {
      return p + "2";
    }
    if (role.equals("cl")) {
      return p + "3";
    }
    if (role.matches("dn\\d+")) {
      return p + (10 + Integer.parseInt(role.substring(2)));
    }
    return p + (100 + roles.indexOf(role));
  }

  /** The command prefix that runs a program in {@code role}'s namespace. */
  public List<String> prefix(String role) {
    return List.of("ip", "netns", "exec", namespace(role));
  }

  /** Addresses and command prefixes of the cluster's daemons (nn, dn1..dnN), for StartOptions. */
  public Map<String, String> hosts() {
    Map<String, String> m = new LinkedHashMap<>();
    for (String r : roles) {
      if (!r.equals("cl")) {
        m.put(r, address(r));
      }
    }
    return m;
  }

  public Map<String, List<String>> prefixes() {
    Map<String, List<String>> m = new LinkedHashMap<>();
    for (String r : roles) {
      if (!r.equals("cl")) {
        m.put(r, prefix(r));
      }
    }
    return m;
  }

  /** UCX over the namespace's link only: tcp (shared memory would bypass the shaped link). */
  public static Map<String, String> ucxConf() {
    return Map.of(org.hdfsrdma.transport.HrdmaTransportKeys.UCX_CONFIG_KEY, "TLS=tcp;NET_DEVICES=" + IFACE);
  }

  @Override
  public void close() {
    cleanup();
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException e) {
      // shutting down: the hook is running or ran
    }
  }

  private void cleanup() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    List<String> left = new ArrayList<>(created);
    java.util.Collections.reverse(left);
    for (String c : left) {
      if (c.startsWith("netns:")) {
        removeNamespace(c.substring(6));
      }
    }
    for (String c : left) {
      if (c.startsWith("link:")) {
        Sh.quiet(List.of("ip", "link", "del", c.substring(5)));
      }
    }
  }

  /** Kills what runs in {@code ns} (SIGTERM, 5 s, SIGKILL) and removes it. */
  static void removeNamespace(String ns) {
    List<ProcessHandle> procs = new ArrayList<>();
    for (String pid : Sh.quiet(List.of("ip", "netns", "pids", ns)).split("\\s+")) {
      if (pid.matches("\\d+")) {
        ProcessHandle.of(Long.parseLong(pid)).ifPresent(procs::add);
      }
    }
    procs.forEach(ProcessHandle::destroy);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    for (ProcessHandle h : procs) {
      while (h.isAlive() && System.nanoTime() < deadline) {
        try {
          Thread.sleep(50);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
      }
      h.destroyForcibly();
    }
    Sh.quiet(List.of("ip", "netns", "del", ns));
  }

  /** The namespaces of this project present now (any run), by name. */
  public static List<String> ourNamespaces() {
    List<String> out = new ArrayList<>();
    for (String l : Sh.quiet(List.of("ip", "netns", "list")).split("\n")) {
      String name = l.trim().split("\\s+")[0];
      if (name.startsWith(NS_PREFIX)) {
        out.add(name);
      }
    }
    return out;
  }

  /** The root-side links and bridges of this project present now (any run). */
  public static List<String> ourLinks() {
    List<String> out = new ArrayList<>();
    for (String l : Sh.quiet(List.of("ip", "-o", "link", "show")).split("\n")) {
      String[] f = l.split(":\\s+");
      if (f.length > 1) {
        String name = f[1].split("@")[0].trim();
        if (OUR_LINK.matcher(name).matches()) {
          out.add(name);
        }
      }
    }
    return out;
  }

  /**
   * Removes every namespace and link of this project whose name carries {@code tag}
   * (null: of any run), killing what still runs inside; returns what it removed.
   */
  public static List<String> cleanupAll(String tag) {
    List<String> removed = new ArrayList<>();
    for (String ns : ourNamespaces()) {
      if (tag == null || ns.startsWith(NS_PREFIX + tag + "-")) {
        removeNamespace(ns);
        removed.add("netns " + ns);
      }
    }
    for (String l : ourLinks()) {
      if (tag == null || l.startsWith(LINK_PREFIX + tag)) {
        Sh.quiet(List.of("ip", "link", "del", l));
        removed.add("link " + l);
      }
    }
    return removed;
  }

  /** Runs ip/tc. */
  static final class Sh {
    private Sh() {}

    /** Runs {@code cmd}; its output, or an IOException with the output when it fails. */
    static String run(List<String> cmd) throws IOException {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      try {
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
          p.destroyForcibly();
          throw new IOException(String.join(" ", cmd) + ": no answer in 30 s");
        }
      } catch (InterruptedException e) {
        p.destroyForcibly();
        Thread.currentThread().interrupt();
        throw new IOException(String.join(" ", cmd) + ": interrupted");
      }
      if (p.exitValue() != 0) {
        throw new IOException(String.join(" ", cmd) + " failed (exit " + p.exitValue() + "): " + out.trim());
      }
      return out;
    }

    /** Runs {@code cmd} ignoring failure (cleanup); its output, empty on failure. */
    static String quiet(List<String> cmd) {
      try {
        return run(cmd);
      } catch (IOException e) {
        return "";
      }
    }
  }
}
