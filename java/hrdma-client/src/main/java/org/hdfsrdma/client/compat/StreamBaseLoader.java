package org.hdfsrdma.client.compat;

import java.io.IOException;
import java.io.InputStream;
import java.lang.invoke.MethodHandles;
import org.apache.hadoop.hdfs.DFSClient;
import org.apache.hadoop.hdfs.DFSInputStream;
import org.apache.hadoop.hdfs.DFSOutputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Puts the client's stream bases ({@code org.apache.hadoop.hdfs.HrdmaInputStreamBase},
 * {@code HrdmaOutputStreamBase} and its {@code HrdmaStreamerView}) into the class loader that defined Hadoop's
 * {@link DFSInputStream}, before anything loads them.
 *
 * <p>The bases call package-private members of {@code DFSInputStream}, {@code DFSOutputStream}
 * and {@code DFSClient} (see their comments; the output base also overrides
 * {@code DFSOutputStream#abort}), which the JVM allows only to a class of the same runtime package: the
 * same package name <em>and</em> the same class loader. With the plugin jar on Hadoop's own
 * class path (a Hadoop installation's lib directory, Spark's {@code extraClassPath}) that holds
 * by itself. An application that adds the jar through a class loader of its own (Spark's
 * {@code spark.jars}, {@code --jars}, a plugin framework) loads the base in that child loader:
 * a different runtime package, and the first read failed with {@code IllegalAccessError}.
 * Here the base's class file, read from the plugin jar, is defined in {@code DFSInputStream}'s
 * package through {@link MethodHandles#privateLookupIn} and {@link MethodHandles.Lookup#defineClass}
 * (the JDK's supported way to add a class to a package). Child loaders delegate to their parent
 * first, so the input stream class then resolves its superclass to that one. The base refers to
 * Hadoop and JDK types only, so it links in the parent loader.
 *
 * <p>Where that cannot be (a child-first class loader, such as Spark's
 * {@code spark.driver.userClassPathFirst}, has loaded its own copy of the base) the file system
 * reads through the stock stream; the reason is logged once.
 *
 * <p>Thread-safe and idempotent: the first file system to initialize does it; a concurrent
 * definition of the same class by another thread counts as done.
 */
public final class StreamBaseLoader {
  private static final Logger LOG = LoggerFactory.getLogger(StreamBaseLoader.class);
  /** The input stream base's binary name; kept as a string so that nothing here loads the class first. */
  public static final String BASE = "org.apache.hadoop.hdfs.HrdmaInputStreamBase";
  /** The output stream base's binary name. */
  public static final String OUTPUT_BASE = "org.apache.hadoop.hdfs.HrdmaOutputStreamBase";
  /** The output base's DataStreamer view (a package-private superclass: it must be Hadoop's loader's too). */
  public static final String STREAMER_VIEW = "org.apache.hadoop.hdfs.HrdmaStreamerView";
  private static final String[] BASES = {BASE, OUTPUT_BASE, STREAMER_VIEW};

  /** null until decided; then whether the base is Hadoop's loader's. */
  private static volatile Boolean usable;

  private StreamBaseLoader() {}

  /**
   * Makes sure both bases, as {@code ours} (the plugin's class loader) resolves them, are defined
   * by {@link DFSInputStream}'s loader, and that its DFSClient can hold our streams' leases as
   * stock's ({@code DFSClient#beginFileLease}).
   *
   * @return whether they are: when not, our streams cannot be used in this JVM (logged once,
   *     with why and what to do)
   */
  public static boolean ensure(ClassLoader ours) {
    Boolean u = usable;
    if (u != null) {
      return u;
    }
    synchronized (StreamBaseLoader.class) {
      if (usable == null) {
        ClassLoader hadoop = DFSInputStream.class.getClassLoader();
        String why = null;
        try {
          DFSClient.class.getDeclaredMethod("beginFileLease", String.class, DFSOutputStream.class);
          for (String base : BASES) {
            if (find(hadoop, base) == null) {
              define(ours, base);
            }
            Class<?> seen = find(ours, base);
            if (seen == null || seen.getClassLoader() != hadoop) {
              why = base + " is defined by " + (seen == null ? "no class loader" : seen.getClassLoader())
                  + ", not by Hadoop's (" + hadoop + ")";
              break;
            }
          }
        } catch (IOException e) {
          why = e.getMessage();
        } catch (NoSuchMethodException e) {
          why = "this Hadoop's DFSClient has no beginFileLease(String, DFSOutputStream)";
        }
        if (why != null) {
          LOG.warn("hrdma client: files are read and written through the stock client in this JVM: {}. Put the"
              + " plugin jar on the class path of Hadoop's client, or in a parent-first class loader below it (a"
              + " child-first one, such as Spark's userClassPathFirst, loads its own copy)", why);
        }
        usable = why == null;
      }
      return usable;
    }
  }

  private static Class<?> find(ClassLoader loader, String base) {
    try {
      return Class.forName(base, false, loader);
    } catch (ClassNotFoundException e) {
      return null;
    }
  }

  private static void define(ClassLoader ours, String base) throws IOException {
    String resource = base.replace('.', '/') + ".class";
    byte[] bytes;
    try (InputStream in = ours.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IOException(resource + " is missing from the plugin jar");
      }
      bytes = in.readAllBytes();
    }
    try {
      MethodHandles.privateLookupIn(DFSInputStream.class, MethodHandles.lookup()).defineClass(bytes);
      LOG.info("hrdma client: {} defined in the class loader of Hadoop's DFSInputStream ({}): the plugin jar"
          + " was loaded by another one", base, DFSInputStream.class.getClassLoader());
    } catch (LinkageError e) {
      // another loader path defined it meanwhile (a duplicate definition): find() below decides
      LOG.debug("hrdma client: defining {}: {}", base, e.toString());
    } catch (IllegalAccessException | SecurityException e) {
      throw new IOException("cannot define " + base + " in Hadoop's package: " + e, e);
    }
  }
}
