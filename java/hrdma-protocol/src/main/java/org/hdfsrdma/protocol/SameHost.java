package org.hdfsrdma.protocol;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What this process's host is, for same-host reads by reference
 * (SHM_REQUEST): the kernel's boot id and the process's network namespace.
 * Two processes with the same name share the machine's shared memory, and
 * one network stack; processes in different network namespaces (the
 * emulated hosts of a multi-host test) name themselves differently and read
 * over their network, as real hosts would.
 */
public final class SameHost {
  private static final String NAME = compute();

  private SameHost() {}

  /** This host's name, or "" when the kernel does not tell (then nothing is same-host). */
  public static String name() {
    return NAME;
  }

  /** Whether {@code a} is an address of this host (loopback or one of its interfaces). */
  public static boolean isLocal(InetSocketAddress a) {
    InetAddress ip = a == null ? null : a.getAddress();
    try {
      return ip != null && (ip.isLoopbackAddress() || ip.isAnyLocalAddress()
          || NetworkInterface.getByInetAddress(ip) != null);
    } catch (SocketException e) {
      return false;
    }
  }

  private static String compute() {
    try {
      String boot = Files.readString(Path.of("/proc/sys/kernel/random/boot_id"), StandardCharsets.US_ASCII).trim();
      String net = Files.readSymbolicLink(Path.of("/proc/self/ns/net")).toString();
      return boot.isEmpty() ? "" : boot + "/" + net;
    } catch (IOException | UnsupportedOperationException | SecurityException e) {
      return "";
    }
  }
}
