package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.InputStream;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSTestUtil;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.hdfsrdma.client.compat.StreamBaseLoader;
import org.hdfsrdma.transport.TransportConf;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The plugin jar loaded by a class loader of its own below Hadoop's, as Spark's {@code spark.jars}
 * loads it: our streams' bases must still share Hadoop's package at run time
 * ({@link StreamBaseLoader}), or the first read fails with IllegalAccessError (and a write's
 * lease would not be the DFSClient's).
 *
 * <p>The client runs in two fresh loaders built from this JVM's class path: a parent with
 * Hadoop and every other library but ours, and a child with the project's modules; the cluster
 * runs in the test's own loader. Everything the client is asked is asked by reflection (its
 * Hadoop classes are not the test's).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ChildLoaderReadTest {
  private MiniDFSCluster cluster;

  @BeforeAll
  void start() throws Exception {
    cluster = PluginCluster.start(PluginCluster.baseConf(), getClass(), 1);
  }

  @AfterAll
  void stop() throws Exception {
    PluginCluster.shutdown(null, cluster);
  }

  /** Whether a class path entry is one of the project's modules (their classes or jars). */
  private static boolean ours(String entry) {
    String e = entry.replace(File.separatorChar, '/');
    return e.contains("/org/hdfsrdma/") || e.matches(".*/hrdma-[a-z]+/target/(test-)?classes/?");
  }

  @Test
  void readsThroughOurStreamFromAChildLoader() throws Exception {
    byte[] data = PluginCluster.random(3 * PluginCluster.BLOCK + 777, 71);
    Path p = new Path("/child-loader/f");
    try (FSDataOutputStream out = cluster.getFileSystem().create(p, (short) 1)) {
      out.write(data);
    }
    DFSTestUtil.waitReplication(cluster.getFileSystem(), p, (short) 1);

    List<URL> parentPath = new ArrayList<>();
    List<URL> childPath = new ArrayList<>();
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (entry.isEmpty() || entry.replace(File.separatorChar, '/').endsWith("/test-classes")) {
        continue;
      }
      (ours(entry) ? childPath : parentPath).add(new File(entry).toURI().toURL());
    }
    assertFalse(childPath.isEmpty(), "no module of ours on the class path");
    Configuration base = cluster.getConfiguration(0);
    try (URLClassLoader parent = new URLClassLoader("hadoop", parentPath.toArray(URL[]::new),
            ClassLoader.getPlatformClassLoader());
        URLClassLoader child = new URLClassLoader("plugin", childPath.toArray(URL[]::new), parent)) {
      assertNull(find(parent, RdmaDistributedFileSystem.class.getName()), "the parent must not see our classes");
      // as an application's threads run (Spark's executors): Hadoop loads configured classes through it
      Thread.currentThread().setContextClassLoader(child);
      Class<?> confClass = parent.loadClass(Configuration.class.getName());
      Object conf = confClass.getConstructor().newInstance();
      for (String k : new String[] {"fs.defaultFS", "dfs.block.access.token.enable"}) {
        confClass.getMethod("set", String.class, String.class).invoke(conf, k, base.get(k));
      }
      confClass.getMethod("setClassLoader", ClassLoader.class).invoke(conf, child);
      set(confClass, conf, "fs.hdfs.impl", RdmaDistributedFileSystem.class.getName());
      set(confClass, conf, "fs.hdfs.impl.disable.cache", "true");
      // the JNI library is this JVM's test loader's already (a library loads in one loader only)
      set(confClass, conf, TransportConf.ORDER_KEY, "tcp");
      set(confClass, conf, RdmaBlockClient.LOCAL_READS_KEY, "false");

      Class<?> fsClass = parent.loadClass("org.apache.hadoop.fs.FileSystem");
      Object fs = fsClass.getMethod("get", URI.class, confClass).invoke(null, URI.create(base.get("fs.defaultFS")),
          conf);
      try {
        assertEquals(RdmaDistributedFileSystem.class.getName(), fs.getClass().getName());
        assertEquals(child, fs.getClass().getClassLoader());
        Class<?> base0 = Class.forName(StreamBaseLoader.BASE, false, child);
        assertEquals(parent, base0.getClassLoader(), "the stream base is Hadoop's loader's");

        Class<?> pathClass = parent.loadClass(Path.class.getName());
        Object path = pathClass.getConstructor(String.class).newInstance(p.toString());
        byte[] got;
        Object in = fsClass.getMethod("open", pathClass).invoke(fs, path);
        try {
          Object wrapped = in.getClass().getMethod("getWrappedStream").invoke(in);
          assertEquals("org.hdfsrdma.client.RdmaInputStream", wrapped.getClass().getName(),
              "the file is read by our stream");
          assertEquals("org.apache.hadoop.hdfs.client.HdfsDataInputStream", in.getClass().getName());
          got = ((InputStream) in).readAllBytes();
        } finally {
          ((java.io.Closeable) in).close();
        }
        assertArrayEquals(data, got, "content read from the child loader");
        long rdma = (long) fs.getClass().getMethod("rdmaBytesRead").invoke(fs);
        long stock = (long) fs.getClass().getMethod("stockBytesRead").invoke(fs);
        assertTrue(rdma >= data.length, "bytes over hrdma " + rdma);
        assertEquals(0, stock, "bytes through the stock path");

        // and written by our stream, whose base (DFSOutputStream's package, for the file's lease) is Hadoop's too
        Object written = pathClass.getConstructor(String.class).newInstance("/child-loader/written");
        Object out = fsClass.getMethod("create", pathClass).invoke(fs, written);
        try {
          Object wrapped = out.getClass().getMethod("getWrappedStream").invoke(out);
          assertEquals("org.hdfsrdma.client.RdmaOutputStream", wrapped.getClass().getName(),
              "the file is written by our stream");
          assertEquals(parent, Class.forName(StreamBaseLoader.OUTPUT_BASE, false, child).getClassLoader(),
              "the output stream base is Hadoop's loader's");
          assertEquals(parent, Class.forName(StreamBaseLoader.STREAMER_VIEW, false, child).getClassLoader(),
              "its streamer view (a DataStreamer, package-private) is Hadoop's loader's");
          ((java.io.OutputStream) out).write(data);
        } finally {
          ((java.io.Closeable) out).close();
        }
        assertArrayEquals(data, PluginCluster.readWhole(cluster.getFileSystem(), new Path("/child-loader/written")),
            "content written from the child loader");
        assertTrue((long) fs.getClass().getMethod("rdmaBytesWritten").invoke(fs) >= data.length,
            "bytes written over hrdma");
      } finally {
        ((java.io.Closeable) fs).close();
      }
    } finally {
      Thread.currentThread().setContextClassLoader(ChildLoaderReadTest.class.getClassLoader());
    }
  }

  private static void set(Class<?> confClass, Object conf, String k, String v) throws Exception {
    confClass.getMethod("set", String.class, String.class).invoke(conf, k, v);
  }

  private static Class<?> find(ClassLoader l, String name) {
    try {
      return Class.forName(name, false, l);
    } catch (ClassNotFoundException e) {
      return null;
    }
  }
}
