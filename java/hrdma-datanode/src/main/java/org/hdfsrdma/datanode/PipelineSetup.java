package org.hdfsrdma.datanode;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto.BlockConstructionStage;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier.AccessMode;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.apache.hadoop.util.DataChecksum;
import org.hdfsrdma.datanode.compat.DataNodeAccess;
import org.hdfsrdma.datanode.compat.FaultHooks;
import org.hdfsrdma.datanode.compat.RbwReplica;
import org.hdfsrdma.datanode.disk.DiskIo;
import org.hdfsrdma.protocol.BlockOps;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.RdmaPorts;
import org.hdfsrdma.protocol.SameHost;
import org.hdfsrdma.protocol.SegmentFetch;
import org.hdfsrdma.protocol.ShortCircuitSocket;
import org.hdfsrdma.protocol.SocketPaths;
import org.hdfsrdma.protocol.WriteSegment;
import org.hdfsrdma.protocol.wire.ClientGate;
import org.hdfsrdma.protocol.wire.WireProtection;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.select.HrdmaConnector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A write's pipeline set-up (stock: DataXceiver#writeBlock up to the first packet), on a
 * set-up thread of its own (creating the replica touches a volume, which may hang; stock's
 * DataXceiver thread blocks the same way, and only its own write): the block token is
 * checked as stock checks it (mode WRITE, the storage
 * types and ids of this node and those downstream); the replica is created
 * ({@code createRbw} with the client's length hint, as stock; our preallocation bounded by the
 * block size this DataNode knows) or recovered, by stage; when the request names downstream targets, the
 * request goes on to the next DataNode's plugin and its WRITE_RESPONSE is awaited (when our
 * transports cannot reach that DataNode, over stock's DataTransferProtocol: {@link StockMirror}); a refusal
 * is answered here with WRITE_RESPONSE ({@code firstBadLink} names the node that failed, as
 * stock). What it opened stays in its fields for the task to use and close.
 *
 * <p>Not thread-safe: run once by one thread; its fields are read after {@link #run} returns.
 */
final class PipelineSetup {
  private static final Logger LOG = LoggerFactory.getLogger(PipelineSetup.class);

  private final OpContext ctx;
  private final DataNodeAccess dn;
  private final BlockWriteTask task;
  private final Endpoint up;
  private final Message request;
  private final long id;
  private final WriteMirror.Listener listener;

  ExtendedBlock block;
  RbwReplica replica;
  DiskIo.WriteStream disk; // hrdma disk: this block's I/O on its volume's scheduler
  DataChecksum checksum;
  String mirrorName;
  int downstream; // DataNodes after this one in the pipeline
  volatile DownstreamMirror mirror;
  // whether the DataNodes downstream relay and ack heartbeats (their WRITE_RESPONSE says so); none: true
  volatile boolean downstreamHeartbeats = true;
  BlockConstructionStage stage;
  long startOffset;
  private long reserveBytes; // what openDisk preallocates
  boolean registered;  // the task is the block's registered writer on this DataNode
  boolean fromClient;  // a client's write (stock verifies its checksums at the last node only)
  boolean oobAcks;     // upstream takes out-of-band acks (BlockOps#OOB_ACKS_FIELD)
  private boolean firstOfPipeline; // no DataNode before this one (a cache-first volume caches it)
  // a new connection's write segment to map after the WRITE_RESPONSE (mapSegmentLater), or null
  private WriteMirror segmentMirror;
  private DatanodeInfo segmentFrom;
  private org.apache.hadoop.security.token.Token<org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier>
      segmentToken;

  PipelineSetup(OpContext ctx, BlockWriteTask task, Endpoint up, Message request, WriteMirror.Listener listener) {
    this.ctx = ctx;
    this.dn = ctx.dn();
    this.task = task;
    this.up = up;
    this.request = request;
    this.id = request.requestId();
    this.listener = listener;
  }

  private void sendUp(MessageKind kind, org.apache.hadoop.thirdparty.protobuf.MessageLite header) {
    task.sendUp(kind, header);
  }

  /** Checks, creates the replica, sets up the downstream. On refusal answers WRITE_RESPONSE and returns false. */
  boolean run() {
    OpWriteBlockProto op;
    try {
      op = request.writeRequest();
    } catch (ProtocolException e) {
      throw new AssertionError(e); // the dispatcher checked the kind
    }
    block = BlockOps.block(op);
    fromClient = !op.getHeader().getClientName().isEmpty();
    oobAcks = BlockOps.takesOobAcks(op);
    firstOfPipeline = op.getTargetsCount() + 1 >= op.getPipelineSize();
    try {
      dn.checkBlockToken(BlockOps.token(op), block, AccessMode.WRITE, BlockOps.pipelineStorageTypes(op),
          BlockOps.pipelineStorageIds(op));
    } catch (InvalidToken e) {
      // stock: status ERROR_ACCESS_TOKEN, firstBadLink = this node's registered xfer address
      String msg = "Block token verification failed: op=WRITE_BLOCK, remoteAddress=" + up.remoteAddress()
          + ", message=" + e.getMessage();
      LOG.warn("hrdma datanode: {}", msg);
      String self = "";
      try {
        self = dn.registeredXferAddr(block.getBlockPoolId());
      } catch (IOException ignored) {
        // not registered: no address to name
      }
      sendUp(MessageKind.WRITE_RESPONSE, BlockOps.writeResponse(Status.ERROR_ACCESS_TOKEN, self, msg));
      return false;
    } catch (IOException e) {
      return refuse(Status.ERROR, "cannot check the block token of " + block + ": " + e.getMessage(), true);
    }
    stage = op.getStage();
    if (stage != BlockConstructionStage.PIPELINE_SETUP_CREATE
        && stage != BlockConstructionStage.PIPELINE_SETUP_STREAMING_RECOVERY
        && stage != BlockConstructionStage.PIPELINE_CLOSE_RECOVERY) {
      return refuse(Status.ERROR_UNSUPPORTED, "stage " + stage + " is not supported over hrdma (PIPELINE_SETUP_CREATE"
          + ", PIPELINE_SETUP_STREAMING_RECOVERY, PIPELINE_CLOSE_RECOVERY; appends take the stock path)", false);
    }
    try {
      checksum = BlockOps.requestedChecksum(op);
    } catch (RuntimeException e) {
      checksum = null;
    }
    if (checksum == null || checksum.getChecksumSize() == 0 || checksum.getBytesPerChecksum() <= 0) {
      return refuse(Status.ERROR_INVALID, "unsupported requested checksum " + op.getRequestedChecksum(), false);
    }
    // one writer per replica: a recovery takes over from the write it replaces (stock: stopWriter)
    registered = true;
    if (!ctx.writers().takeOver(block, task)) {
      return refuse(Status.ERROR, "the earlier write of " + block + " on DataNode " + dn.datanodeUuid()
          + " did not stop within " + ctx.setupTimeoutMs() + " ms", true);
    }
    DatanodeInfo[] targets = BlockOps.targets(op);
    if (targets.length == 0) {
      String refused = openLocal(op);
      if (refused != null) {
        return refuse(Status.ERROR, refused, true);
      }
    } else {
      DatanodeInfo next = targets[0];
      mirrorName = next.getXferAddr();
      downstream = targets.length;
      InetSocketAddress nextAddress = new InetSocketAddress(next.getIpAddr(), RdmaPorts.pluginPort(next, dn.conf()));
      // same-host writes by reference downstream: asked with the write's block and token, as a client would
      // (not when upstream chose the segment request's own id for its write: the answers would mix)
      boolean askSegment = ctx.writeShm().enabled() && SameHost.isLocal(nextAddress) && !SameHost.name().isEmpty()
          && org.hdfsrdma.nativelib.HrdmaNative.isAvailable() && id != WriteMirror.SEGMENT_REQUEST_ID;
      BlockOpResponseProto resp = null;
      WriteMirror d = null;
      boolean fresh = true;
      boolean localOpened = false;
      // our transports are being tried and the request has not gone: a failure now is a connection's
      // (nothing listening, a refused hello, a failed negotiation), and the write goes over stock's protocol
      boolean connecting = false;
      Throwable unreachable = null;
      // one deadline for the whole set-up downstream (connect, handshake, its answer), as stock's
      // DataNode waits for its mirror: the set-up timeout and 5 s per DataNode downstream, so that
      // each DataNode gives up on its mirror before the one upstream of it (and the client) gives up
      // on it, and the firstBadLink that reaches the client names the DataNode that did not answer
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(mirrorSetupMs(ctx.setupTimeoutMs(),
          targets.length));
      try {
        FaultHooks.failMirrorConnection(); // stock's hook: a throw is an unreachable mirror
        // downstream, this DataNode proves itself as stock's does: its own encryption key, the write's token
        WireProtection wire = WireProtection.forClient(dn.conf(), dn.conf().getBoolean(
            "dfs.encrypt.data.transfer", false), nextAddress.getPort());
        ClientGate.Credentials creds = new ClientGate.Credentials(
            wire.mode() == WireProtection.Mode.ENCRYPT ? dn.dataEncryptionKey(block) : null, BlockOps.token(op));
        MirrorPool pool = ctx.mirrors();
        MirrorPool.Key key = pool.enabled() ? mirrorKey(nextAddress, wire, creds) : null;
        // a pooled connection is tried once: one that broke while idle is replaced by a new one
        for (int attempt = 0;; attempt++) {
          connecting = true;
          MirrorPool.Pooled pc = key != null && attempt == 0 ? pool.take(key, id) : null;
          fresh = pc == null;
          if (fresh) {
            pc = key != null ? pool.newConnection(key, mirrorName) : null;
            d = pc != null ? new WriteMirror(mirrorName, up, listener, ctx.writeShm().forwardedByReferenceCounter(),
                pool, pc) : new WriteMirror(mirrorName, up, listener, ctx.writeShm().forwardedByReferenceCounter());
            ClientGate gate = new ClientGate(pc != null ? pc : d);
            Endpoint e;
            try {
              HrdmaConnector.Connection c = ctx.connector().connect(nextAddress, gate, leftMs(deadline));
              e = gate.handshake(c.endpoint(), wire, creds, Math.max(1, leftMs(deadline)));
            } catch (IOException | RuntimeException ex) {
              if (pc != null) {
                pc.close();
              }
              throw ex;
            }
            if (pc != null) {
              pc.ep = e;
            }
            d.ep = e;
          } else {
            d = new WriteMirror(mirrorName, up, listener, ctx.writeShm().forwardedByReferenceCounter(), pool, pc);
            d.ep = pc.ep;
            WriteSegment kept = pc.segment();
            if (kept != null) {
              d.segment(kept);
            }
          }
          d.requestId = id;
          if (pc != null) {
            pc.lend(d, id);
            if (!fresh && !pc.isOpen()) {
              // it closed between take and lend: its close went to no write, so this one would wait in vain
              d.close(false);
              continue;
            }
          }
          mirror = d;
          Endpoint e = d.ep;
          if (askSegment && fresh) { // answered apart from the write (its own request id), read after the WRITE_RESPONSE
            e.send(MessageCodec.encode(e.transport().allocator(), MessageKind.WRITE_SHM_REQUEST,
                WriteMirror.SEGMENT_REQUEST_ID, WriteSegment.request(block, BlockOps.token(op))));
          }
          connecting = false;
          e.send(MessageCodec.encode(e.transport().allocator(), MessageKind.WRITE_REQUEST,
              id, BlockOps.forwardWriteBlock(op), null));
          if (!localOpened) {
            // the local replica while the DataNodes downstream set up theirs: the request went on
            // first, so this node's createRbw no longer adds to the pipeline's set-up time. Refused
            // here, the write ends as any refusal: the task's clean-up closes this connection, and the
            // downstream ends its write as when an upstream goes
            localOpened = true;
            String refused = openLocal(op);
            if (refused != null) {
              return refuse(Status.ERROR, refused, true);
            }
          }
          try {
            resp = d.response.get(leftMs(deadline), TimeUnit.MILLISECONDS);
            break;
          } catch (ExecutionException ex) {
            if (fresh) {
              throw ex;
            }
            // the pooled connection closed or was refused before this write's set-up: nothing was sent
            // on it but the request, so a new connection carries the write from its start
            LOG.debug("hrdma datanode: the pooled connection to {} failed ({}); connecting anew", mirrorName,
                ex.getCause().toString());
            mirror = null;
            d.close(false);
          }
        }
      } catch (IOException | ExecutionException | TimeoutException | RuntimeException e) {
        Throwable t = e instanceof ExecutionException ? e.getCause() : e;
        if (connecting && fromClient) {
          unreachable = t; // stock's protocol next, within what is left of the deadline
          DownstreamMirror m = mirror;
          if (m != null) { // connected, but a send before the request failed
            m.close(false);
          }
          mirror = null;
        } else {
          LOG.warn("hrdma datanode: cannot set up the pipeline of {} to {}: {}", block, mirrorName, t.toString());
          sendUp(MessageKind.WRITE_RESPONSE, BlockOps.writeResponse(Status.ERROR, mirrorName,
              "DataNode " + dn.datanodeUuid() + " cannot reach " + mirrorName + ": " + t.getMessage()));
          return false;
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return refuse(Status.ERROR, "DataNode " + dn.datanodeUuid() + " is stopping", true);
      }
      if (unreachable != null) {
        StockMirror s;
        try {
          s = new StockMirror(dn.connectStock(op, deadline), listener, String.valueOf(block));
        } catch (IOException | RuntimeException e) {
          return unreachable(unreachable, e);
        }
        mirror = s;
        if (!localOpened) {
          localOpened = true; // as over our transports: while the downstream sets up its replica
          String refused = openLocal(op);
          if (refused != null) {
            return refuse(Status.ERROR, refused, true);
          }
        }
        try {
          resp = s.response(deadline);
        } catch (IOException | RuntimeException e) {
          return unreachable(unreachable, e);
        }
        if (ctx.forwardedOverStock(next.getDatanodeUuid())) {
          LOG.info("hrdma datanode: forwarding writes to {} over the data transfer protocol: not reachable over"
              + " hrdma ({})", mirrorName, unreachable.toString());
        }
        if (resp.getStatus() == Status.SUCCESS) {
          s.start();
        }
        fresh = false; // no write segment: that is ours
      } else {
        ctx.forwardedOverHrdma(next.getDatanodeUuid());
      }
      // stock's DataNodes relay and ack heartbeats (their answer carries no field saying so)
      downstreamHeartbeats = unreachable != null || BlockOps.takesHeartbeats(resp);
      if (resp.getStatus() != Status.SUCCESS) {
        // as stock: pass the downstream's status and firstBadLink up
        sendUp(MessageKind.WRITE_RESPONSE, BlockOps.writeResponse(resp.getStatus(), resp.getFirstBadLink(),
            resp.getMessage()));
        return false;
      }
      if (askSegment && fresh) {
        // mapped once the WRITE_RESPONSE is out (mapSegmentLater): the set-up does not wait for it
        d.mapping(true);
        segmentMirror = d;
        segmentFrom = next;
        segmentToken = BlockOps.token(op);
      }
    }
    LOG.info("hrdma datanode: receiving {} from {}{}", block, up.remoteAddress(),
        mirrorName == null ? "" : ", mirror " + mirrorName);
    return true;
  }

  /**
   * The next DataNode could be reached neither over our transports ({@code hrdma}) nor over
   * stock's protocol ({@code stock}): as stock's DataXceiver when its mirror fails, ERROR with
   * that DataNode as firstBadLink.
   */
  private boolean unreachable(Throwable hrdma, Throwable stock) {
    LOG.warn("hrdma datanode: cannot set up the pipeline of {} to {} over hrdma ({}) nor over the data transfer"
        + " protocol ({})", block, mirrorName, hrdma.toString(), stock.toString());
    sendUp(MessageKind.WRITE_RESPONSE, BlockOps.writeResponse(Status.ERROR, mirrorName,
        "DataNode " + dn.datanodeUuid() + " cannot reach " + mirrorName + ": " + stock.getMessage()
        + " (over hrdma: " + hrdma.getMessage() + ")"));
    return false;
  }

  /** Milliseconds left until {@code deadline} (a {@link System#nanoTime()}), never negative. */
  private static long leftMs(long deadline) {
    return Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
  }

  /**
   * How long a DataNode with {@code downstream} DataNodes after it waits for its mirror's set-up
   * (stock's DataXceiver: the socket timeout and 5 s per target); the client waits longer
   * ({@code RdmaBlockWriter}: its timeout and 5 s per DataNode of the pipeline).
   */
  static long mirrorSetupMs(long setupTimeoutMs, int downstream) {
    return setupTimeoutMs + 5000L * downstream;
  }

  /**
   * Creates or recovers this node's replica ({@link #openReplica}); the reason to refuse the
   * write (this node's problem), or null. A write abandoned meanwhile (a slow volume, upstream
   * gone) is refused too: the replica stays RBW, as stock's when its client goes.
   */
  private String openLocal(OpWriteBlockProto op) {
    try {
      openReplica(op);
    } catch (VirtualMachineError e) {
      throw e;
    } catch (IOException | RuntimeException | Error e) {
      // an Error too (a dataset is pluggable code): stock's DataXceiver ends on any Throwable and
      // its client learns at once; unanswered, ours would wait out its set-up timeout
      return "DataNode " + dn.datanodeUuid() + " cannot " + (stage == BlockConstructionStage.PIPELINE_SETUP_CREATE
          ? "create " : "recover (" + stage + ") ") + block + ": " + e;
    }
    return task.abandoned() ? "the write of " + block + " was abandoned during its set-up" : null;
  }

  /**
   * Who a connection to the next DataNode at {@code address} is authenticated as, for
   * {@link MirrorPool}: nobody (no protection, or a trusted channel), this DataNode's data
   * encryption key, or the block token's owner (its SASL identity is the token; a connection
   * proved with one user's token carries only that user's writes, each checked with its own token).
   */
  private MirrorPool.Key mirrorKey(InetSocketAddress address, WireProtection wire, ClientGate.Credentials creds)
      throws IOException {
    String pool = block.getBlockPoolId();
    String who = switch (wire.mode()) {
      case NONE -> pool;
      case ENCRYPT -> pool + "/key " + (creds.key() == null ? "none" : creds.key().keyId);
      case SASL -> pool + "/user " + (creds.token() == null ? "" : creds.token().decodeIdentifier().getUserId());
    };
    return new MirrorPool.Key(address, wire.mode(), who);
  }

  /**
   * After the WRITE_RESPONSE went upstream: the next DataNode's write segment of a new connection
   * is fetched and mapped on {@code executor} (a set-up thread: the fetch waits on that DataNode's
   * domain socket), or here when the executor takes no more. Until it is mapped the packets go on
   * by value, as when no slot is free; once mapped the connection forwards by reference, this
   * write's later packets and, kept by the pool, the next writes' (a write that ends first gives
   * its connection back with the segment still coming). The set-up no longer waits for the fetch
   * and the mapping (4-40 ms on this machine) before answering.
   */
  void mapSegmentLater(java.util.concurrent.Executor executor) {
    WriteMirror d = segmentMirror;
    if (d == null) {
      return;
    }
    segmentMirror = null;
    Runnable map = () -> {
      try {
        mapSegment(d, segmentFrom, segmentToken);
      } finally {
        d.mapping(false);
      }
    };
    try {
      executor.execute(map);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      map.run();
    }
  }

  /**
   * The next DataNode's answer to WRITE_SHM_REQUEST: with a grant, its descriptor is fetched from
   * that DataNode's domain socket and mapped, and the mirror forwards by reference from now on;
   * any refusal or failure leaves it forwarding by value.
   */
  private void mapSegment(WriteMirror d, DatanodeInfo next,
      org.apache.hadoop.security.token.Token<org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier> token) {
    Message m = null;
    try {
      m = d.takeSegmentAnswer(ctx.setupTimeoutMs());
      if (m.kind() != MessageKind.WRITE_SHM_GRANT) {
        LOG.debug("hrdma datanode: forwarding {} to {} by value: {}", block, mirrorName, m.error().getMessage());
        return;
      }
      WriteShmGrants g = ctx.writeShm();
      SegmentFetch.Request r = new SegmentFetch.Request(ShortCircuitSocket.path(dn.conf(), next.getXferPort()),
          dn.conf().getBoolean(SocketPaths.ALLOW_STICKY_KEY, SocketPaths.ALLOW_STICKY_DEFAULT), block, token,
          ctx.setupTimeoutMs());
      WriteSegment s = WriteSegment.open(m.writeShmGrant(), r, d.ep.transport().allocator(), g::forwardUnmapped);
      g.forwardMapped();
      d.segment(s);
    } catch (IOException | RuntimeException e) {
      LOG.warn("hrdma datanode: forwarding {} to {} by value: no write segment: {}", block, mirrorName,
          e.toString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      if (m != null) {
        m.release();
      }
    }
  }

  /**
   * The replica this write goes to, by stage (stock BlockReceiver's
   * constructor, DataXceiver for PIPELINE_CLOSE_RECOVERY).
   */
  private void openReplica(OpWriteBlockProto op) throws IOException {
    long newGs = op.getLatestGenerationStamp();
    switch (stage) {
      case PIPELINE_SETUP_CREATE -> {
        // the dataset gets the client's length hint, as stock's DataXceiver gives it (the file's
        // block size; 0: this DataNode's): it reserves that much and chooses a volume with room
        // for it. Our preallocation stays bounded by this DataNode's block size.
        ExtendedBlock create = new ExtendedBlock(block);
        create.setNumBytes(lengthHint(block.getNumBytes(), dn.estimatedBlockSize()));
        replica = dn.createRbw(BlockOps.storageType(op), BlockOps.storageId(op), create, false);
        task.registerWriter(replica);
        replica.openStreams(checksum);
        reserveBytes = reservation(block.getNumBytes(), dn.estimatedBlockSize());
      }
      case PIPELINE_SETUP_STREAMING_RECOVERY -> {
        // truncated to what every node acknowledged; the client sends the unacknowledged packets again
        replica = dn.recoverRbw(block, newGs, op.getMinBytesRcvd(), op.getMaxBytesRcvd());
        task.registerWriter(replica);
        block.setGenerationStamp(newGs);
        replica.openStreamsForRecovery(checksum);
        reserveBytes = dn.estimatedBlockSize(); // hrdma disk: as for a new replica
        startOffset = replica.bytesOnDisk();
        LOG.info("hrdma datanode: recovered {} at {} bytes for a new pipeline", block, startOffset);
      }
      case PIPELINE_CLOSE_RECOVERY -> {
        // every byte was acknowledged; only the close failed: finalize with the new generation stamp
        DataNodeAccess.ClosedReplica c = dn.recoverClose(block, newGs, op.getMinBytesRcvd());
        block.setGenerationStamp(newGs);
        block.setNumBytes(op.getMinBytesRcvd());
        dn.blockReceived(block, c.storageUuid(), c.onTransientStorage());
        LOG.info("hrdma datanode: finalized {} in a close recovery", block);
      }
      default -> throw new AssertionError(stage);
    }
  }

  /**
   * The replica's disk stream (preallocation, O_DIRECT where it can), through its volume's
   * scheduler: on the volume's write thread, after {@link #run()}, so a hung volume stalls
   * only its own writes. A {@code cache-first} volume keeps only the first replica of a
   * pipeline in the page cache.
   */
  void openDisk() {
    disk = ctx.disk().openWrite(replica, reserveBytes, firstOfPipeline); // hrdma disk
    replica.setDirectWriter(disk);
  }

  /**
   * Answers WRITE_RESPONSE with {@code status}; {@code local}: the problem is
   * this DataNode's, which it names as firstBadLink (as stock names a node
   * that refuses a token) so that the client leaves it out of the next pipeline.
   */
  private boolean refuse(Status status, String message, boolean local) {
    LOG.warn("hrdma datanode: refusing write of {}: {}", block, message);
    String self = "";
    if (local) {
      try {
        self = dn.registeredXferAddr(block.getBlockPoolId());
      } catch (IOException ignored) {
        // not registered: no address to name
      }
    }
    sendUp(MessageKind.WRITE_RESPONSE, BlockOps.writeResponse(status, self, message));
    return false;
  }

  /**
   * What our disk path preallocates for a new replica (stock preallocates nothing): the
   * client's numBytes is only its word, so it counts only up to the block size this DataNode
   * knows (dfs.blocksize); 0 or less, or more, takes that block size.
   */
  static long reservation(long clientBytes, long blockSize) {
    return clientBytes > 0 && clientBytes <= blockSize ? clientBytes : blockSize;
  }

  /**
   * The length a new replica is created with ({@code createRbw}): the client's numBytes, the
   * file's block size, as stock's DataXceiver#writeBlock passes it on; 0 (stock) or less takes
   * this DataNode's block size. A length no volume has room for is refused by the dataset
   * (DiskOutOfSpaceException), as stock. (Stock's NameNode sets no upper limit on a file's block
   * size, so there is none to bound this by; a client can ask stock's own port for the same.)
   */
  static long lengthHint(long clientBytes, long blockSize) {
    return clientBytes > 0 ? clientBytes : blockSize;
  }
}
