package org.hdfsrdma.client.compat;

import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.DFSClient;
import org.apache.hadoop.hdfs.DFSUtilClient;
import org.apache.hadoop.hdfs.protocol.ClientProtocol;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.datatransfer.DataTransferProtoUtil;
import org.apache.hadoop.hdfs.protocol.datatransfer.IOStreamPair;
import org.apache.hadoop.hdfs.protocol.datatransfer.Sender;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocolPB.PBHelperClient;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.io.IOUtils;
import org.apache.hadoop.net.NetUtils;
import org.apache.hadoop.security.token.Token;

/**
 * The stock data-transfer protocol's TRANSFER_BLOCK, for pipeline recovery:
 * asks a DataNode that holds the replica being written to copy it (up to its
 * acknowledged length) to a DataNode the NameNode added to the pipeline. The
 * copy runs between the two stock DataNodes (their DataTransfer thread and
 * xceiver, stage TRANSFER_RBW), exactly as for the stock client's
 * DataStreamer#transfer; a recovery is rare, so the stock path serves it.
 *
 * <p>Every call into hdfs-client classes that are not a public API sits here
 * (Sender, SaslDataTransferClient, PBHelperClient).
 */
public final class StockTransfer {
  private StockTransfer() {}

  /**
   * Copies {@code block}'s replica on {@code source} to {@code target}; returns
   * once the target acknowledged it (the stock DataNode answers after the copy).
   *
   * @throws IOException the connection or the copy failed, or the source refused
   */
  public static void transfer(DFSClient client, Configuration conf, DatanodeInfo source, ExtendedBlock block,
      Token<BlockTokenIdentifier> token, DatanodeInfo target, StorageType targetType, String targetStorageId,
      int timeoutMs) throws IOException {
    // the socket factory the DFSClient itself uses for DataNodes
    Socket sock = NetUtils.getSocketFactory(conf, ClientProtocol.class).createSocket();
    try {
      NetUtils.connect(sock, NetUtils.createSocketAddr(source.getXferAddr()), timeoutMs);
      sock.setSoTimeout(timeoutMs);
      OutputStream rawOut = NetUtils.getOutputStream(sock, timeoutMs);
      InputStream rawIn = NetUtils.getInputStream(sock, timeoutMs);
      IOStreamPair sasl = client.getSaslDataTransferClient().socketSend(sock, rawOut, rawIn, client, token, source);
      DataOutputStream out = new DataOutputStream(new BufferedOutputStream(sasl.out,
          DFSUtilClient.getSmallBufferSize(conf)));
      DataInputStream in = new DataInputStream(sasl.in);
      new Sender(out).transferBlock(block, token, client.getClientName(), new DatanodeInfo[] {target},
          new StorageType[] {targetType}, new String[] {targetStorageId});
      out.flush();
      BlockOpResponseProto resp = BlockOpResponseProto.parseFrom(PBHelperClient.vintPrefixed(in));
      DataTransferProtoUtil.checkBlockOpStatus(resp, "transfer of " + block + " from " + source + " to " + target);
    } finally {
      IOUtils.closeSocket(sock);
    }
  }
}
