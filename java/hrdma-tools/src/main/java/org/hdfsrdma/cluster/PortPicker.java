package org.hdfsrdma.cluster;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import java.util.function.IntPredicate;

/**
 * Picks distinct free ports for one cluster. A port is free when nothing is
 * reserved on it by this picker and it can be bound on the cluster's address
 * (127.0.0.1; a wildcard listener elsewhere on the port makes that bind fail too).
 *
 * <p>Ports are drawn from below the kernel's ephemeral range
 * (/proc/sys/net/ipv4/ip_local_port_range), so an outgoing connection of one of the
 * starting daemons cannot take a port between our check and the daemon's bind.
 * A DataNode needs two related ports: xfer and its plugin port, xfer + offset
 * (hrdma.datanode.port-offset); both must be free.
 */
public final class PortPicker {
  /** Lowest port handed out by default. */
  public static final int DEFAULT_LOW = 20000;

  private final int low;
  private final int high;
  private final IntPredicate isFree;
  private final Random random;
  private final Set<Integer> reserved = new HashSet<>();

  /** Picks in [low, high] (inclusive); {@code isFree} says whether a port can be bound. */
  public PortPicker(int low, int high, IntPredicate isFree, long seed) {
    if (low < 1 || high > 65535 || low > high) {
      throw new IllegalArgumentException("bad port range " + low + "-" + high);
    }
    this.low = low;
    this.high = high;
    this.isFree = isFree;
    this.random = new Random(seed);
  }

  /** The default picker: [20000, start of the ephemeral range), bind probes on {@code host}. */
  public static PortPicker forHost(String host) {
    int ephemeralLow = ephemeralRange()[0];
    int high = ephemeralLow - 1 > DEFAULT_LOW + 1000 ? ephemeralLow - 1 : 65535;
    return new PortPicker(DEFAULT_LOW, high, p -> canBind(host, p), System.nanoTime() ^ ProcessHandle.current().pid());
  }

  /** The kernel's ephemeral port range, or the Linux default when unreadable. */
  static int[] ephemeralRange() {
    try {
      String[] f = Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).trim().split("\\s+");
      return new int[] {Integer.parseInt(f[0]), Integer.parseInt(f[1])};
    } catch (IOException | RuntimeException e) {
      return new int[] {32768, 60999};
    }
  }

  /** True when a listener could bind {@code host:port} now (with SO_REUSEADDR, as the daemons do). */
  public static boolean canBind(String host, int port) {
    try (ServerSocket s = new ServerSocket()) {
      s.setReuseAddress(true);
      s.bind(new InetSocketAddress(InetAddress.getByName(host), port));
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  public int low() {
    return low;
  }

  public int high() {
    return high;
  }

  /** Reserves {@code port} if it is a port, not reserved yet and free; false otherwise. */
  public boolean tryReserve(int port) {
    if (port < 1 || port > 65535 || reserved.contains(port) || !isFree.test(port)) {
      return false;
    }
    reserved.add(port);
    return true;
  }

  /** Reserves {@code preferred} when that works (it is > 0 and free), else a newly picked port. */
  public int reuseOrPick(int preferred) throws IOException {
    return preferred > 0 && tryReserve(preferred) ? preferred : pick();
  }

  /** A free port from the range, reserved. */
  public int pick() throws IOException {
    int span = high - low + 1;
    int start = random.nextInt(span);
    for (int i = 0; i < span; i++) {
      int p = low + (start + i) % span;
      if (tryReserve(p)) {
        return p;
      }
    }
    throw new IOException("no free port in " + low + "-" + high);
  }

  /**
   * A DataNode's xfer port whose plugin port, xfer + {@code offset}, is free as well;
   * both reserved. {@code preferredXfer} (if > 0) is tried first. The plugin port
   * is kept inside the range when the offset allows.
   */
  public int pickXferWithPlugin(int offset, int preferredXfer) throws IOException {
    if (preferredXfer > 0 && tryPair(preferredXfer, offset, 1, 65535)) {
      return preferredXfer;
    }
    int span = high - low + 1;
    for (boolean strict : new boolean[] {true, false}) {
      int start = random.nextInt(span);
      for (int i = 0; i < span; i++) {
        int xfer = low + (start + i) % span;
        if (strict ? tryPair(xfer, offset, low, high) : tryPair(xfer, offset, 1024, 65535)) {
          return xfer;
        }
      }
    }
    throw new IOException("no free pair of ports (xfer, xfer + " + offset + ") in " + low + "-" + high
        + "; change hrdma.datanode.port-offset (--port-offset)");
  }

  private boolean tryPair(int xfer, int offset, int pluginLow, int pluginHigh) {
    long plugin = (long) xfer + offset;
    if (offset == 0 || plugin < pluginLow || plugin > pluginHigh || reserved.contains((int) plugin)) {
      return false;
    }
    if (!tryReserve(xfer)) {
      return false;
    }
    if (!tryReserve((int) plugin)) {
      reserved.remove(xfer);
      return false;
    }
    return true;
  }

  /** Every port reserved so far. */
  public Set<Integer> reserved() {
    return Set.copyOf(reserved);
  }
}
