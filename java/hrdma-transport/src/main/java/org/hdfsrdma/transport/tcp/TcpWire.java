package org.hdfsrdma.transport.tcp;

/**
 * The tcp transport's frame layout (drawn in {@link TcpFrames}): its constants, without Netty,
 * for {@link TcpBootstrap} as well as {@link TcpFrames}.
 */
final class TcpWire {
  private TcpWire() {}

  static final int LENGTH_BYTES = 4;
  static final int HEADER_BYTES = LENGTH_BYTES + 1;

  static final byte HELLO = 1;
  static final byte HELLO_REPLY = 2;
  static final byte DATA = 3;
  static final byte CREDIT = 4;
  static final byte CLOSE = 5;

  static String typeName(int type) {
    return switch (type) {
      case HELLO -> "HELLO";
      case HELLO_REPLY -> "HELLO_REPLY";
      case DATA -> "DATA";
      case CREDIT -> "CREDIT";
      case CLOSE -> "CLOSE";
      default -> "unknown type " + type;
    };
  }
}
