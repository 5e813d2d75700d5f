package org.hdfsrdma.datanode.compat;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ReadableByteChannel;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier.AccessMode;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.ReplicaHandler;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsDatasetSpi;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.FsVolumeSpi;
import org.apache.hadoop.hdfs.server.datanode.fsdataset.LengthInputStream;
import org.apache.hadoop.hdfs.server.protocol.DatanodeRegistration;
import org.apache.hadoop.security.token.SecretManager.InvalidToken;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.protocol.compat.BlockTokenIdentifiers;

/**
 * A facade over the public methods of a stock {@link DataNode} that the
 * plugin's data path needs. Every call into DataNode internals goes through
 * here (see the package comment).
 *
 * <p>Thread-safe as far as the DataNode's own methods are: it holds no state
 * beyond the DataNode.
 */
public final class DataNodeAccess {
  private final DataNode dn;

  private DataNodeAccess(DataNode dn) {
    this.dn = dn;
  }

  /**
   * Wraps the object a {@code ServicePlugin} is started with.
   *
   * @throws IllegalArgumentException when {@code service} is not a DataNode
   */
  public static DataNodeAccess of(Object service) {
    if (service instanceof DataNode d) {
      return new DataNodeAccess(d);
    }
    throw new IllegalArgumentException("not a DataNode: "
        + (service == null ? "null" : service.getClass().getName()));
  }

  /** The DataNode's configuration (its own copy, with hdfs-site.xml loaded). */
  public Configuration conf() {
    return dn.getConf();
  }

  /**
   * True once the dataset and the DataNode UUID exist. Inside
   * {@code ServicePlugin.start()} neither does yet: the dataset is created
   * when the first NameNode handshake completes (DataNode#initStorage).
   */
  public boolean isReady() {
    return dn.getFSDataset() != null && dn.getDatanodeUuid() != null;
  }

  /** The DataNode UUID, or null before its storage is loaded. */
  public String datanodeUuid() {
    return dn.getDatanodeUuid();
  }

  /** The port of the stock data-transfer (xceiver) server, as registered with the NameNode. */
  public int xferPort() {
    return dn.getXferPort();
  }

  /** The address the stock data-transfer server listens on (may be the wildcard). */
  public InetSocketAddress xferAddress() {
    return dn.getXferAddress();
  }

  /** The block pools this DataNode's volumes hold, sorted; empty before the dataset exists. */
  public List<String> blockPoolIds() {
    FsDatasetSpi<?> data = dn.getFSDataset();
    if (data == null) {
      return List.of();
    }
    TreeSet<String> ids = new TreeSet<>();
    try (FsDatasetSpi.FsVolumeReferences volumes = data.getFsVolumeReferences()) {
      for (FsVolumeSpi v : volumes) {
        Collections.addAll(ids, v.getBlockPoolList());
      }
    } catch (IOException e) {
      // closing volume references does not fail in practice; the ids are read already
    }
    return List.copyOf(ids);
  }

  /**
   * The DataNode's secrets for the data transfer protection handshake, from its
   * BlockPoolTokenSecretManager as stock's SaslDataTransferServer takes them: a data
   * encryption key by id, block pool and nonce; a block token's password, which refuses an
   * expired token or an unknown key (InvalidToken).
   */
  public org.hdfsrdma.protocol.wire.ServerGate.Secrets wireSecrets() {
    return new org.hdfsrdma.protocol.wire.ServerGate.Secrets() {
      @Override
      public byte[] encryptionKey(int keyId, String blockPoolId, byte[] nonce) throws IOException {
        return dn.getBlockPoolTokenSecretManager().retrieveDataEncryptionKey(keyId, blockPoolId, nonce);
      }

      @Override
      public byte[] tokenPassword(BlockTokenIdentifier id) throws IOException {
        return dn.getBlockPoolTokenSecretManager().retrievePassword(id);
      }
    };
  }

