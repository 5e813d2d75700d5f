package org.hdfsrdma.tools;

/** Bad command-line input; the message says what and is shown to the user as is. */
public final class UsageException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public UsageException(String message) {
    super(message);
  }
}
