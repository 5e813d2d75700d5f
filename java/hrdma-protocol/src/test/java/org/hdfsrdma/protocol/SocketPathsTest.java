package org.hdfsrdma.protocol;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The short-circuit socket's path checks: directories others could write to (sticky ones
 * only where allowed), on the DataNode and the client; live sockets. The temporary
 * directory's own ancestors (/tmp) are trusted here, as stock's tests skip them.
 */
class SocketPathsTest {
  @TempDir
  Path dir;

  private void server(Path socket, boolean allowSticky) throws IOException {
    SocketPaths.check(socket, allowSticky, true, dir);
  }

  private void client(Path socket, boolean allowSticky) throws IOException {
    SocketPaths.check(socket, allowSticky, false, dir);
  }

  @Test
  void aDirectoryOthersMayWriteIsRefusedAndAStickyOneOnlyWhereAllowed() throws Exception {
    Path open = Files.createDirectory(dir.resolve("open"));
    Path s = open.resolve("s.sock");
    Files.setAttribute(open, "unix:mode", 0777);
    for (boolean allowSticky : new boolean[] {false, true}) {
      IOException e = assertThrows(IOException.class, () -> server(s, allowSticky));
      assertTrue(e.getMessage().contains("writable by others and not sticky"), e.getMessage());
      assertThrows(IOException.class, () -> client(s, allowSticky));
    }
    Files.setAttribute(open, "unix:mode", 01777);
    IOException e = assertThrows(IOException.class, () -> server(s, false));
    assertTrue(e.getMessage().contains(SocketPaths.ALLOW_STICKY_KEY), e.getMessage());
    assertThrows(IOException.class, () -> client(s, false));
    assertDoesNotThrow(() -> server(s, true));
    assertDoesNotThrow(() -> client(s, true));
    Files.setAttribute(open, "unix:mode", 0755);
    assertDoesNotThrow(() -> server(s, false));
    assertDoesNotThrow(() -> client(s, false));
    assertThrows(IOException.class, () -> server(dir.resolve("missing/s.sock"), true));
  }

  @Test
  void aGroupWritableDirectoryIsTheClientsOnlyWhenItsGroupIsRoot() throws Exception {
    Path g = Files.createDirectory(dir.resolve("group"));
    Path s = g.resolve("s.sock");
    Files.setAttribute(g, "unix:mode", 0775);
    Files.setAttribute(g, "unix:gid", 0);
    assertDoesNotThrow(() -> client(s, false), "root's group, as stock allows");
    assertThrows(IOException.class, () -> server(s, false), "the DataNode is stricter");
    Files.setAttribute(g, "unix:gid", 4242); // needs root, as the tests run here and in CI
    IOException e = assertThrows(IOException.class, () -> client(s, false));
    assertTrue(e.getMessage().contains("gid 4242"), e.getMessage());
  }

  @Test
  void stickyDirectoriesAreAcceptedWhenTheClusterAuthenticatesNothing() {
    Configuration conf = new Configuration(false);
    assertTrue(SocketPaths.stickyAllowedForServer(conf), "block tokens off");
    conf.setBoolean("dfs.block.access.token.enable", true);
    assertFalse(SocketPaths.stickyAllowedForServer(conf));
    conf.setBoolean(SocketPaths.ALLOW_STICKY_KEY, true);
    assertTrue(SocketPaths.stickyAllowedForServer(conf));
  }

  @Test
  void aSocketSomeoneListensOnIsNotStale() throws Exception {
    Path sock = dir.resolve("live.sock");
    try (ServerSocketChannel s = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      s.bind(UnixDomainSocketAddress.of(sock));
      assertEquals("socket", SocketPaths.type(sock));
      assertTrue(SocketPaths.listening(sock));
    }
    assertTrue(Files.exists(sock), "the file stays after its listener closed");
    assertFalse(SocketPaths.listening(sock), "stale: nobody listens");
    Path file = Files.createFile(dir.resolve("plain"));
    assertEquals("file", SocketPaths.type(file));
  }
}