  /**
   * A data encryption key for forwarding {@code block} to the next DataNode, made by this
   * DataNode as stock's DataNode makes one for its own transfers; null when encryption is off.
   */
  public org.apache.hadoop.hdfs.security.token.block.DataEncryptionKey dataEncryptionKey(ExtendedBlock block)
      throws IOException {
    return dn.getDataEncryptionKeyFactoryForBlock(block).newDataEncryptionKey();
  }

  /**
   * Whether block access tokens are checked for this block pool. As in the
   * stock DataNode this is the NameNode's decision, carried in the
   * registration's exported keys, not the DataNode's own configuration.
   *
   * @throws IOException the DataNode has not registered with the block pool's NameNode (yet)
   */
  public boolean blockTokenEnabled(String blockPoolId) throws IOException {
    DatanodeRegistration reg = dn.getDNRegistrationForBP(blockPoolId);
    return reg.getExportedKeys() != null && reg.getExportedKeys().isBlockTokenEnabled();
  }

  /**
   * Checks a block access token exactly as the stock DataXceiver does
   * (no user check), when tokens are enabled for the block's pool; does
   * nothing otherwise.
   *
   * @throws InvalidToken the token is missing, malformed, expired, for another
   *     block or mode, or its password does not match
   * @throws IOException the block pool is not registered (yet)
   */
  public void checkBlockToken(Token<BlockTokenIdentifier> token, ExtendedBlock block, AccessMode mode)
      throws IOException {
    checkBlockToken(token, block, mode, null, null);
  }

  /** As {@link #checkBlockToken(Token, ExtendedBlock, AccessMode)}, with the target storages of a write. */
  public void checkBlockToken(Token<BlockTokenIdentifier> token, ExtendedBlock block, AccessMode mode,
      StorageType[] storageTypes, String[] storageIds) throws IOException {
    if (!blockTokenEnabled(block.getBlockPoolId())) {
      return;
    }
    if (token == null) {
      throw new InvalidToken("no block token for " + block + " (" + mode + ")");
    }
    try {
      // Hadoop's parse of the identifier allocates the lengths it claims before reading them
      BlockTokenIdentifiers.checkBounds(token.getIdentifier());
      dn.getBlockPoolTokenSecretManager().checkAccess(token, null, block, mode, storageTypes, storageIds);
    } catch (InvalidToken e) {
      InvalidToken t = new InvalidToken("block token rejected for " + block + " (" + mode + "): "
          + e.getMessage());
      t.initCause(e);
      throw t;
    }
  }

  /** The visible (acknowledged) length of a replica this DataNode holds. */
  public long replicaVisibleLength(ExtendedBlock block) throws IOException {
    return dataset().getReplicaVisibleLength(block);
  }

  /** Where a finalized replica's files are; {@code block}'s length is its visible length. */
  public record LocalPaths(ExtendedBlock block, String data, String meta) {}

  /**
   * The files of a finalized replica ({@code FsDatasetSpi#getBlockLocalPathInfo}),
   * for the plugin's short-circuit server, which opens them itself and hands
   * out only the descriptors: the paths never leave the DataNode.
   *
   * @throws IOException no finalized replica of {@code block} here
   */
  public LocalPaths localPaths(ExtendedBlock block) throws IOException {
    FsDatasetSpi<?> d = dataset();
    if (!d.isValidBlock(block)) {
      throw new IOException(block + " has no finalized replica on " + dn.getDisplayName());
    }
    org.apache.hadoop.hdfs.protocol.BlockLocalPathInfo info = d.getBlockLocalPathInfo(block);
    ExtendedBlock b = new ExtendedBlock(info.getBlock());
    b.setNumBytes(d.getReplicaVisibleLength(block));
    return new LocalPaths(b, info.getBlockPath(), info.getMetaPath());
  }

  /**
   * Whether the DataNode caches (mmaps and mlocks) the replica, by a cache
   * directive of the NameNode's centralized cache management
   * ({@code FsDatasetSpi#isCached}, what stock's short-circuit slot is marked
   * anchorable by). The DataNode verified its checksums when it cached it.
   */
  public boolean isCached(ExtendedBlock block) throws IOException {
    return dataset().isCached(block.getBlockPoolId(), block.getBlockId());
  }

