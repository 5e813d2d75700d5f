package org.hdfsrdma.protocol;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.hadoop.conf.Configuration;

/**
 * Checks of a short-circuit Unix domain socket's directories, on both sides,
 * against the one attack a local socket invites: another local user creating
 * the socket before the DataNode does (or while it is down), and handing
 * clients descriptors of files of their own. Stock's DataNode refuses to bind
 * in a directory that such a user could write (DomainSocket's path check,
 * world-writable directories included even when sticky, as /tmp is), so its
 * clients can trust whatever listens there.
 *
 * <p>Here: every directory from the socket's parent up to the root must be
 * writable by no one but its owner (group-writable only for root's group), and
 * on the DataNode be owned by root or the DataNode's user. A sticky directory
 * others may write to (/tmp, where the default path lies) is accepted only
 * when the cluster authenticates nothing anyway (block tokens off: any process
 * could also take a free xfer port then), or when the operator says so with
 * {@value #ALLOW_STICKY_KEY} (single-user hosts, tests). With block tokens on,
 * the client makes the same check before it connects, so a socket squatted in
 * /tmp gets no token and serves no reads. Stateless; thread-safe.
 */
public final class SocketPaths {
  public static final String ALLOW_STICKY_KEY = HrdmaProtocolKeys.DOMAIN_SOCKET_ALLOW_STICKY_DIRS_KEY;
  public static final boolean ALLOW_STICKY_DEFAULT = HrdmaProtocolKeys.DOMAIN_SOCKET_ALLOW_STICKY_DIRS_DEFAULT;
  private static final String TOKENS_KEY = "dfs.block.access.token.enable";

  private static final int STICKY = 01000;
  private static final int GROUP_WRITE = 0020;
  private static final int OTHER_WRITE = 0002;

  private SocketPaths() {}

  /** Whether a DataNode configured with {@code conf} may bind its socket in a sticky directory others write to. */
  public static boolean stickyAllowedForServer(Configuration conf) {
    return !conf.getBoolean(TOKENS_KEY, false) || conf.getBoolean(ALLOW_STICKY_KEY, ALLOW_STICKY_DEFAULT);
  }

  /**
   * The DataNode's check before it binds {@code socket}: each directory owned by root or this
   * process's user, writable by no one else (a sticky one by others only if {@code allowSticky}).
   *
   * @throws IOException naming the directory that fails and why
   */
  public static void checkForServer(Path socket, boolean allowSticky) throws IOException {
    check(socket, allowSticky, true, null);
  }

  /**
   * The client's check before it connects to {@code socket}: no directory writable by others
   * (a sticky one only if {@code allowSticky}), none by a group other than root's.
   *
   * @throws IOException naming the directory that fails and why
   */
  public static void checkForClient(Path socket, boolean allowSticky) throws IOException {
    check(socket, allowSticky, false, null);
  }

  /** As above; directories from {@code trusted} up are not checked (tests, whose temporary directories sit in /tmp). */
  static void check(Path socket, boolean allowSticky, boolean server, Path trusted) throws IOException {
    long me = new com.sun.security.auth.module.UnixSystem().getUid();
    Path parent = socket.toAbsolutePath().getParent();
    if (parent == null || !Files.isDirectory(parent)) {
      throw new IOException("the directory of " + socket + " does not exist");
    }
    Path stop = trusted == null ? null : trusted.toRealPath();
    for (Path d = parent.toRealPath(); d != null && !d.equals(stop); d = d.getParent()) {
      int mode = (Integer) Files.getAttribute(d, "unix:mode");
      int uid = (Integer) Files.getAttribute(d, "unix:uid");
      int gid = (Integer) Files.getAttribute(d, "unix:gid");
      if (server && uid != 0 && uid != me) {
        throw new IOException("unsafe socket path " + socket + ": " + d + " is owned by uid " + uid
            + ", neither root nor this user (uid " + me + ")");
      }
      boolean othersWrite = (mode & OTHER_WRITE) != 0 || ((mode & GROUP_WRITE) != 0 && (server || gid != 0));
      if (othersWrite && !(allowSticky && (mode & STICKY) != 0)) {
        throw new IOException("unsafe socket path " + socket + ": " + d + " (mode "
            + Integer.toOctalString(mode & 07777) + ", gid " + gid + ") is writable by others"
            + ((mode & STICKY) != 0 ? " (sticky directories are refused when block tokens are on; "
                + ALLOW_STICKY_KEY + " allows them)" : " and not sticky"));
      }
    }
  }

  /** Whether a process accepts connections on the socket at {@code p} (then it is not stale). */
  public static boolean listening(Path p) {
    try (java.nio.channels.SocketChannel ch = java.nio.channels.SocketChannel.open(
        java.net.UnixDomainSocketAddress.of(p))) {
      return true;
    } catch (IOException e) {
      return false; // ECONNREFUSED: nobody listens
    }
  }

  /** "socket", "file", "directory", "other" for {@code p} itself (a link is "other"). */
  public static String type(Path p) throws IOException {
    int mode = (Integer) Files.getAttribute(p, "unix:mode", java.nio.file.LinkOption.NOFOLLOW_LINKS);
    return switch (mode & 0170000) {
      case 0140000 -> "socket";
      case 0100000 -> "file";
      case 0040000 -> "directory";
      default -> "other";
    };
  }
}
