package org.hdfsrdma.transport;

/** Transport protocol constants shared by every transport. */
public final class Protocol {
  private Protocol() {}

  /** Version carried in every hello; a peer with another version is refused. */
  public static final int VERSION = 1;

  /** Largest hello or control message accepted before the hello is done. */
  public static final int MAX_CONTROL_MESSAGE = 64 * 1024;

  /**
   * A server's refusal for {@code reason}, an {@link EndpointHandler#admit} answer: the reply's
   * status REFUSED, with refusal STARTING for {@link EndpointHandler#REFUSED_STARTING}.
   */
  public static org.hdfsrdma.proto.HrdmaProtos.HelloReply.Builder refusal(String reason) {
    return org.hdfsrdma.proto.HrdmaProtos.HelloReply.newBuilder()
        .setVersion(VERSION)
        .setStatus(org.hdfsrdma.proto.HrdmaProtos.HelloReply.Status.REFUSED)
        .setError(reason)
        .setRefusal(EndpointHandler.REFUSED_STARTING.equals(reason)
            ? org.hdfsrdma.proto.HrdmaProtos.HelloReply.Refusal.STARTING
            : org.hdfsrdma.proto.HrdmaProtos.HelloReply.Refusal.REFUSAL_UNSPECIFIED);
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
