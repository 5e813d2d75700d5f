package org.hdfsrdma.datanode;

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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The short-circuit socket's path checks: directories others could write to, live sockets. */
class SocketPathsTest {
  @TempDir
  Path dir;

  @Test
  void aDirectoryOthersMayWriteIsRefusedUnlessSticky() throws Exception {
    Path open = Files.createDirectory(dir.resolve("open"));
    Files.setAttribute(open, "unix:mode", 0777);
    IOException e = assertThrows(IOException.class, () -> SocketPaths.checkDirectories(open.resolve("s.sock")));
    assertTrue(e.getMessage().contains("writable by others"), e.getMessage());
    Files.setAttribute(open, "unix:mode", 01777);
    assertDoesNotThrow(() -> SocketPaths.checkDirectories(open.resolve("s.sock")));
    Files.setAttribute(open, "unix:mode", 0755);
    assertDoesNotThrow(() -> SocketPaths.checkDirectories(open.resolve("s.sock")));
    assertThrows(IOException.class, () -> SocketPaths.checkDirectories(dir.resolve("missing/s.sock")));
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
