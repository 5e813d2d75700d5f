package org.hdfsrdma.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What the daemons run on: target/classpath.txt (build-classpath) and this module's classes. */
class ClasspathTest {
  static List<String> daemonClasspath() throws Exception {
    Path cp = Path.of("target", "classpath.txt");
    assertTrue(Files.exists(cp), cp + " is written in process-classes");
    return Arrays.asList(Files.readString(cp).trim().split(File.pathSeparator));
  }

  @Test
  void oneNettyAndItIs4218() throws Exception {
    List<String> netty = daemonClasspath().stream().filter(j -> j.contains("/io/netty/")).toList();
    assertTrue(netty.stream().anyMatch(j -> j.contains("netty-all")), "hadoop-hdfs's netty-all is there, managed");
    for (String j : netty) {
      assertTrue(j.contains("4.2.18.Final"), "not Netty 4.2.18: " + j);
    }
  }

  @Test
  void hadoopAndThePluginAreThere() throws Exception {
    List<String> cp = daemonClasspath();
    for (String a : List.of("hadoop-hdfs-3.5.0.jar", "hadoop-hdfs-client-3.5.0.jar", "hadoop-common-3.5.0.jar",
        "hrdma-datanode", "hrdma-transport", "hrdma-native", "slf4j-reload4j-2.0.13.jar")) {
      assertTrue(cp.stream().anyMatch(j -> j.contains(a)), a + " missing from " + cp);
    }
    assertEquals(0, cp.stream().filter(j -> j.contains("slf4j-simple")).count());
    // the client is the demo's, not the daemons'
    assertEquals(0, cp.stream().filter(j -> j.contains("hrdma-client")).count(), cp.toString());
  }

  @Test
  void hadoopWebappsAreOnTheClasspath() {
    // HttpServer2 looks these up; the hadoop-hdfs jar from Maven Central leaves them out
    for (String w : List.of("webapps/datanode", "webapps/hdfs", "webapps/static")) {
      assertNotNull(getClass().getClassLoader().getResource(w), w);
    }
  }
}
