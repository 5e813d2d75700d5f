package org.hdfsrdma.datanode;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Checks a Unix domain socket's directories before binding, as stock's
 * DomainSocket does: every directory from the socket's parent up to the root
 * must be owned by root or this process's user, and none may be writable by
 * its group or by others unless it is sticky (/tmp): otherwise another user
 * could replace the socket with one of their own. Stateless; thread-safe.
 */
final class SocketPaths {
  private static final int STICKY = 01000;
  private static final int GROUP_OR_OTHER_WRITE = 0022;

  private SocketPaths() {}

  static void checkDirectories(Path socket) throws IOException {
    long me = new com.sun.security.auth.module.UnixSystem().getUid();
    Path parent = socket.toAbsolutePath().getParent();
    if (parent == null || !Files.isDirectory(parent)) {
      throw new IOException("the directory of " + socket + " does not exist");
    }
    for (Path d = parent.toRealPath(); d != null; d = d.getParent()) {
      int mode = (Integer) Files.getAttribute(d, "unix:mode");
      int uid = (Integer) Files.getAttribute(d, "unix:uid");
      if (uid != 0 && uid != me) {
        throw new IOException("unsafe socket path " + socket + ": " + d + " is owned by uid " + uid
            + ", neither root nor this user (uid " + me + ")");
      }
      if ((mode & GROUP_OR_OTHER_WRITE) != 0 && (mode & STICKY) == 0) {
        throw new IOException("unsafe socket path " + socket + ": " + d + " (mode "
            + Integer.toOctalString(mode & 07777) + ") is writable by others and not sticky");
      }
    }
  }

  /** Whether a process accepts connections on the socket at {@code p} (then it is not stale). */
  static boolean listening(Path p) {
    try (java.nio.channels.SocketChannel ch = java.nio.channels.SocketChannel.open(
        java.net.UnixDomainSocketAddress.of(p))) {
      return true;
    } catch (IOException e) {
      return false; // ECONNREFUSED: nobody listens
    }
  }

  /** "socket", "file", "directory", "other" for {@code p} itself (a link is "other"). */
  static String type(Path p) throws IOException {
    int mode = (Integer) Files.getAttribute(p, "unix:mode", java.nio.file.LinkOption.NOFOLLOW_LINKS);
    return switch (mode & 0170000) {
      case 0140000 -> "socket";
      case 0100000 -> "file";
      case 0040000 -> "directory";
      default -> "other";
    };
  }
}
