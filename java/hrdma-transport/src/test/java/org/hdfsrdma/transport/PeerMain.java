package org.hdfsrdma.transport;

import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * A peer in a child JVM, for tests that kill it: listens with the named
 * transport on 127.0.0.1, prints {@code PORT <n>}, and holds every message it
 * receives (never releases) until it is killed, or until its standard input
 * closes: the parent died, and an orphan would keep the build waiting.
 *
 * <p>Arguments: transport name, then {@code key=value} settings.
 */
public final class PeerMain {
  private PeerMain() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> settings = new HashMap<>();
    for (int i = 1; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      settings.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    Queue<RegisteredBuffer> held = new ConcurrentLinkedQueue<>();
    Transport t = Transports.create(args[0], TransportConf.of(settings));
    Listener l = t.listen(new InetSocketAddress("127.0.0.1", 0), (endpoint, message) -> held.add(message));
    System.out.println("PORT " + l.localAddress().getPort());
    System.out.flush();
    while (System.in.read() >= 0) {
      // the parent never writes; EOF means it is gone
    }
    System.exit(0);
  }
}
