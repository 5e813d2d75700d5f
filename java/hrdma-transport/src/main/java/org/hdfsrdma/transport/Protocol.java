package org.hdfsrdma.transport;

/** Transport protocol constants shared by every transport. */
public final class Protocol {
  private Protocol() {}

  /** Version carried in every hello; a peer with another version is refused. */
  public static final int VERSION = 1;

  /** Largest hello or control message accepted before the hello is done. */
  public static final int MAX_CONTROL_MESSAGE = 64 * 1024;

  /**
   * A server's failed hello reply: {@code status} with {@code error}; a REFUSED one carries
   * refusal STARTING when {@code error} is {@link EndpointHandler#REFUSED_STARTING} (an
   * {@link EndpointHandler#admit} answer).
   */
  public static org.hdfsrdma.proto.HrdmaProtos.HelloReply failureReply(
      org.hdfsrdma.proto.HrdmaProtos.HelloReply.Status status, String error) {
    org.hdfsrdma.proto.HrdmaProtos.HelloReply.Builder b = org.hdfsrdma.proto.HrdmaProtos.HelloReply.newBuilder()
        .setVersion(VERSION)
        .setStatus(status)
        .setError(error);
    if (status == org.hdfsrdma.proto.HrdmaProtos.HelloReply.Status.REFUSED
        && EndpointHandler.REFUSED_STARTING.equals(error)) {
      b.setRefusal(org.hdfsrdma.proto.HrdmaProtos.HelloReply.Refusal.STARTING);
    }
    return b.build();
  }

  /**
   * What a connecting side throws for a reply {@code r} that is not OK, with {@code message}:
   * {@link TransportException.Starting} for a refusal STARTING, else a
   * {@link TransportException.Protocol}.
   */
  public static TransportException.Protocol notOk(org.hdfsrdma.proto.HrdmaProtos.HelloReply r, String message) {
    return starting(r) ? new TransportException.Starting(message) : new TransportException.Protocol(message);
  }

  /** Whether {@code r} refuses because the server is starting. */
  public static boolean starting(org.hdfsrdma.proto.HrdmaProtos.HelloReply r) {
    return r.getStatus() == org.hdfsrdma.proto.HrdmaProtos.HelloReply.Status.REFUSED
        && r.getRefusal() == org.hdfsrdma.proto.HrdmaProtos.HelloReply.Refusal.STARTING;
  }
}
