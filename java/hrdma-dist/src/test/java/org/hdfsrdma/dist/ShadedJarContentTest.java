package org.hdfsrdma.dist;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** What is (and is not) inside hrdma-hadoop-plugin-<version>.jar. */
class ShadedJarContentTest {
  private static final String SHADED = "org/hdfsrdma/shaded/";
  private static JarFile jar;
  private static List<String> names;

  @BeforeAll
  static void open() throws IOException {
    jar = new JarFile(DistPaths.shadedJar().toFile());
    names = jar.stream().map(JarEntry::getName).collect(Collectors.toList());
  }

  @AfterAll
  static void close() throws IOException {
    jar.close();
  }

  private static List<String> matching(String prefix) {
    return names.stream().filter(n -> n.startsWith(prefix)).collect(Collectors.toList());
  }

  /** Our generated messages run on Hadoop's shaded protobuf; the jar carries no protobuf runtime. */
  @Test
  void ourMessagesUseHadoopsProtobuf() throws IOException {
    assertEquals(List.of(), matching(SHADED + "com/google/protobuf/"));
    assertEquals(List.of(), matching("org/apache/hadoop/thirdparty/"));
    String hello = new String(readBytes("org/hdfsrdma/proto/HrdmaProtos$Hello.class"), StandardCharsets.ISO_8859_1);
    assertTrue(hello.contains("org/apache/hadoop/thirdparty/protobuf/GeneratedMessageV3"),
        "HrdmaProtos.Hello does not extend Hadoop's shaded GeneratedMessageV3");
  }

  @Test
  void noUnrelocatedNettyOrProtobufAndNoHadoop() {
    assertEquals(List.of(), matching("io/netty/"));
    assertEquals(List.of(), matching("com/google/protobuf/"));
    // none of Hadoop's classes; the three classes of ours in Hadoop's package (they reach
    // package-private members of DFSInputStream, DFSOutputStream, DataStreamer and DFSClient,
    // so they cannot be relocated) and their folders
    assertEquals(List.of("org/apache/hadoop/", "org/apache/hadoop/hdfs/",
        "org/apache/hadoop/hdfs/HrdmaInputStreamBase.class", "org/apache/hadoop/hdfs/HrdmaOutputStreamBase.class",
        "org/apache/hadoop/hdfs/HrdmaStreamerView.class"),
        matching("org/apache/hadoop/").stream().sorted().collect(Collectors.toList()));
    assertEquals(List.of(), matching("org/slf4j/"));
    assertEquals(List.of(), matching("META-INF/native/libnetty"));
    assertEquals(List.of(), matching("META-INF/io.netty"));
    assertFalse(names.contains("module-info.class"));
  }

  @Test
  void ourClassesAndTheRelocatedLibraries() {
    for (String c : List.of(
        "org/hdfsrdma/client/RdmaDistributedFileSystem.class",
        "org/hdfsrdma/datanode/RdmaDataNodePlugin.class",
        "org/hdfsrdma/transport/Transports.class",
        "org/hdfsrdma/transport/tcp/TcpTransport.class",
        "org/hdfsrdma/transport/ucx/UcxTransportProvider.class",
        "org/hdfsrdma/nativelib/linux-x86_64/libhrdma.so",
        "org/hdfsrdma/nativelib/linux-x86_64/libhrdma-preload.so",
        SHADED + "io/netty/channel/MultiThreadIoEventLoopGroup.class",
        SHADED + "io/netty/channel/epoll/EpollIoHandler.class",
        // Netty's NativeLibraryLoader: lib + mangled package prefix + name
        "META-INF/native/liborg_hdfsrdma_shaded_netty_transport_native_epoll_x86_64.so",
        "META-INF/org.hdfsrdma.shaded.io.netty.versions.properties")) {
      assertTrue(names.contains(c), c + " missing from the jar");
    }
    for (String pkg : List.of("proto", "protocol", "nativelib", "transport", "datanode", "client")) {
      assertTrue(names.stream().anyMatch(n -> n.startsWith("org/hdfsrdma/" + pkg + "/") && n.endsWith(".class")),
          "no classes in org.hdfsrdma." + pkg);
    }
  }

  /**
   * Of Netty, only the modules the tcp transport uses: none of netty-all's codecs, none of its other
   * transports (io_uring, kqueue, QUIC) and one native library, epoll's for this platform.
   */
  @Test
  void onlyTheNettyModulesTheTcpTransportUses() {
    for (String unused : List.of("handler/codec/quic/", "handler/codec/http/", "handler/codec/http2/",
        "handler/codec/compression/", "handler/codec/dns/", "channel/uring/", "channel/kqueue/",
        "resolver/dns/")) {
      assertEquals(List.of(), matching(SHADED + "io/netty/" + unused), unused);
    }
    assertEquals(List.of("META-INF/native/liborg_hdfsrdma_shaded_netty_transport_native_epoll_x86_64.so"),
        matching("META-INF/native/").stream().filter(n -> !n.endsWith("/")).collect(Collectors.toList()));
  }

  @Test
  void serviceFilesAreMergedAndRelocated() throws IOException {
    String providers = read("META-INF/services/org.hdfsrdma.transport.TransportProvider");
    List<String> lines = Arrays.stream(providers.split("\n")).map(String::trim)
        .filter(s -> !s.isEmpty() && !s.startsWith("#")).collect(Collectors.toList());
    assertTrue(lines.containsAll(List.of(
        "org.hdfsrdma.transport.ucx.UcxTransportProvider",
        "org.hdfsrdma.transport.ucx.StreamTransportProvider",
        "org.hdfsrdma.transport.tcp.TcpTransportProvider")), providers);
    for (String n : matching("META-INF/services/")) {
      String file = n.substring("META-INF/services/".length());
      assertFalse(file.startsWith("io.netty.") || file.startsWith("com.google.protobuf."), n);
      for (String line : read(n).split("\n")) {
        String s = line.trim();
        assertFalse(s.startsWith("io.netty.") || s.startsWith("com.google.protobuf."), n + ": " + s);
      }
    }
  }

  /**
   * No class in the jar still points at io/netty or com/google/protobuf (its constant pool): Netty is
   * ours, relocated; protobuf is Hadoop's shaded one, so the original name does not occur at all.
   */
  @Test
  void bytecodeReferencesOnlyRelocatedNames() throws IOException {
    List<String> bad = new ArrayList<>();
    for (String n : names) {
      if (!n.endsWith(".class")) {
        continue;
      }
      String bytes = new String(readBytes(n), StandardCharsets.ISO_8859_1);
      for (String ref : List.of("io/netty/", "com/google/protobuf/")) {
        int i = bytes.indexOf(ref);
        while (i >= 0) {
          boolean relocated = i >= SHADED.length()
              && bytes.startsWith(SHADED, i - SHADED.length());
          if (!relocated) {
            bad.add(n + " -> " + ref);
            break;
          }
          i = bytes.indexOf(ref, i + 1);
        }
      }
    }
    assertEquals(List.of(), bad);
  }

  private static String read(String name) throws IOException {
    return new String(readBytes(name), StandardCharsets.UTF_8);
  }

  private static byte[] readBytes(String name) throws IOException {
    JarEntry e = jar.getJarEntry(name);
    assertNotNull(e, name);
    try (InputStream in = jar.getInputStream(e)) {
      return in.readAllBytes();
    }
  }
}
