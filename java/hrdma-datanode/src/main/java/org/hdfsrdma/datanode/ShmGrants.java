package org.hdfsrdma.datanode;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.net.InetSocketAddress;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.protocol.proto.HdfsProtos.ExtendedBlockProto;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier.AccessMode;
import org.apache.hadoop.security.proto.SecurityProtos.TokenProto;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.datanode.compat.DataNodeAccess;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeException;
import org.hdfsrdma.nativelib.NativeShm;
import org.hdfsrdma.protocol.SameHost;
import org.hdfsrdma.transport.BufferAllocator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plugin's shared-memory segments for same-host reads by reference: who
 * gets one (a client whose {@link SameHost} name is the DataNode's and, when
 * block tokens are on, whose request carries a block token valid for reading
 * ({@link #authorize}), while the plugin's budget of
 * {@value ReadSettings#SHM_MAX_BYTES_KEY} and the client's of
 * {@value ReadSettings#SHM_MAX_BYTES_PER_CLIENT_KEY} last; a segment the
 * client does not map within {@value ReadSettings#SHM_MAP_TIMEOUT_KEY} is
 * freed), where
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
  private final Executor files;
  private final AtomicLong bytesMapped = new AtomicLong();
  private final AtomicLong granted = new AtomicLong();
  private final AtomicLong refused = new AtomicLong();
  private final AtomicLong byReference = new AtomicLong();
  private final AtomicLong mapTimeouts = new AtomicLong();
  /** Bytes of segments mapped now, by client; an entry goes when it drops to 0. */
  private final ConcurrentHashMap<String, Long> byClient = new ConcurrentHashMap<>();

  /** A segment not granted; the message says why (the client reads by value). */
  static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;
    private final Status status;

    Refused(String message) {
      this(Status.ERROR_UNSUPPORTED, message);
    }

    Refused(Status status, String message) {
      super(message);
      this.status = status;
    }

    /** The ERROR's status: ERROR_ACCESS_TOKEN for a token refused, else ERROR_UNSUPPORTED. */
    Status status() {
      return status;
    }
  }

  /**
   * @param files where a segment closed before its file was removed has it removed (never a
   *     transport's I/O thread: the directory may be on a disk)
   */
  ShmGrants(ReadSettings settings, Executor files) {
    this.settings = settings;
    this.files = files;
  }

  /**
   * {@code executor}, and for a task it refuses (it stops) a thread of its own: a segment closed
   * as the DataNode stops still has its file removed, off the I/O thread that closed it.
   */
  static Executor orOwnThread(Executor executor) {
    return task -> {
      try {
        executor.execute(task);
      } catch (RejectedExecutionException e) {
        Thread t = new Thread(task, "hrdma-dn-shm-remove");
        t.setDaemon(true);
        t.start();
      }
    };
  }

  /**
   * Who asks for a segment: the user of the request's block token, checked
   * as for a read (READ access, the stock check) when tokens are on for the
   * block's pool, else the client's address. A request without a block is
   * refused when any block pool here has tokens on.
   *
   * @throws Refused the token is missing or not valid (status ERROR_ACCESS_TOKEN), or the request is bad
   */
  String authorize(DataNodeAccess dn, HrdmaProtos.ShmRequest req, InetSocketAddress remote) throws Refused {
    try {
      return identify(dn, req, remote);
    } catch (Refused e) {
      refused.incrementAndGet();
      throw e;
    }
  }

  private static String identify(DataNodeAccess dn, HrdmaProtos.ShmRequest req, InetSocketAddress remote)
      throws Refused {
    return identify(dn, req, remote, AccessMode.READ, "SHM_REQUEST");
  }

  /** As {@link #authorize}, for a token of {@code mode} (WRITE for a write segment); {@code op} names the request. */
  static String identify(DataNodeAccess dn, HrdmaProtos.ShmRequest req, InetSocketAddress remote, AccessMode mode,
      String op) throws Refused {
    String byAddress = "address " + (remote == null || remote.getAddress() == null ? String.valueOf(remote)
        : remote.getAddress().getHostAddress());
    try {
      if (req.getBlock().isEmpty()) {
        for (String pool : dn.blockPoolIds()) {
          if (dn.blockTokenEnabled(pool)) {
            throw new Refused(Status.ERROR_ACCESS_TOKEN, "a shared-memory segment needs a block token here");
          }
        }
        return byAddress;
      }
      ExtendedBlock block = PBHelperClient.convert(ExtendedBlockProto.parseFrom(req.getBlock().toByteArray()));
      if (!dn.blockTokenEnabled(block.getBlockPoolId())) {
        return byAddress;
      }
      Token<BlockTokenIdentifier> token = req.getToken().isEmpty() ? null
          : PBHelperClient.convert(TokenProto.parseFrom(req.getToken().toByteArray()));
      dn.checkBlockToken(token, block, mode);
      return "user " + token.decodeIdentifier().getUserId();
    } catch (InvalidToken e) {
      throw new Refused(Status.ERROR_ACCESS_TOKEN, "Block token verification failed: op=" + op + ", remoteAddress="
          + remote + ", message=" + e.getMessage());
    } catch (IOException | RuntimeException e) { // a malformed block or token, a pool not registered
      throw new Refused(Status.ERROR_INVALID, "bad shared-memory request: " + e);
    }
  }

  /**
   * A new segment for a connection from client {@code client} (see
   * {@link #authorize}) on host {@code clientHost}; its packets fall back to
   * {@code fallback}. Freed unless the client maps it within the timeout.
   *
   * @throws Refused not for this client, or not now
   */
  ShmSegment grant(String clientHost, String client, BufferAllocator fallback, int slotBytes) throws Refused {
    ShmSegment s;
    try {
      s = create(clientHost, client, fallback, slotBytes);
    } catch (Refused e) {
      refused.incrementAndGet();
      throw e;
    }
    CompletableFuture.delayedExecutor(settings.shmMapTimeoutMs(), TimeUnit.MILLISECONDS).execute(() -> {
      if (s.closeUnlessMapped()) {
        mapTimeouts.incrementAndGet();
        LOG.info("hrdma datanode: {} did not map its shared-memory segment within {} ms ({}), freed", client,
            settings.shmMapTimeoutMs(), ReadSettings.SHM_MAP_TIMEOUT_KEY);
      }
    });
    return s;
  }

  /** Adds {@code delta} to {@code client}'s bytes unless that passes its budget; false then. */
  private boolean charge(String client, long delta) {
    boolean[] ok = {true};
    byClient.compute(client, (k, v) -> {
      long now = (v == null ? 0 : v) + delta;
      if (delta > 0 && now > settings.shmMaxBytesPerClient()) {
        ok[0] = false;
        return v;
      }
      return now == 0 ? null : now;
    });
    return ok[0];
  }

  private ShmSegment create(String clientHost, String client, BufferAllocator fallback, int slotBytes)
      throws Refused {
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
    if (!charge(client, size)) {
      throw new Refused("the shared memory for reads of " + client + " (" + ReadSettings.SHM_MAX_BYTES_PER_CLIENT_KEY
          + " = " + settings.shmMaxBytesPerClient() + " bytes) is in use");
    }
    if (bytesMapped.addAndGet(size) > settings.shmMaxBytes()) {
      bytesMapped.addAndGet(-size);
      charge(client, -size);
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
      charge(client, -size);
      LOG.warn("hrdma datanode: cannot make a shared-memory segment of {} bytes at {}: {}", size, path,
          e.toString());
      throw new Refused("the DataNode cannot make a shared-memory segment: " + e.getMessage());
    }
    granted.incrementAndGet();
    return new ShmSegment(mem, fallback, slotBytes, byReference, () -> {
      bytesMapped.addAndGet(-size);
      charge(client, -size);
    }, files);
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

  /** Segments freed because the client did not map them in time. */
  long mapTimeouts() {
    return mapTimeouts.get();
  }

  /** Bytes of {@code client}'s segments mapped now. */
  long bytesMapped(String client) {
    return byClient.getOrDefault(client, 0L);
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