  /** The replica's block file from {@code offset}; the caller closes it. */
  public InputStream blockInputStream(ExtendedBlock block, long offset) throws IOException {
    return dataset().getBlockInputStream(block, offset);
  }

  /** A replica's .meta file (header + checksums) and its length. */
  public record MetaStream(InputStream in, long length) implements AutoCloseable {
    /** The stream as a channel that reads straight into (direct) buffers where the file allows. */
    public ReadableByteChannel channel() {
      return channelOf(in);
    }

    @Override
    public void close() throws IOException {
      in.close();
    }
  }

  /**
   * A channel over a stream the dataset returned: the file's own channel when
   * it is a local file (no copy through a heap array), else a wrapper.
   * Closing the channel closes the stream.
   */
  public static ReadableByteChannel channelOf(InputStream in) {
    InputStream s = in instanceof LengthInputStream l ? l.getWrappedStream() : in;
    if (s instanceof FileInputStream f) {
      return f.getChannel();
    }
    return Channels.newChannel(in);
  }

  /** The replica's .meta file, or null when it has none; the caller closes it. */
  public MetaStream metaInputStream(ExtendedBlock block) throws IOException {
    LengthInputStream in = dataset().getMetaDataInputStream(block);
    return in == null ? null : new MetaStream(in, in.getLength());
  }

  /**
   * Creates a replica-being-written for a new block on the given storage.
   * The returned replica holds a volume reference: close it.
   */
  public RbwReplica createRbw(StorageType storageType, String storageId, ExtendedBlock block,
      boolean allowLazyPersist) throws IOException {
    return newRbwReplica(dataset().createRbw(storageType, storageId, block, allowLazyPersist), block);
  }

  /**
   * Takes over a replica-being-written for a pipeline set up again after a
   * failure (stock BlockReceiver, PIPELINE_SETUP_STREAMING_RECOVERY): checks
   * that {@code block}'s replica is RBW with a generation stamp in
   * [block's, newGs] and an acknowledged length in [minBytesRcvd,
   * maxBytesRcvd], truncates it to the acknowledged length and bumps its
   * generation stamp to {@code newGs}. Close the returned replica.
   */
  public RbwReplica recoverRbw(ExtendedBlock block, long newGs, long minBytesRcvd, long maxBytesRcvd)
      throws IOException {
    return newRbwReplica(dataset().recoverRbw(block, newGs, minBytesRcvd, maxBytesRcvd), block);
  }

  /**
   * Data may skip the block file's stream unless the DataNode profiles its
   * file I/O or injects faults into it: only the stream reports to those.
   */
  private RbwReplica newRbwReplica(ReplicaHandler h, ExtendedBlock block) throws IOException {
    Configuration c = dn.getConf();
    boolean channelWrites = c.getInt(DFSConfigKeys.DFS_DATANODE_FILEIO_PROFILING_SAMPLING_PERCENTAGE_KEY,
        DFSConfigKeys.DFS_DATANODE_FILEIO_PROFILING_SAMPLING_PERCENTAGE_DEFAULT) <= 0
        && !c.getBoolean(DFSConfigKeys.DFS_DATANODE_ENABLE_FILEIO_FAULT_INJECTION_KEY,
            DFSConfigKeys.DFS_DATANODE_ENABLE_FILEIO_FAULT_INJECTION_DEFAULT);
    // a dataset whose replicas have no local files (SimulatedFSDataset) gives no ReplicaInfo:
    // the volume is then the one the dataset says holds the block
    FsVolumeSpi volume = h.getReplica().getReplicaInfo() != null ? h.getReplica().getReplicaInfo().getVolume()
        : dataset().getVolume(block);
    if (volume == null) {
      h.close();
      throw new IOException("the dataset gives no volume for " + block);
    }
    return new RbwReplica(h, volume, channelWrites, dn::checkDiskErrorAsync);
  }

  /** A replica finalized by {@link #recoverClose}: what the received-block report needs. */
  public record ClosedReplica(String storageUuid, boolean onTransientStorage) {}

