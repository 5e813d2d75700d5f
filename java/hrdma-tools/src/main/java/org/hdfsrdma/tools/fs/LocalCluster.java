package org.hdfsrdma.tools.fs;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.hdfsrdma.client.RdmaDistributedFileSystem;
import org.hdfsrdma.cluster.ClusterException;
import org.hdfsrdma.cluster.ClusterManager;
import org.hdfsrdma.cluster.ClusterState;
import org.hdfsrdma.cluster.DaemonState;
import org.hdfsrdma.cluster.StartOptions;

/**
 * A NameNode and three DataNodes with the plugin (org.hdfsrdma.cluster.ClusterManager, one
 * JVM each) for the lifetime of this object. {@link #close()} stops them; so does a
 * shutdown hook (Ctrl-C, an uncaught error). A temporary directory is deleted at close.
 * Not thread-safe, except that close may race the hook (it runs once).
 */
public final class LocalCluster implements AutoCloseable {
  /** System property: the daemons' classpath (bin/hrdma sets it to hrdma-tools' jar and classpath.txt). */
  static final String CLASSPATH_PROPERTY = "hrdma.cluster.classpath";
  /** System property: the repository root, to find hrdma-tools' classpath when the above is unset. */
  public static final String ROOT_PROPERTY = "hrdma.root";
  static final int DATANODES = 3;

  private final ClusterManager manager;
  private final ClusterState state;
  private final Path dir;
  private final boolean deleteDir;
  private final PrintStream log;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Thread hook;
  /** --conf settings, also set in every client configuration. */
  private final Map<String, String> extraConf;

  private LocalCluster(ClusterManager manager, ClusterState state, Path dir, boolean deleteDir,
      Map<String, String> extraConf, PrintStream log) {
    this.extraConf = Map.copyOf(extraConf);
    this.manager = manager;
    this.state = state;
    this.dir = dir;
    this.deleteDir = deleteDir;
    this.log = log;
    this.hook = new Thread(this::stopQuietly, "hrdma-cluster-stop");
    Runtime.getRuntime().addShutdownHook(hook);
  }

  /** Starts a cluster in {@code dir} (null: a new temporary directory, deleted at close). */
  public static LocalCluster start(Path dir, Map<String, String> conf, PrintStream log)
      throws IOException, ClusterException, InterruptedException {
    return start(dir, DATANODES, conf, Map.of(), Map.of(), log);
  }

  /** As {@link #start(Path, Map, PrintStream)} with {@code dataNodes} DataNodes. */
  public static LocalCluster start(Path dir, int dataNodes, Map<String, String> conf, PrintStream log)
      throws IOException, ClusterException, InterruptedException {
    return start(dir, dataNodes, conf, Map.of(), Map.of(), log);
  }

  /**
   * Starts a NameNode and {@code dataNodes} DataNodes in {@code dir} (null: a temporary
   * directory, deleted at close); {@code hosts} and {@code launchPrefix} place daemons
   * elsewhere than 127.0.0.1 (see StartOptions), empty for the local cluster.
   */
  public static LocalCluster start(Path dir, int dataNodes, Map<String, String> conf, Map<String, String> hosts,
      Map<String, List<String>> launchPrefix, PrintStream log)
      throws IOException, ClusterException, InterruptedException {
    boolean temp = dir == null;
    Path d = temp ? Files.createTempDirectory("hrdma-demo-") : dir;
    try {
      ClusterManager m = new ClusterManager(d, log);
      StartOptions o = new StartOptions(dataNodes, null, null, 0, null, conf, StartOptions.DEFAULT_TIMEOUT_MS,
          daemonClasspath(), hosts, launchPrefix);
      ClusterState st = m.start(o);
      return new LocalCluster(m, st, d, temp, conf, log);
    } catch (IOException | ClusterException | InterruptedException | RuntimeException e) {
      if (temp) {
        deleteTree(d);
      }
      throw e;
    }
  }

