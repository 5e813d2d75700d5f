package org.hdfsrdma.datanode.disk;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.StorageType;
import org.hdfsrdma.datanode.compat.DataNodeAccess.Volume;

/** An ssd volume in a directory of this machine, and block files of random bytes, for the direct-read tests. */
final class DirectFixtures {
  private DirectFixtures() {}

  /** A DiskIo with the fixed ssd policy on {@link #volume}: depth, request size, read-ahead bytes. */
  static DiskIo diskIo(Path dir, int depth, int requestBytes, int readAhead) {
    Configuration conf = new Configuration(false);
    conf.set(DiskSettings.POLICY_KEY_PREFIX + "ssd", "ssd");
    conf.setInt(DiskSettings.SSD_DEPTH_KEY, depth);
    conf.setInt(DiskSettings.SSD_REQUEST_BYTES_KEY, requestBytes);
    conf.setInt(DiskSettings.READ_AHEAD_BYTES_KEY, readAhead);
    return new DiskIo(DiskSettings.of(conf), List.of(volume(dir)));
  }

  static Volume volume(Path dir) {
    return new Volume("ssd-1", StorageType.SSD, dir.toString());
  }

  /** Writes {@code size} random bytes (seeded by the size) to {@code p} and returns them. */
  static byte[] file(Path p, int size) throws Exception {
    byte[] data = new byte[size];
    new Random(size).nextBytes(data);
    Files.write(p, data);
    return data;
  }
}
