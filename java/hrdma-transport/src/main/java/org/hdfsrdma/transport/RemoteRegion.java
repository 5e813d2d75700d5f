package org.hdfsrdma.transport;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import org.hdfsrdma.proto.HrdmaProtos.RemoteRegionProto;

/**
 * Describes a peer's buffer exposed for one-sided access: its address, length
 * and the transport's packed remote key. Immutable.
 */
public record RemoteRegion(long address, long length, byte[] rkey) {

  /** Largest packed key accepted from the wire (UCX keys are a few hundred bytes). */
  public static final int MAX_RKEY = 4096;

  public RemoteRegionProto toProto() {
    return RemoteRegionProto.newBuilder()
        .setAddress(address)
        .setLength(length)
        .setRkey(ByteString.copyFrom(rkey))
        .build();
  }

  public byte[] toBytes() {
    return toProto().toByteArray();
  }

  /** Parses and bounds-checks a descriptor received from a peer. */
  public static RemoteRegion fromBytes(byte[] bytes) throws TransportException {
    try {
      RemoteRegionProto p = RemoteRegionProto.parseFrom(bytes);
      if (p.getRkey().size() > MAX_RKEY || p.getLength() < 0) {
        throw new TransportException.Protocol("bad remote region descriptor");
      }
      return new RemoteRegion(p.getAddress(), p.getLength(), p.getRkey().toByteArray());
    } catch (InvalidProtocolBufferException e) {
      throw new TransportException.Protocol("bad remote region descriptor: " + e.getMessage());
    }
  }

  /** Throws unless [offset, offset + len) lies inside this region. */
  public void checkRange(long offset, long len) throws TransportException {
    if (offset < 0 || len < 0 || offset > length || len > length - offset) {
      throw new TransportException.Protocol(
          "access [" + offset + ", +" + len + ") outside remote region of " + length + " bytes");
    }
  }
}
