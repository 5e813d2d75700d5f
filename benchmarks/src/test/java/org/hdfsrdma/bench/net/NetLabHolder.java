package org.hdfsrdma.bench.net;

import java.util.List;

/** For NetLabTest: builds a lab with the tag in args[0], says "ready", waits to be killed. */
public final class NetLabHolder {
  private NetLabHolder() {}

  public static void main(String[] args) throws Exception {
    NetLab.create(args[0], List.of("nn", "dn1"), 10, System.out);
    System.out.println("ready");
    System.out.flush();
    Thread.sleep(120_000);
  }
}