  /** The daemons' classpath: {@value #CLASSPATH_PROPERTY}, else hrdma-tools' target/ under {@value #ROOT_PROPERTY}. */
  static String daemonClasspath() throws IOException {
    String cp = System.getProperty(CLASSPATH_PROPERTY);
    if (cp != null && !cp.isBlank()) {
      return cp;
    }
    String root = System.getProperty(ROOT_PROPERTY);
    if (root == null) {
      throw new IOException("no classpath for the cluster's daemons: set -D" + CLASSPATH_PROPERTY + " or -D"
          + ROOT_PROPERTY + " (bin/hrdma does)");
    }
    Path target = Path.of(root, "java", "hrdma-tools", "target");
    Path cpFile = target.resolve("classpath.txt");
    Path jar;
    try (Stream<Path> s = Files.list(target)) {
      jar = s.filter(p -> p.getFileName().toString().matches("hrdma-tools-.*[0-9T]\\.jar")).findFirst()
          .orElseThrow(() -> new IOException("no hrdma-tools jar in " + target + ": build first (bin/hrdma build)"));
    } catch (java.nio.file.NoSuchFileException e) {
      throw new IOException(target + " does not exist: build first (bin/hrdma build)");
    }
    return jar + java.io.File.pathSeparator + Files.readString(cpFile).trim();
  }

  public Path dir() {
    return dir;
  }

  public String fsDefaultFs() {
    return state.fsDefaultFs();
  }

  /** The DataNodes' pids, from cluster.properties. */
  public List<Long> dataNodePids() {
    return state.dataNodes().stream().map(DaemonState::pid).toList();
  }

  /** client-site.xml with {@code fs.hdfs.impl} our client ({@code ours}) or the stock one. */
  public Configuration clientConf(boolean ours) {
    return clientConf(dir.resolve("client-site.xml"), extraConf, ours);
  }

  /** The client settings in {@code site} and {@code extra}, {@code fs.hdfs.impl} ours or stock. */
  public static Configuration clientConf(Path site, Map<String, String> extra, boolean ours) {
    Configuration c = new Configuration();
    c.addResource(new org.apache.hadoop.fs.Path(site.toUri()));
    extra.forEach(c::set);
    c.set("fs.hdfs.impl", (ours ? RdmaDistributedFileSystem.class : DistributedFileSystem.class).getName());
    return c;
  }

  /** The first DataNode's per-volume disk scheduler figures (its JMX). */
  public List<org.hdfsrdma.datanode.disk.DiskStatus.Volume> dataNodeDiskStatus() throws IOException {
    DaemonState d = state.dataNodes().get(0);
    return org.hdfsrdma.datanode.disk.DiskStatus.fetch(org.hdfsrdma.cluster.ClusterConfig.HOST, d.httpPort(),
        d.xferPort(), 5000);
  }

  /** A new (uncached) client: ours or the stock DistributedFileSystem. */
  public FileSystem newClient(boolean ours) throws IOException {
    FileSystem fs = FileSystem.newInstance(URI.create(state.fsDefaultFs()), clientConf(ours));
    Class<?> want = ours ? RdmaDistributedFileSystem.class : DistributedFileSystem.class;
    if (fs.getClass() != want) {
      fs.close();
      throw new IOException("fs.hdfs.impl gave " + fs.getClass().getName() + ", not " + want.getName());
    }
    return fs;
  }

  @Override
  public void close() {
    stopQuietly();
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException e) {
      // shutting down: the hook runs (and finds the cluster stopped)
    }
  }

  private void stopQuietly() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    try {
      manager.stop(30_000);
    } catch (Exception e) {
      log.println("hrdma: stopping the cluster in " + dir + " failed: " + e.getMessage()
          + "; run 'bin/hrdma cluster stop --dir " + dir + "'");
      return;
    }
    if (deleteDir) {
      deleteTree(dir);
    }
  }

  public static void deleteTree(Path root) {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> s = Files.walk(root)) {
      s.sorted(Comparator.reverseOrder()).forEach(p -> {
        try {
          Files.deleteIfExists(p);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      });
    } catch (IOException | UncheckedIOException e) {
      System.err.println("hrdma: could not delete " + root + ": " + e.getMessage());
    }
  }
}
