package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CommonConfigurationKeysPublic;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSClient;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.hdfs.client.impl.LeaseRenewer;
import org.apache.hadoop.hdfs.protocol.DSQuotaExceededException;
import org.apache.hadoop.hdfs.protocol.HdfsConstants;
import org.apache.hadoop.hdfs.server.datanode.DataNodeFaultInjector;
import org.apache.hadoop.hdfs.server.datanode.ReplicaInPipeline;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Our output streams hold their files' leases as stock's do: each is one of the DFSClient's
 * files being written, so the DFSClient's LeaseRenewer runs while one is open and stops a
 * grace period after the last closes (what TestDistributedFileSystem#testDFSClient reads),
 * the lease outlives the NameNode's hard limit while the stream is open, closing the DFSClient
 * closes (completes) the stream's file, renewal failing past the client's hard limit aborts
 * the stream, whose later calls fail, and a failed close recovers the lease when configured.
 */
@Timeout(240)
class LeaseRenewalTest {
  /** LeaseRenewer's own default grace period (60 s), restored after each test. */
  private static final long STOCK_GRACE_MS = 60_000;
  private static final long GRACE_MS = 1000;

  private MiniDFSCluster cluster;
  private RdmaDistributedFileSystem fs;

  @BeforeEach
  void shortGrace() {
    // as testDFSClient: renewers made from now on stop 1 s after their last file closes
    LeaseRenewer.setLeaseRenewerGraceDefault(GRACE_MS);
  }

  @AfterEach
  void stop() throws IOException {
    LeaseRenewer.setLeaseRenewerGraceDefault(STOCK_GRACE_MS);
    PluginCluster.shutdown(fs, cluster);
  }

  private void start(Configuration serverConf, Configuration clientExtra) throws Exception {
    cluster = PluginCluster.start(serverConf, getClass(), 1);
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    if (clientExtra != null) {
      clientExtra.forEach(e -> c.set(e.getKey(), e.getValue()));
    }
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
  }

  private static void assertOurs(FSDataOutputStream out) {
    assertInstanceOf(RdmaOutputStream.class, out.getWrappedStream(), "the file is written by our stream");
  }

  @Test
  void theClientsRenewerRunsWhileOurStreamIsOpenAndStopsAfterTheGrace() throws Exception {
    start(PluginCluster.baseConf(), null);
    DFSClient client = fs.getClient();
    assertFalse(client.getLeaseRenewer().isRunning(), "renewer running before any file was opened");
    Path p = new Path("/lease/renewer");
    try (FSDataOutputStream out = fs.create(p, (short) 1)) {
      assertOurs(out);
      assertTrue(client.getLeaseRenewer().isRunning(), "no lease renewer running while our stream is open");
      assertEquals(1, client.getNumOfFilesBeingWritten());
      assertEquals(1, fs.filesBeingWritten());
      out.write(PluginCluster.random(3000, 3));
      out.hflush();
      assertTrue(client.getLeaseRenewer().isRunning());
    }
    assertTrue(client.isFilesBeingWrittenEmpty(), "the closed stream is still one of the files being written");
    assertEquals(0, fs.filesBeingWritten());
    await(() -> !client.getLeaseRenewer().isRunning(), 10 * GRACE_MS, "the renewer outlived its grace period");
    assertEquals(3000, cluster.getFileSystem().getFileStatus(p).getLen());
  }

  @Test
  void anOpenStreamKeepsItsLeasePastTheHardLimit() throws Exception {
    Configuration conf = PluginCluster.baseConf();
    conf.setLong(DFSConfigKeys.DFS_NAMENODE_LEASE_RECHECK_INTERVAL_MS_KEY, 200);
    start(conf, null);
    // soft 1 s, hard 2 s: an unrenewed lease is recovered (the file closed) within a few seconds
    cluster.setLeasePeriod(1000, 2000);
    Path p = new Path("/lease/open");
    byte[] a = PluginCluster.random(5000, 1);
    byte[] b = PluginCluster.random(7000, 2);
    try (FSDataOutputStream out = fs.create(p, (short) 1)) {
      assertOurs(out);
      fs.getClient().getLeaseRenewer().setRenewalTime(300); // as Hadoop's lease tests
      out.write(a);
      out.hflush();
      Thread.sleep(6000); // three hard limits
      out.write(b);
    }
    assertEquals(a.length + b.length, cluster.getFileSystem().getFileStatus(p).getLen());
    byte[] want = new byte[a.length + b.length];
    System.arraycopy(a, 0, want, 0, a.length);
    System.arraycopy(b, 0, want, a.length, b.length);
    assertArrayEquals(want, PluginCluster.readWhole(fs, p));
  }

  @Test
  void closingTheDfsClientClosesOurOpenStreams() throws Exception {
    start(PluginCluster.baseConf(), null);
    Path flushed = new Path("/lease/close-flushed");
    Path buffered = new Path("/lease/close-buffered");
    FSDataOutputStream out1 = fs.create(flushed, (short) 1);
    FSDataOutputStream out2 = fs.create(buffered, (short) 1);
    assertOurs(out1);
    assertOurs(out2);
    out1.write(PluginCluster.random(4000, 4));
    out1.hflush();
    out2.write(PluginCluster.random(100, 5)); // held by the stream, no block yet
    assertEquals(2, fs.getClient().getNumOfFilesBeingWritten());

    fs.getClient().close(); // as stock: closes every file being written, then the client

    DistributedFileSystem other = cluster.getFileSystem();
    assertTrue(other.isFileClosed(flushed), "DFSClient#close left our stream's file open");
    assertTrue(other.isFileClosed(buffered), "DFSClient#close left our stream's file open");
    assertEquals(4000, other.getFileStatus(flushed).getLen());
    assertEquals(100, other.getFileStatus(buffered).getLen());
    assertTrue(fs.getClient().isFilesBeingWrittenEmpty());
    assertThrows(IOException.class, () -> out1.hflush(), "a closed stream flushed");
    assertThrows(IOException.class, () -> out2.write(PluginCluster.random(10, 6)), "a closed stream wrote");
  }

  @Test
  void renewalFailingPastTheHardLimitAbortsOurStream() throws Exception {
    Configuration client = new Configuration(false);
    // the client's hard limit (DfsClientConf): renewal failing for longer than 1 s aborts its files
    client.setLong("dfs.namenode.lease-hard-limit-sec", 1);
    client.setInt(CommonConfigurationKeysPublic.IPC_CLIENT_CONNECT_MAX_RETRIES_KEY, 0);
    client.setInt(CommonConfigurationKeysPublic.IPC_CLIENT_CONNECT_MAX_RETRIES_ON_SOCKET_TIMEOUTS_KEY, 0);
    start(PluginCluster.baseConf(), client);
    Path p = new Path("/lease/abort");
    FSDataOutputStream out = fs.create(p, (short) 1);
    assertOurs(out);
    fs.getClient().getLeaseRenewer().setRenewalTime(300);
    out.write(PluginCluster.random(4000, 7));
    out.hflush(); // the block is allocated and its length known: the next flush needs no NameNode
    assertFalse(fs.getClient().isFilesBeingWrittenEmpty());

    cluster.shutdownNameNode(0); // every renewal fails from now on

    IOException[] failed = new IOException[1];
    await(() -> {
      try {
        out.hflush(); // the DataNode still acks: only an abort makes this fail
        return false;
      } catch (IOException x) {
        failed[0] = x;
        return true;
      }
    }, 60_000, "the stream was not aborted");
    assertTrue(String.valueOf(failed[0].getMessage()).contains("Lease timeout of"), "not stock's abort: " + failed[0]);
    assertTrue(fs.getClient().isFilesBeingWrittenEmpty(), "the aborted stream is still one of the files being written");
    assertThrows(IOException.class, () -> out.write(PluginCluster.random(10, 8)), "an aborted stream wrote");
  }

  /**
   * With {@code dfs.client.write.recover.lease.on.close.exception}, a close that fails gives the
   * lease back and has the NameNode recover the file, as stock's close: the file ends closed with
   * what its DataNode acknowledged, instead of staying open under a lease nobody renews.
   */
  @Test
  void aFailedCloseRecoversTheLeaseWhenConfigured() throws Exception {
    Configuration client = new Configuration(false);
    client.setBoolean(HdfsClientConfigKeys.Write.RECOVER_LEASE_ON_CLOSE_EXCEPTION_KEY, true);
    start(PluginCluster.baseConf(), client);
    Path p = new Path("/lease/recover-on-close");
    byte[] first = PluginCluster.random(4000, 9);
    AtomicBoolean failAcks = new AtomicBoolean();
    DataNodeFaultInjector old = DataNodeFaultInjector.get();
    DataNodeFaultInjector.set(new DataNodeFaultInjector() {
      @Override
      public void failPipeline(ReplicaInPipeline replica, String mirror) throws IOException {
        if (failAcks.get()) {
          throw new IOException("injected: the DataNode fails every ack");
        }
      }
    });
    try {
      FSDataOutputStream out = fs.create(p, (short) 1);
      assertOurs(out);
      out.write(first);
      out.hflush();
      failAcks.set(true);
      out.write(PluginCluster.random(3000, 10));
      assertThrows(IOException.class, out::close, "the close did not fail: the injector was not called");
    } finally {
      DataNodeFaultInjector.set(old);
    }
    DistributedFileSystem other = cluster.getFileSystem();
    await(() -> {
      try {
        return other.isFileClosed(p);
      } catch (IOException e) {
        throw new AssertionError(e);
      }
    }, 60_000, "the file's lease was not recovered after the failed close");
    long len = other.getFileStatus(p).getLen();
    assertTrue(len >= first.length, "the recovered file lost acknowledged bytes: " + len);
  }

  /**
   * As stock's stream, the next block of a file deleted under the writer (its lease gone with it)
   * fails with the NameNode's FileNotFoundException, and one past the directory's space quota
   * with DSQuotaExceededException: the types an application catches, not a RemoteException.
   */
  @Test
  void aBlockRefusedByTheNameNodeFailsWithStocksException() throws Exception {
    start(PluginCluster.baseConf(), null);
    Path dir = new Path("/lease/gone");
    Path p = new Path(dir, "f");
    FSDataOutputStream out = fs.create(p, (short) 1);
    assertOurs(out);
    out.write(PluginCluster.random(100, 11)); // held by the stream: the block is allocated at the flush
    assertTrue(fs.delete(dir, true));
    FileNotFoundException e = assertThrows(FileNotFoundException.class, out::hflush);
    assertTrue(String.valueOf(e.getMessage()).contains("File does not exist"), e.toString());

    Path quota = new Path("/lease/quota");
    fs.mkdirs(quota);
    fs.setQuota(quota, HdfsConstants.QUOTA_DONT_SET, 1024); // less than one block
    FSDataOutputStream q = fs.create(new Path(quota, "f"), (short) 1);
    assertOurs(q);
    q.write(PluginCluster.random(100, 12));
    assertThrows(DSQuotaExceededException.class, q::hflush);
    assertThrows(IOException.class, q::close, "the close of the failed stream reports its failure");
  }

  private static void await(BooleanSupplier condition, long ms, String what) throws InterruptedException {
    long end = System.nanoTime() + ms * 1_000_000L;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > end) {
        throw new AssertionError(what + " within " + ms + " ms");
      }
      Thread.sleep(50);
    }
  }
}