  /**
   * Recovers a pipeline that failed while closing (stock DataXceiver,
   * PIPELINE_CLOSE_RECOVERY): finalizes the replica (RBW or already
   * finalized) with generation stamp {@code newGs}, checking its length
   * against {@code expectedLength}.
   */
  public ClosedReplica recoverClose(ExtendedBlock block, long newGs, long expectedLength) throws IOException {
    org.apache.hadoop.hdfs.server.datanode.Replica r = dataset().recoverClose(block, newGs, expectedLength);
    return new ClosedReplica(r.getStorageUuid(), r.isOnTransientStorage());
  }

  /**
   * Forwards the write {@code op} to its next DataNode over stock's DataTransferProtocol
   * ({@link StockWriteConnection}): connected, proved and the request sent by {@code deadline}
   * ({@link System#nanoTime()}).
   *
   * @throws IOException that DataNode could not be reached or refused the negotiation
   */
  public StockWriteConnection connectStock(
      org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.OpWriteBlockProto op, long deadline)
      throws IOException {
    return StockWriteConnection.open(dn, op, deadline);
  }

  /**
   * The xfer address ("ip:port") this DataNode registered with the block
   * pool's NameNode: what the stock DataXceiver names as {@code firstBadLink}
   * when it refuses a write's block token.
   */
  public String registeredXferAddr(String blockPoolId) throws IOException {
    return dn.getDNRegistrationForBP(blockPoolId).getXferAddr();
  }

  /**
   * This DataNode's SLOW state for an ack of a block of {@code blockPoolId}, as stock's
   * PacketResponder puts it in its own header (DataNode#getSLOWByBlockPoolId: DISABLED unless
   * {@code dfs.pipeline.slownode} is on, then SLOW when the NameNode reported it a slow node).
   */
  public org.apache.hadoop.hdfs.protocol.datatransfer.PipelineAck.SLOW slowState(String blockPoolId) {
    return dn.getSLOWByBlockPoolId(blockPoolId);
  }

  /**
   * This DataNode's ECN state for an ack, as stock's PacketResponder puts it in its own header
   * (DataNode#getECN, public since 3.5: DISABLED unless {@code dfs.pipeline.ecn} is on, then
   * CONGESTED when the system load average is over {@code dfs.pipeline.congestion.ratio} times
   * the available processors, else SUPPORTED).
   */
  public org.apache.hadoop.hdfs.protocol.datatransfer.PipelineAck.ECN ecnState() {
    return dn.getECN();
  }

  /** {@code dfs.datanode.synconclose}: fsync block and .meta files (and the directory) when a block is finalized. */
  public boolean syncOnClose() {
    return dn.getConf().getBoolean(org.apache.hadoop.hdfs.DFSConfigKeys.DFS_DATANODE_SYNCONCLOSE_KEY,
        org.apache.hadoop.hdfs.DFSConfigKeys.DFS_DATANODE_SYNCONCLOSE_DEFAULT);
  }

  /** The size reserved on the volume for a new replica whose length is unknown (stock: dfs.blocksize). */
  public long estimatedBlockSize() {
    return dn.getConf().getLongBytes(org.apache.hadoop.hdfs.DFSConfigKeys.DFS_BLOCK_SIZE_KEY,
        org.apache.hadoop.hdfs.DFSConfigKeys.DFS_BLOCK_SIZE_DEFAULT);
  }

  /** Moves a fully written replica to finalized (block.getNumBytes() is its length). */
  public void finalizeBlock(ExtendedBlock block, boolean fsyncDir) throws IOException {
    dataset().finalizeBlock(block, fsyncDir);
  }

  /**
   * The stock fault-injection point between finalizing a received block and
   * acking its last packet ({@code DataNodeFaultInjector#delayAckLastPacket},
   * where the stock PacketResponder calls it): a no-op outside tests; a test
   * injector may delay or throw, which fails that ack as on a real fault.
   */
  public void lastPacketFinalized() throws IOException {
    org.apache.hadoop.hdfs.server.datanode.DataNodeFaultInjector.get().delayAckLastPacket();
  }

