package org.hdfsrdma.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ClusterConfigTest {
  private static Configuration read(Path file) {
    Configuration c = new Configuration(false);
    c.addResource(new org.apache.hadoop.fs.Path(file.toUri()));
    c.size(); // parse now
    return c;
  }

  private static ClusterState state(int n, String order, Map<String, String> extra) {
    List<DaemonState> dns = new java.util.ArrayList<>();
    for (int i = 1; i <= n; i++) {
      dns.add(DaemonState.dataNode(i, 20000 + 10 * i, 20001 + 10 * i, 20002 + 10 * i, 21000 + 10 * i));
    }
    return new ClusterState(ClusterState.STARTING, ClusterConfig.fsDefaultFs(20001), 1000, order, "-Xmx1g", extra,
        DaemonState.nameNode(20001, 20002), dns);
  }

  @Test
  void placedDaemonsBindAndAdvertiseTheirHosts(@TempDir Path dir) throws IOException {
    ClusterLayout layout = new ClusterLayout(dir);
    ClusterState local = state(2, "", Map.of());
    ClusterState placed = new ClusterState(local.phase(), ClusterConfig.fsDefaultFs("10.213.7.2", 20001),
        local.portOffset(), "", local.jvmOpts(), Map.of("hrdma.ucx.config", "TLS=tcp;NET_DEVICES=hr0"),
        local.nameNode(), local.dataNodes(), Map.of("nn", "10.213.7.2", "dn1", "10.213.7.11", "dn2", "10.213.7.12"));
    new ClusterConfig(layout, placed).writeAll();
    Configuration nn = read(layout.confDir("nn").resolve("hdfs-site.xml"));
    assertEquals("10.213.7.2:20001", nn.get("dfs.namenode.rpc-address"));
    assertEquals("10.213.7.2:20002", nn.get("dfs.namenode.http-address"));
    for (int i = 1; i <= 2; i++) {
      Configuration dn = read(layout.confDir("dn" + i).resolve("hdfs-site.xml"));
      assertEquals("10.213.7.1" + i + ":" + (20000 + 10 * i), dn.get("dfs.datanode.address"));
      assertEquals("10.213.7.1" + i + ":" + (20001 + 10 * i), dn.get("dfs.datanode.ipc.address"));
      assertEquals("10.213.7.1" + i, dn.get("dfs.datanode.hostname"));
      assertEquals("10.213.7.2:20001", dn.get("dfs.namenode.rpc-address"));
      assertEquals("TLS=tcp;NET_DEVICES=hr0", dn.get("hrdma.ucx.config"));
    }
    assertEquals("hdfs://10.213.7.2:20001", read(layout.clientSite()).get("fs.defaultFS"));
  }

  @Test
  void writesEveryDaemonsFilesParsableByHadoop(@TempDir Path dir) throws IOException {
    ClusterLayout layout = new ClusterLayout(dir);
    new ClusterConfig(layout, state(3, "ucx,tcp", Map.of())).writeAll();

    Configuration nnCore = read(layout.confDir("nn").resolve("core-site.xml"));
    assertEquals("hdfs://127.0.0.1:20001", nnCore.get("fs.defaultFS"));
    Configuration nn = read(layout.confDir("nn").resolve("hdfs-site.xml"));
    assertEquals(layout.nameDir().toUri().toString(), nn.get("dfs.namenode.name.dir"));
    assertEquals("127.0.0.1:20001", nn.get("dfs.namenode.rpc-address"));
    assertEquals("127.0.0.1:20002", nn.get("dfs.namenode.http-address"));
    assertEquals("3", nn.get("dfs.replication"));
    assertEquals("0", nn.get("dfs.namenode.safemode.extension"));
    assertNull(nn.get("dfs.datanode.plugins"));

    for (int i = 1; i <= 3; i++) {
      Configuration dn = read(layout.confDir("dn" + i).resolve("hdfs-site.xml"));
      assertEquals(ClusterConfig.PLUGIN_CLASS, dn.get("dfs.datanode.plugins"));
      assertEquals(layout.dataDir(i).toUri().toString(), dn.get("dfs.datanode.data.dir"));
      assertEquals("127.0.0.1:" + (20000 + 10 * i), dn.get("dfs.datanode.address"));
      assertEquals("127.0.0.1:" + (20001 + 10 * i), dn.get("dfs.datanode.ipc.address"));
      assertEquals("127.0.0.1:" + (20002 + 10 * i), dn.get("dfs.datanode.http.address"));
      assertEquals("127.0.0.1:20001", dn.get("dfs.namenode.rpc-address"));
      assertEquals("1000", dn.get("hrdma.datanode.port-offset"));
      assertEquals("ucx,tcp", dn.get("hrdma.transport.order"));
      assertTrue(Files.readString(layout.confDir("dn" + i).resolve("log4j.properties")).contains("rootLogger"));
    }

    Configuration client = read(layout.clientSite());
    assertEquals("hdfs://127.0.0.1:20001", client.get("fs.defaultFS"));
    assertEquals("org.hdfsrdma.client.RdmaDistributedFileSystem", client.get("fs.hdfs.impl"));
    assertEquals("3", client.get("dfs.replication"));
    assertEquals("1000", client.get("hrdma.datanode.port-offset"));
    assertEquals("ucx,tcp", client.get("hrdma.transport.order"));
    assertEquals(Files.readString(layout.clientSite()),
        Files.readString(layout.clientConfDir().resolve("core-site.xml")));
  }

  @Test
  void replicationFollowsDataNodeCountAndExtraConfOverrides(@TempDir Path dir) {
    ClusterLayout layout = new ClusterLayout(dir);
    ClusterConfig c = new ClusterConfig(layout, state(2, "", Map.of("dfs.blocksize", "1048576",
        "dfs.heartbeat.interval", "3")));
    assertEquals("2", c.clientSite().get("dfs.replication"));
    assertEquals("1048576", c.clientSite().get("dfs.blocksize"));
    assertEquals("3", c.dataNodeHdfsSite(1).get("dfs.heartbeat.interval"));
    assertEquals("3", c.nameNodeHdfsSite().get("dfs.heartbeat.interval"));
    assertFalse(c.clientSite().containsKey("hrdma.transport.order"));
    assertFalse(c.dataNodeHdfsSite(2).containsKey("hrdma.transport.order"));
  }

  @Test
  void clientSiteSelectsOurClientUnlessOverridden(@TempDir Path dir) {
    ClusterLayout layout = new ClusterLayout(dir);
    assertEquals("org.hdfsrdma.client.RdmaDistributedFileSystem",
        new ClusterConfig(layout, state(1, "", Map.of())).clientSite().get("fs.hdfs.impl"));
    String stock = "org.apache.hadoop.hdfs.DistributedFileSystem";
    ClusterConfig overridden = new ClusterConfig(layout, state(1, "", Map.of("fs.hdfs.impl", stock)));
    assertEquals(stock, overridden.clientSite().get("fs.hdfs.impl"));
    // the daemons never get it: they are stock Hadoop and may lack the client's classes
    assertNull(new ClusterConfig(layout, state(1, "", Map.of())).coreSite().get("fs.hdfs.impl"));
    assertNull(new ClusterConfig(layout, state(1, "", Map.of())).dataNodeHdfsSite(1).get("fs.hdfs.impl"));
  }

  @Test
  void storageTypesTagTheDataNodesVolumes(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
    ClusterLayout layout = new ClusterLayout(dir);
    ClusterState st = ClusterStateTest.sample();
    Map<String, String> conf = new java.util.TreeMap<>(st.extraConf());
    conf.put(ClusterConfig.STORAGE_TYPES_KEY, "SSD,DISK");
    st = new ClusterState(st.phase(), st.fsDefaultFs(), st.portOffset(), st.transportOrder(), st.jvmOpts(), conf,
        st.nameNode(), st.dataNodes());
    String dirs = new ClusterConfig(layout, st).dataNodeHdfsSite(1).get("dfs.datanode.data.dir");
    assertEquals("[SSD]" + layout.dataDir(1).resolve("ssd0").toUri() + ",[DISK]"
        + layout.dataDir(1).resolve("disk1").toUri(), dirs);
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> ClusterConfig.storageTypes("SSD,FLOPPY"));
  }

  @Test
  void xmlEscapesValues() {
    String xml = ClusterConfig.toXml(Map.of("k", "a<b&c>\"d"), "x -- y");
    assertTrue(xml.contains("<value>a&lt;b&amp;c&gt;&quot;d</value>"), xml);
    assertFalse(xml.contains("x -- y"), xml);
  }
}
