package org.hdfsrdma.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * hrdma.* keys an operator sets in a site file (loaded, as hdfs-site.xml is, as a Hadoop default
 * resource added before our classes load) are what the code reads, not our defaults. Runs in a
 * class loader of its own, so Hadoop's list of default resources starts empty as in a daemon.
 */
class HrdmaConfigurationTest {
  @Test
  void aSiteFileAddedBeforeOurClassesLoadKeepsItsValues() throws Exception {
    List<URL> urls = new ArrayList<>();
    for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
      urls.add(new File(e).toURI().toURL());
    }
    try (URLClassLoader cl = new URLClassLoader(urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader())) {
      Class<?> conf = Class.forName("org.apache.hadoop.conf.Configuration", true, cl);
      conf.getMethod("addDefaultResource", String.class).invoke(null, "hrdma-test-site.xml");
      // what a daemon loads of ours before it reads hrdma.* keys (no default resource may come with it)
      Class.forName(HadoopTransportConf.class.getName(), true, cl);
      Class.forName(HrdmaConfiguration.class.getName(), true, cl);
      Object c = conf.getConstructor().newInstance();
      assertEquals("direct", conf.getMethod("get", String.class).invoke(c, "hrdma.datanode.disk.write-mode.disk"));
      assertEquals("tcp", conf.getMethod("get", String.class).invoke(c, "hrdma.transport.order"));
    }
  }
}
