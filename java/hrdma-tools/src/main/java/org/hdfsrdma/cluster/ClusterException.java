package org.hdfsrdma.cluster;

/** A failure with a message meant for the user as it is. */
public final class ClusterException extends Exception {
  public ClusterException(String message) {
    super(message);
  }

  public ClusterException(String message, Throwable cause) {
    super(message, cause);
  }
}
