package org.hdfsrdma.bench;

import java.io.File;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

/** The command line of a child JVM running a main of ours like this one: same java, classpath, -D/-X options. */
public final class ChildJvm {
  private ChildJvm() {}

  /** A child running the benchmarks' {@link Main}. */
  public static List<String> command(List<String> mainArgs) {
    return command(Main.class, mainArgs);
  }

  public static List<String> command(Class<?> main, List<String> mainArgs) {
    List<String> cmd = new ArrayList<>();
    cmd.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
    for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      // Memory and property settings carry over; debugger and agents do not (their ports).
      if ((a.startsWith("-D") || a.startsWith("-X")) && !a.startsWith("-Xdebug") && !a.startsWith("-Xrunjdwp")) {
        cmd.add(a);
      }
    }
    cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
    cmd.addAll(mainArgs);
    return cmd;
  }
}
