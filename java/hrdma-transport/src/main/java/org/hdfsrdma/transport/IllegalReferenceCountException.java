package org.hdfsrdma.transport;

/**
 * A {@link RegisteredBuffer} retained or released when it holds too few references: after its
 * last release, or more releases than it holds. A bug in the caller, as Netty's exception of
 * the same name.
 */
public final class IllegalReferenceCountException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  IllegalReferenceCountException(int refCnt, int change) {
    super("refCnt: " + refCnt + ", " + (change > 0 ? "increment: " + change : "decrement: " + -change));
  }
}
