package org.hdfsrdma.datanode.disk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The "auto" policy of an untagged DISK volume, against a sysfs tree made for the test. */
class DeviceKindTest {
  @TempDir
  Path tmp;

  private Path sys(String rotational) throws Exception {
    Path root = Files.createDirectories(tmp.resolve("sys-" + rotational));
    Path q = Files.createDirectories(root.resolve("dev/block/" + DeviceKind.majorMinor(tmp)).resolve("queue"));
    Files.writeString(q.resolve("rotational"), rotational + "\n");
    return root;
  }

  @Test
  void aNonRotationalDeviceGetsTheAdaptivePolicy() throws Exception {
    assertEquals(Boolean.FALSE, DeviceKind.rotational(tmp, sys("0")));
    assertEquals("adaptive", DiskSettings.autoPolicy(tmp.toString(), sys("0")));
  }

  @Test
  void aRotationalOrUnknownDeviceGetsTheRotationalPolicy() throws Exception {
    assertEquals(Boolean.TRUE, DeviceKind.rotational(tmp, sys("1")));
    assertEquals("rotational", DiskSettings.autoPolicy(tmp.toString(), sys("1")));
    Path empty = Files.createDirectories(tmp.resolve("sys-none"));
    assertNull(DeviceKind.rotational(tmp, empty));
    assertEquals("rotational", DiskSettings.autoPolicy(tmp.toString(), empty));
    assertEquals("rotational", DiskSettings.autoPolicy(tmp.resolve("no/such/dir").toString(), sys("0")));
  }

  @Test
  void aPartitionGoesByItsDisk() throws Exception {
    // /sys/dev/block/M:m of a partition is .../vda/vda1, whose disk has the queue
    Path root = Files.createDirectories(tmp.resolve("sys-part"));
    Path disk = Files.createDirectories(root.resolve("devices/vda/queue"));
    Files.writeString(disk.resolve("rotational"), "0\n");
    Path part = Files.createDirectories(root.resolve("devices/vda/vda1"));
    Files.createDirectories(root.resolve("dev/block"));
    Files.createSymbolicLink(root.resolve("dev/block/" + DeviceKind.majorMinor(tmp)), part);
    assertEquals(Boolean.FALSE, DeviceKind.rotational(tmp, root));
  }

  @Test
  void untaggedDiskVolumesDefaultToAuto() {
    assertEquals("auto", DiskSettings.defaultPolicy(org.apache.hadoop.fs.StorageType.DISK));
    assertEquals("rotational", DiskSettings.defaultPolicy(org.apache.hadoop.fs.StorageType.ARCHIVE));
  }
}
