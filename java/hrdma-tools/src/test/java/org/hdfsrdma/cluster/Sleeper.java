package org.hdfsrdma.cluster;

/** A stand-in daemon for tests: sleeps until killed (at most a minute). */
public final class Sleeper {
  private Sleeper() {}

  public static void main(String[] args) throws InterruptedException {
    Thread.sleep(60_000);
  }
}
