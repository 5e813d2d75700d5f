package org.hdfsrdma.client;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configurable;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsVolumeSpi;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.RoundRobinVolumeChoosingPolicy;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.VolumeChoosingPolicy;

/**
 * Stock's round-robin volume choice (dfs.datanode.fsdataset.volume.choosing.policy), except
 * that a replica creation that chose a held volume waits there until the volume is let go:
 * inside FsDatasetSpi#createRbw, before it touches the volume, as a createRbw on a hung
 * filesystem blocks. Tests hold volumes by storage ID; nothing is held otherwise.
 */
public final class HoldingVolumeChoosingPolicy<V extends FsVolumeSpi> implements VolumeChoosingPolicy<V>, Configurable {
  private static final Map<String, CountDownLatch> HELD = new ConcurrentHashMap<>();
  private static final AtomicInteger WAITING = new AtomicInteger();
  private static final AtomicInteger HELD_TOTAL = new AtomicInteger();

  private final RoundRobinVolumeChoosingPolicy<V> stock = new RoundRobinVolumeChoosingPolicy<>();

  /** Replica creations choosing {@code storageId} wait for {@code release} (at most 2 minutes). */
  static void hold(String storageId, CountDownLatch release) {
    HELD.put(storageId, release);
  }

  /** Lets every held volume go. */
  static void releaseAll() {
    for (CountDownLatch l : HELD.values()) {
      l.countDown();
    }
    HELD.clear();
  }

  /** Replica creations waiting on a held volume now. */
  static int waiting() {
    return WAITING.get();
  }

  /** Replica creations that have waited on a held volume, ever. */
  static int heldTotal() {
    return HELD_TOTAL.get();
  }

  @Override
  public V chooseVolume(List<V> volumes, long replicaSize, String storageId) throws IOException {
    V v = stock.chooseVolume(volumes, replicaSize, storageId);
    CountDownLatch release = HELD.get(v.getStorageID());
    if (release != null) {
      WAITING.incrementAndGet();
      HELD_TOTAL.incrementAndGet();
      try {
        release.await(120, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while volume " + v.getStorageID() + " was held", e);
      } finally {
        WAITING.decrementAndGet();
      }
    }
    return v;
  }

  @Override
  public void setConf(Configuration conf) {
    stock.setConf(conf);
  }

  @Override
  public Configuration getConf() {
    return stock.getConf();
  }
}
