package org.hdfsrdma.dist;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/** Where the build put the shaded jar and the stock Hadoop jars (see pom.xml). */
final class DistPaths {
  private DistPaths() {}

  static Path shadedJar() {
    return existing("hrdma.dist.jar");
  }

  static Path stockLib() {
    return existing("hrdma.dist.stocklib");
  }

  static Path probeDir() {
    return Paths.get(System.getProperty("hrdma.dist.probe", "target/probe-classes"));
  }

  private static Path existing(String property) {
    String v = System.getProperty(property);
    if (v == null) {
      throw new IllegalStateException(property + " is not set: run the tests through Maven (mvn package)");
    }
    Path p = Paths.get(v);
    if (!Files.exists(p)) {
      throw new IllegalStateException(p + " (" + property + ") does not exist");
    }
    return p;
  }
}