  /**
   * What the stock DataNode does once a received block is finalized
   * (DataNode#closeBlock, package-private in 3.5.0): count it and queue an
   * incremental block report to the NameNode.
   */
  public void blockReceived(ExtendedBlock block, String storageUuid, boolean onTransientStorage) {
    dn.getMetrics().incrBlocksWritten();
    dn.notifyNamenodeReceivedBlock(block, null, storageUuid, onTransientStorage);
  }

  private FsDatasetSpi<?> dataset() throws IOException {
    FsDatasetSpi<?> data = dn.getFSDataset();
    if (data == null) {
      throw new IOException("the DataNode's dataset is not initialized yet");
    }
    return data;
  }

  @Override
  public String toString() {
    return "DataNode[" + dn.getDisplayName() + ", uuid=" + dn.getDatanodeUuid() + "]";
  }

  /** A volume of the dataset as the plugin's disk schedulers see it. */
  public record Volume(String storageId, StorageType storageType, String baseDir) {}

  /** The dataset's volumes (the stock FsVolumeSpi list), in volume order; empty before the dataset exists. */
  public List<Volume> volumes() {
    FsDatasetSpi<?> data = dn.getFSDataset();
    List<Volume> out = new ArrayList<>();
    if (data == null) {
      return out;
    }
    try (FsDatasetSpi.FsVolumeReferences volumes = data.getFsVolumeReferences()) {
      for (FsVolumeSpi v : volumes) {
        out.add(volume(v));
      }
    } catch (IOException e) {
      // see blockPoolIds()
    }
    return out;
  }

  static Volume volume(FsVolumeSpi v) {
    java.net.URI base = v.getBaseURI();
    String dir = base == null ? "" : "file".equals(base.getScheme()) ? new java.io.File(base).getPath()
        : base.toString();
    return new Volume(v.getStorageID(), v.getStorageType(), dir);
  }

  /** The volume holding a replica of {@code block}, or null when this DataNode has none. */
  public Volume volumeOf(ExtendedBlock block) throws IOException {
    FsVolumeSpi v = dataset().getVolume(block);
    return v == null ? null : volume(v);
  }

  /** The local path of a replica's block file (the stock short-circuit lookup). */
  public String blockPath(ExtendedBlock block) throws IOException {
    return dataset().getBlockLocalPathInfo(block).getBlockPath();
  }

  /** For diagnostics: the storage ids of the volumes, in volume order. */
  public List<String> storageIds() {
    FsDatasetSpi<?> data = dn.getFSDataset();
    List<String> out = new ArrayList<>();
    if (data == null) {
      return out;
    }
    try (FsDatasetSpi.FsVolumeReferences volumes = data.getFsVolumeReferences()) {
      for (FsVolumeSpi v : volumes) {
        out.add(v.getStorageID());
      }
    } catch (IOException e) {
      // see blockPoolIds()
    }
    return out;
  }

  /**
   * Runs {@code onEvictWriters} after each {@code dfsadmin -evictWriters} this DataNode serves,
   * and notes a {@code dfsadmin -shutdownDatanode <dn> upgrade} ({@link ClientDatanodeHook});
   * close the result to stop. Null when the DataNode has no IPC server.
   */
  public ClientDatanodeHook hookClientDatanodeProtocol(Runnable onEvictWriters) {
    return ClientDatanodeHook.install(dn, onEvictWriters);
  }

  /**
   * How long a replica left RBW with a restart marker stays so
   * ({@code dfs.datanode.restart.replica.expiration}, seconds, as stock's BlockReceiver reads it), in ms.
   */
  public long restartReplicaExpiryMs() {
    return dn.getConf().getLong(DFSConfigKeys.DFS_DATANODE_RESTART_REPLICA_EXPIRY_KEY,
        DFSConfigKeys.DFS_DATANODE_RESTART_REPLICA_EXPIRY_DEFAULT) * 1000L;
  }
}
