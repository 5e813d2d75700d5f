package org.hdfsrdma.datanode;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.concurrent.atomic.AtomicLong;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.nativelib.NativeShm;
import org.hdfsrdma.protocol.SameHost;
import org.hdfsrdma.transport.BufferAllocator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plugin's shared-memory segments for same-host reads by reference: who
 * gets one (a client whose {@link SameHost} name is the DataNode's, while the
 * plugin's budget of {@value ReadSettings#SHM_MAX_BYTES_KEY} lasts), where
 * their files go, and what is left of a DataNode that died (files of
 * processes no longer alive are removed at start). A segment's file is made
 * with mode 0600: a client running as another user cannot map it and reads
 * by value. Thread-safe.
 */
final class ShmGrants {
  private static final Logger LOG = LoggerFactory.getLogger(ShmGrants.class);
  /** Segment files are {@code PREFIX<pid>-<random>}. */
  static final String PREFIX = "hrdma-read-";
  private static final SecureRandom RANDOM = new SecureRandom();

  private final ReadSettings settings;
  private final AtomicLong bytesMapped = new AtomicLong();
  private final AtomicLong granted = new AtomicLong();
  private final AtomicLong refused = new AtomicLong();
  private final AtomicLong byReference = new AtomicLong();

  /** A segment not granted; the message says why (the client reads by value). */
  static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;

    Refused(String message) {
      super(message);
    }
  }

  ShmGrants(ReadSettings settings) {
    this.settings = settings;
  }

  /**
   * A new segment for a connection from a client on host {@code clientHost}; its packets
   * fall back to {@code fallback}.
   *
   * @throws Refused not for this client, or not now
   */
  ShmSegment grant(String clientHost, BufferAllocator fallback, int slotBytes) throws Refused {
    try {
      return create(clientHost, fallback, slotBytes);
    } catch (Refused e) {
      refused.incrementAndGet();
      throw e;
    }
  }

  private ShmSegment create(String clientHost, BufferAllocator fallback, int slotBytes) throws Refused {
    long bytes = settings.shmSegmentBytes();
    if (bytes == 0) {
      throw new Refused("same-host reads by reference are off (" + ReadSettings.SHM_SEGMENT_BYTES_KEY + " = 0)");
    }
    if (SameHost.name().isEmpty() || !SameHost.name().equals(clientHost)) {
      throw new Refused("the client is not on this DataNode's host");
    }
    if (!HrdmaNative.isAvailable()) {
      throw new Refused("the native library is not loaded: " + HrdmaNative.unavailabilityCause());
    }
    // whole slots, at least one
    long size = Math.max(slotBytes, bytes - bytes % slotBytes);
    if (bytesMapped.addAndGet(size) > settings.shmMaxBytes()) {
      bytesMapped.addAndGet(-size);
      throw new Refused("the DataNode's shared memory for reads (" + ReadSettings.SHM_MAX_BYTES_KEY + " = "
          + settings.shmMaxBytes() + " bytes) is in use");
    }
    byte[] name = new byte[16];
    RANDOM.nextBytes(name);
    Path path = Path.of(settings.shmDir()).resolve(PREFIX + ProcessHandle.current().pid() + "-"
        + HexFormat.of().formatHex(name));
    NativeShm.Segment mem;
    try {
      mem = NativeShm.create(path, size);
    } catch (NativeException | RuntimeException e) {
      bytesMapped.addAndGet(-size);
      LOG.warn("hrdma datanode: cannot make a shared-memory segment of {} bytes at {}: {}", size, path,
          e.toString());
      throw new Refused("the DataNode cannot make a shared-memory segment: " + e.getMessage());
    }
    granted.incrementAndGet();
    return new ShmSegment(mem, fallback, slotBytes, byReference, () -> bytesMapped.addAndGet(-size));
  }

  /** Bytes of segments mapped now. */
  long bytesMapped() {
    return bytesMapped.get();
  }

  long granted() {
    return granted.get();
  }

  long refused() {
    return refused.get();
  }

  /** Read packets sent by reference, over all segments. */
  long packetsByReference() {
    return byReference.get();
  }

  /** Removes segment files of processes that are no longer alive (a DataNode that died). */
  void removeStale() {
    Path dir = Path.of(settings.shmDir());
    if (settings.shmSegmentBytes() == 0 || !Files.isDirectory(dir)) {
      return;
    }
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, PREFIX + "*")) {
      for (Path f : files) {
        String rest = f.getFileName().toString().substring(PREFIX.length());
        int dash = rest.indexOf('-');
        long pid;
        try {
          pid = Long.parseLong(dash < 0 ? rest : rest.substring(0, dash));
        } catch (NumberFormatException e) {
          continue;
        }
        if (ProcessHandle.of(pid).isEmpty()) {
          try {
            Files.deleteIfExists(f);
            LOG.info("hrdma datanode: removed {}, a shared-memory segment of a process that is gone", f);
          } catch (IOException e) {
            LOG.debug("hrdma datanode: cannot remove {}: {}", f, e.toString());
          }
        }
      }
    } catch (IOException e) {
      LOG.debug("hrdma datanode: cannot list {}: {}", dir, e.toString());
    }
  }
}
