package org.hdfsrdma.datanode.disk;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Whether the block device under a directory spins, as Linux reports it
 * ({@code /sys/dev/block/MAJOR:MINOR/queue/rotational}, or the whole disk's
 * for a partition). What the "auto" policy of an untagged DISK volume goes by.
 */
final class DeviceKind {
  static final Path SYS = Path.of("/sys");

  private DeviceKind() {}

  /** "MAJOR:MINOR" of the device holding {@code dir} (glibc's dev_t encoding, gnu_dev_major/minor). */
  static String majorMinor(Path dir) throws IOException {
    long dev = ((Number) Files.getAttribute(dir, "unix:dev")).longValue();
    long major = ((dev >>> 8) & 0xfff) | ((dev >>> 32) & 0xfffff000L);
    long minor = (dev & 0xff) | ((dev >>> 12) & 0xffffff00L);
    return major + ":" + minor;
  }

  /** True: rotational; false: not (SSD, NVMe, RAM); null: unknown (not Linux, no such file, a network file system). */
  static Boolean rotational(Path dir, Path sysRoot) {
    try {
      Path block = sysRoot.resolve("dev/block/" + majorMinor(dir));
      if (!Files.exists(block)) {
        return null;
      }
      Path real = block.toRealPath();
      Path q = real.resolve("queue/rotational");
      if (!Files.exists(q)) {
        q = real.getParent().resolve("queue/rotational"); // a partition: its disk's queue
      }
      if (!Files.exists(q)) {
        return null;
      }
      String v = Files.readString(q).trim();
      return v.equals("1") ? Boolean.TRUE : v.equals("0") ? Boolean.FALSE : null;
    } catch (IOException | UnsupportedOperationException | IllegalArgumentException | ClassCastException e) {
      return null;
    }
  }
}
