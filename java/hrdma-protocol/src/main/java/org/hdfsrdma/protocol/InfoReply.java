package org.hdfsrdma.protocol;

import java.io.IOException;
import java.net.ProtocolException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.thirdparty.protobuf.CodedInputStream;
import org.apache.hadoop.thirdparty.protobuf.CodedOutputStream;
import org.apache.hadoop.thirdparty.protobuf.WireFormat;

/**
 * The header of an {@link MessageKind#INFO_REPLY}: who the DataNode is. Our
 * own message (HDFS has none for this), encoded in protobuf wire format as
 *
 * <pre>
 * message InfoReply {
 *   optional string datanodeUuid = 1;
 *   optional uint32 xferPort = 2;
 *   repeated string blockPoolIds = 3;
 * }
 * </pre>
 *
 * Unknown fields are skipped (a later version may add some).
 */
public record InfoReply(String datanodeUuid, int xferPort, List<String> blockPoolIds) {
  /** No reply lists more block pools. */
  public static final int MAX_POOLS = 1024;

  public InfoReply {
    blockPoolIds = List.copyOf(blockPoolIds);
    if (blockPoolIds.size() > MAX_POOLS) {
      throw new IllegalArgumentException(blockPoolIds.size() + " block pools exceed " + MAX_POOLS);
    }
  }

  int serializedSize() {
    int n = CodedOutputStream.computeStringSize(1, datanodeUuid)
        + CodedOutputStream.computeUInt32Size(2, xferPort);
    for (String p : blockPoolIds) {
      n += CodedOutputStream.computeStringSize(3, p);
    }
    return n;
  }

  void writeTo(CodedOutputStream out) throws IOException {
    out.writeString(1, datanodeUuid);
    out.writeUInt32(2, xferPort);
    for (String p : blockPoolIds) {
      out.writeString(3, p);
    }
  }

  static InfoReply parse(CodedInputStream in) throws ProtocolException {
    String uuid = "";
    int port = 0;
    List<String> pools = new ArrayList<>();
    try {
      while (true) {
        int tag = in.readTag();
        if (tag == 0) {
          break;
        }
        switch (tag) {
          case (1 << 3) | WireFormat.WIRETYPE_LENGTH_DELIMITED -> uuid = in.readStringRequireUtf8();
          case (2 << 3) | WireFormat.WIRETYPE_VARINT -> port = in.readUInt32();
          case (3 << 3) | WireFormat.WIRETYPE_LENGTH_DELIMITED -> {
            if (pools.size() == MAX_POOLS) {
              throw new ProtocolException("INFO_REPLY lists more than " + MAX_POOLS + " block pools");
            }
            pools.add(in.readStringRequireUtf8());
          }
          default -> {
            if (!in.skipField(tag)) {
              throw new ProtocolException("INFO_REPLY header: end-group tag " + tag);
            }
          }
        }
      }
    } catch (ProtocolException e) {
      throw e;
    } catch (IOException e) {
      throw new ProtocolException("INFO_REPLY header is not a valid protobuf message: " + e.getMessage());
    }
    if (port < 0 || port > 65535) {
      throw new ProtocolException("INFO_REPLY names xfer port " + port);
    }
    return new InfoReply(uuid, port, pools);
  }
}
