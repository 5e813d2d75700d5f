package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.test.GenericTestUtils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Stock's ECN in the write pipeline, on ours: with {@code dfs.pipeline.ecn} on, every DataNode
 * puts its {@code DataNode#getECN()} in its acks' own header, and the client backs off before
 * its next packet when an ack flags a node CONGESTED, as stock's DataStreamer#backOffIfNecessary
 * (a random time from {@code dfs.client.congestion.backoff.mean.time}, at most
 * {@code dfs.client.congestion.backoff.max.time}). The DataNodes are made to report congestion
 * with stock's own settings only: {@code dfs.pipeline.congestion.ratio} so small that any load
 * average above zero is over it (on a machine idle enough to read 0 a busy thread raises it first).
 * With ECN off, no back-off. Every byte goes over hrdma and the file is whole.
 */
@Timeout(180)
class CongestionBackoffWriteTest {
  private static final int MEAN_MS = 150;
  private static final int MAX_MS = 400;
  private static final int ROUNDS = 5;
  private static final int ONE_WRITE = 5000;
  private static final double TINY_RATIO = 1e-9;
  private static final Pattern BACKOFF = Pattern.compile("are congested\\. Backing off for (\\d+) ms");

  private MiniDFSCluster cluster;
  private RdmaDistributedFileSystem fs;

  private void start(boolean ecn) throws Exception {
    Configuration conf = PluginCluster.baseConf();
    conf.setBoolean(DFSConfigKeys.DFS_PIPELINE_ECN_ENABLED, ecn);
    conf.setDouble(DFSConfigKeys.DFS_PIPELINE_CONGESTION_RATIO, TINY_RATIO);
    cluster = PluginCluster.start(conf, getClass(), 3);
    Configuration c = PluginCluster.rdmaClientConf(cluster);
    c.setInt(HdfsClientConfigKeys.DFS_CLIENT_CONGESTION_BACKOFF_MEAN_TIME, MEAN_MS);
    c.setInt(HdfsClientConfigKeys.DFS_CLIENT_CONGESTION_BACKOFF_MAX_TIME, MAX_MS);
    fs = (RdmaDistributedFileSystem) FileSystem.get(cluster.getURI(), c);
  }

  @AfterEach
  void stop() throws IOException {
    if (cluster != null) {
      PluginCluster.shutdown(fs, cluster);
    }
  }

  private static List<Integer> backoffs(String log) {
    List<Integer> out = new ArrayList<>();
    Matcher m = BACKOFF.matcher(log);
    while (m.find()) {
      out.add(Integer.parseInt(m.group(1)));
    }
    return out;
  }

  /** Writes ROUNDS hflushed packets after a first one; each round's back-offs and its time. */
  private byte[] write(Path p, GenericTestUtils.LogCapturer logs, List<List<Integer>> perRound,
      List<Long> roundMs) throws IOException {
    byte[] data = PluginCluster.random(5 + ROUNDS * ONE_WRITE, 7);
    try (FSDataOutputStream out = fs.create(p, (short) 3)) {
      out.write(data, 0, 5);
      out.hflush(); // its ack carries the DataNodes' ECN
      for (int i = 0; i < ROUNDS; i++) {
        int seen = backoffs(logs.getOutput()).size();
        long t0 = System.nanoTime();
        out.write(data, 5 + i * ONE_WRITE, ONE_WRITE);
        out.hflush(); // one packet, sent after the back-off the last ack asked for
        roundMs.add(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
        List<Integer> all = backoffs(logs.getOutput());
        perRound.add(all.subList(seen, all.size()));
      }
    }
    return data;
  }

  /**
   * The DataNodes report congestion when the load average is over the tiny ratio, i.e. above 0.
   * On a machine idle enough to read 0 a busy thread raises it (the kernel averages every 5 s).
   */
  private static void loadAboveZero() throws InterruptedException {
    double bound = TINY_RATIO * Runtime.getRuntime().availableProcessors();
    java.util.concurrent.atomic.AtomicBoolean spin = new java.util.concurrent.atomic.AtomicBoolean(true);
    Thread busy = new Thread(() -> {
      long x = 0;
      while (spin.get()) {
        x += System.nanoTime() & 1;
      }
      if (x == 42) {
        System.out.print(""); // keeps the loop from being optimized away
      }
    }, "load");
    try {
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage() <= bound) {
        if (!busy.isAlive()) {
          busy.start();
        }
        assertTrue(System.nanoTime() < end, "the load average stayed at 0 for 30 s with a busy thread");
        Thread.sleep(200);
      }
    } finally {
      spin.set(false);
      if (busy.isAlive()) {
        busy.join();
      }
    }
  }

  @Test
  void aCongestedAckMakesTheWriterBackOffBeforeItsNextPacket() throws Exception {
    loadAboveZero();
    start(true);
    DistributedFileSystem stock = cluster.getFileSystem();
    Path p = new Path("/ecn/congested");
    GenericTestUtils.LogCapturer logs =
        GenericTestUtils.LogCapturer.captureLogs(org.slf4j.LoggerFactory.getLogger(RdmaBlockWriter.class));
    List<List<Integer>> perRound = new ArrayList<>();
    List<Long> roundMs = new ArrayList<>();
    byte[] data;
    try {
      data = write(p, logs, perRound, roundMs);
    } finally {
      logs.stopCapturing();
    }
    int total = 0;
    for (int i = 0; i < ROUNDS; i++) {
      List<Integer> b = perRound.get(i);
      // one packet per round, after an ack that flagged the DataNodes CONGESTED: one back-off
      assertEquals(1, b.size(), "round " + i + ": back-offs " + perRound);
      int t = b.get(0);
      assertTrue(t >= 0 && t <= MAX_MS, "round " + i + ": " + t + " ms, max " + MAX_MS);
      // the time between this round's packet and the last ack's: at least the back-off
      assertTrue(roundMs.get(i) >= t, "round " + i + ": " + roundMs.get(i) + " ms for a back-off of " + t);
      total += t;
    }
    assertTrue(total > 0, "backed off " + perRound);
    assertEquals(data.length, fs.rdmaBytesWritten(), "every byte went over hrdma");
    assertEquals(0, fs.stockWriteFallbacks());
    assertArrayEquals(data, PluginCluster.readWhole(stock, p));
  }

  @Test
  void withEcnOffThereIsNoBackOff() throws Exception {
    start(false);
    DistributedFileSystem stock = cluster.getFileSystem();
    Path p = new Path("/ecn/off");
    GenericTestUtils.LogCapturer logs =
        GenericTestUtils.LogCapturer.captureLogs(org.slf4j.LoggerFactory.getLogger(RdmaBlockWriter.class));
    List<List<Integer>> perRound = new ArrayList<>();
    byte[] data;
    try {
      data = write(p, logs, perRound, new ArrayList<>());
      assertEquals(List.of(), backoffs(logs.getOutput()), "back-offs with ECN off");
    } finally {
      logs.stopCapturing();
    }
    assertEquals(data.length, fs.rdmaBytesWritten(), "every byte went over hrdma");
    assertArrayEquals(data, PluginCluster.readWhole(stock, p));
  }
}
