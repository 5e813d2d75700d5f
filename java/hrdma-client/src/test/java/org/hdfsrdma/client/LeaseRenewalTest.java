package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What stock's lease renewer gives a writer (TestDistributedFileSystem#testDFSClient checks
 * the DFSClient's own renewer thread, which our streams do not use): while a stream is open
 * its file stays under the client's lease past the NameNode's hard limit, so the writer goes
 * on and closes the file whole; the renewing ends with the last stream.
 */
@Timeout(180)
class LeaseRenewalTest {
  private MiniDFSCluster cluster;
  private RdmaDistributedFileSystem fs;

  @AfterEach
  void stop() throws IOException {
    PluginCluster.shutdown(fs, cluster);
  }

  @Test
  void anOpenStreamKeepsItsLeasePastTheHardLimit() throws Exception {
    Configuration conf = PluginCluster.baseConf();
    conf.setLong(DFSConfigKeys.DFS_NAMENODE_LEASE_RECHECK_INTERVAL_MS_KEY, 200);
    cluster = PluginCluster.start(conf, getClass(), 1);
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    c.setLong(RdmaDistributedFileSystem.LEASE_RENEW_KEY, 200);
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
    // soft 0.5 s, hard 1 s: an unrenewed lease is recovered (the file closed) within a second or two
    cluster.setLeasePeriod(500, 1000);
    Path p = new Path("/lease/open");
    byte[] a = PluginCluster.random(5000, 1);
    byte[] b = PluginCluster.random(7000, 2);
    long before;
    try (FSDataOutputStream out = fs.create(p, (short) 1)) {
      out.write(a);
      out.hflush();
      before = fs.leaseRenewals();
      Thread.sleep(5000); // five hard limits
      out.write(b);
    }
    assertEquals(a.length + b.length, cluster.getFileSystem().getFileStatus(p).getLen());
    assertTrue(fs.leaseRenewals() > before, "no lease renewal while the stream was open");
    byte[] all = new byte[a.length + b.length];
    try (FSDataInputStream in = fs.open(p)) {
      in.readFully(0, all);
    }
    byte[] want = new byte[all.length];
    System.arraycopy(a, 0, want, 0, a.length);
    System.arraycopy(b, 0, want, a.length, b.length);
    assertArrayEquals(want, all);
    // the renewing ends with the last stream (a renewal sent as it closed may still count)
    Thread.sleep(500);
    long closed = fs.leaseRenewals();
    Thread.sleep(1000);
    assertEquals(closed, fs.leaseRenewals(), "leases renewed with no stream open");
  }
}
