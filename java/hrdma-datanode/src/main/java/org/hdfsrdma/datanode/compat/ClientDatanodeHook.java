package org.hdfsrdma.datanode.compat;

import org.apache.hadoop.hdfs.protocol.proto.ClientDatanodeProtocolProtos.ClientDatanodeProtocolService;
import org.apache.hadoop.hdfs.protocol.proto.ClientDatanodeProtocolProtos.ShutdownDatanodeRequestProto;
import org.apache.hadoop.hdfs.protocolPB.ClientDatanodeProtocolPB;
import org.apache.hadoop.hdfs.protocolPB.ClientDatanodeProtocolServerSideTranslatorPB;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.ipc.RPC;
import org.apache.hadoop.thirdparty.protobuf.BlockingService;
import org.apache.hadoop.thirdparty.protobuf.Descriptors.MethodDescriptor;
import org.apache.hadoop.thirdparty.protobuf.Descriptors.ServiceDescriptor;
import org.apache.hadoop.thirdparty.protobuf.Message;
import org.apache.hadoop.thirdparty.protobuf.RpcController;
import org.apache.hadoop.thirdparty.protobuf.ServiceException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells the plugin what the DataNode's ClientDatanodeProtocol serves that concerns its writes:
 * {@code hdfs dfsadmin -evictWriters} ({@code evictWriters}), so that it evicts its own writes
 * as stock's {@code DataXceiverServer#stopWriters} evicts the DataNode's xceivers, and
 * {@code hdfs dfsadmin -shutdownDatanode <dn> upgrade} ({@code shutdownDatanode} for an
 * upgrade), so that when the DataNode stops the plugin, it restarts its writes as stock's
 * {@code DataXceiverServer#sendOOBToPeers} does. The DataNode offers no listener, metric or
 * callback for either (its eviction walks the xceiver server's private peer table; its
 * upgrade flag is package-private), so this registers, on the DataNode's own IPC server
 * ({@code DataNode#ipcServer}, a public field; {@code RPC.Server#addProtocol}, public), the
 * DataNode's ClientDatanodeProtocol service built exactly as {@code DataNode#initIpcServer}
 * builds it, wrapped: every call goes to it unchanged (authorization, superuser check and
 * stock's own handling included). After an {@code evictWriters} that succeeded the listener
 * runs. A {@code shutdownDatanode} for an upgrade is noted before the call goes on (the
 * DataNode starts stopping, plugins first, on its own thread before the call returns) and
 * forgotten if the DataNode refused it. Registering again for the same protocol replaces the
 * map entry's value only (no structural change of the server's map), so calls served meanwhile
 * take the one or the other, both the DataNode's. {@link #close()} puts the plain service back.
 * Thread-safe.
 */
public final class ClientDatanodeHook implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ClientDatanodeHook.class);
  private static final String EVICT_WRITERS = "evictWriters";
  private static final String SHUTDOWN_DATANODE = "shutdownDatanode";

  private final RPC.Server server;
  private final BlockingService plain;
  private volatile boolean shutdownForUpgrade;

  private ClientDatanodeHook(RPC.Server server, BlockingService plain) {
    this.server = server;
    this.plain = plain;
  }

  /** Installs the hook on {@code dn}'s IPC server; null when the DataNode has none (not started). */
  static ClientDatanodeHook install(DataNode dn, Runnable onEvictWriters) {
    RPC.Server server = dn.ipcServer;
    if (server == null) {
      return null;
    }
    BlockingService plain = ClientDatanodeProtocolService.newReflectiveBlockingService(
        new ClientDatanodeProtocolServerSideTranslatorPB(dn));
    ClientDatanodeHook hook = new ClientDatanodeHook(server, plain);
    BlockingService hooked = new BlockingService() {
      @Override
      public ServiceDescriptor getDescriptorForType() {
        return plain.getDescriptorForType();
      }

      @Override
      public Message callBlockingMethod(MethodDescriptor method, RpcController controller, Message request)
          throws ServiceException {
        boolean upgrade = SHUTDOWN_DATANODE.equals(method.getName())
            && request instanceof ShutdownDatanodeRequestProto r && r.getForUpgrade();
        if (upgrade) {
          hook.shutdownForUpgrade = true;
        }
        Message response;
        try {
          response = plain.callBlockingMethod(method, controller, request);
        } catch (ServiceException | RuntimeException e) {
          if (upgrade) {
            hook.shutdownForUpgrade = false; // refused (not a superuser, or a shutdown in progress)
          }
          throw e;
        }
        if (EVICT_WRITERS.equals(method.getName())) {
          try {
            onEvictWriters.run();
          } catch (RuntimeException e) {
            LOG.warn("hrdma datanode plugin: evicting its writers failed", e); // stock's were evicted
          }
        }
        return response;
      }

      @Override
      public Message getRequestPrototype(MethodDescriptor method) {
        return plain.getRequestPrototype(method);
      }

      @Override
      public Message getResponsePrototype(MethodDescriptor method) {
        return plain.getResponsePrototype(method);
      }
    };
    server.addProtocol(RPC.RpcKind.RPC_PROTOCOL_BUFFER, ClientDatanodeProtocolPB.class, hooked);
    return hook;
  }

  /** Whether the DataNode accepted (or is serving) {@code shutdownDatanode} for an upgrade. */
  public boolean shutdownForUpgrade() {
    return shutdownForUpgrade;
  }

  /** Puts the DataNode's plain service back. */
  @Override
  public void close() {
    server.addProtocol(RPC.RpcKind.RPC_PROTOCOL_BUFFER, ClientDatanodeProtocolPB.class, plain);
  }
}
