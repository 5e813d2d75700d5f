package org.hdfsrdma.cluster;

import java.nio.file.Path;

/**
 * Where everything of one cluster lives under its directory:
 *
 * <pre>
 * DIR/cluster.properties    pids, ports, fs.defaultFS (see {@link ClusterState})
 * DIR/client-site.xml       what a client needs (also DIR/client-conf/core-site.xml)
 * DIR/conf/nn, conf/dnI     per-daemon core-site.xml, hdfs-site.xml, log4j.properties
 * DIR/nn                    the NameNode's name directory
 * DIR/dnI/data              DataNode I's data directory (I = 1..N)
 * DIR/logs/nn.log, dnI.log  each daemon's output
 * DIR/.lock                 held while a start or stop works on DIR
 * </pre>
 */
public record ClusterLayout(Path dir) {
  public ClusterLayout {
    dir = dir.toAbsolutePath().normalize();
  }

  public static final String NAMENODE = "nn";

  public static String dataNodeName(int i) {
    return "dn" + i;
  }

  public Path stateFile() {
    return dir.resolve("cluster.properties");
  }

  public Path lockFile() {
    return dir.resolve(".lock");
  }

  public Path clientSite() {
    return dir.resolve("client-site.xml");
  }

  /** A HADOOP_CONF_DIR for stock tools: core-site.xml with the client settings. */
  public Path clientConfDir() {
    return dir.resolve("client-conf");
  }

  public Path confDir(String daemon) {
    return dir.resolve("conf").resolve(daemon);
  }

  public Path nameDir() {
    return dir.resolve("nn");
  }

  /** Exists once the NameNode has been formatted. */
  public Path nameVersionFile() {
    return nameDir().resolve("current").resolve("VERSION");
  }

  public Path dataNodeDir(int i) {
    return dir.resolve(dataNodeName(i));
  }

  public Path dataDir(int i) {
    return dataNodeDir(i).resolve("data");
  }

  public Path logDir() {
    return dir.resolve("logs");
  }

  public Path log(String daemon) {
    return logDir().resolve(daemon + ".log");
  }

  public Path tmpDir() {
    return dir.resolve("tmp");
  }
}
