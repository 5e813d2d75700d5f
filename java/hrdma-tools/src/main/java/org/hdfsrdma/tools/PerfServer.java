package org.hdfsrdma.tools;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.RemoteRegion;
import org.hdfsrdma.transport.TransportException;

/**
 * The passive side of every perf test (see {@link PerfProtocol}). Runs on the
 * transport's I/O threads only; one session per endpoint.
 */
public final class PerfServer implements EndpointHandler {
  private final Map<Endpoint, Session> sessions = new ConcurrentHashMap<>();
  private final boolean verbose;

  public PerfServer(boolean verbose) {
    this.verbose = verbose;
  }

  private static final class Session {
    final PerfProtocol.Setup setup;
    long received;
    RegisteredBuffer echo;
    RegisteredBuffer region;

    Session(PerfProtocol.Setup setup) {
      this.setup = setup;
    }

    void free() {
      if (echo != null) {
        echo.release();
        echo = null;
      }
      if (region != null) {
        region.release();
        region = null;
      }
    }
  }

  @Override
  public void onMessage(Endpoint ep, RegisteredBuffer message) {
    Session s = sessions.get(ep);
    try {
      if (s == null) {
        setup(ep, message);
      } else if (s.setup.test().equals("send_lat")) {
        echo(ep, s, message);
      } else if (s.setup.test().equals("send_bw")) {
        s.received++;
        if (s.received == s.setup.warmup() && s.setup.warmup() > 0) {
          PerfProtocol.reply(ep, PerfProtocol.WARM, new byte[0]);
        }
        if (s.received == s.setup.warmup() + s.setup.iters()) {
          PerfProtocol.reply(ep, PerfProtocol.DONE, new byte[0]);
        }
      }
    } catch (TransportException | RuntimeException e) {
      if (verbose) {
        System.err.println("perf server: " + e);
      }
      ep.close();
    } finally {
      message.release();
    }
  }

  private void setup(Endpoint ep, RegisteredBuffer message) throws TransportException {
    if (message.readableBytes() > PerfProtocol.MAX_CONTROL) {
      throw new TransportException.Protocol("oversized setup message");
    }
    PerfProtocol.Setup st = PerfProtocol.Setup.decode(
        new String(PerfProtocol.bytes(message), StandardCharsets.UTF_8));
    Session s = new Session(st);
    sessions.put(ep, s);
    if (verbose) {
      System.err.println("perf server: " + ep.remoteAddress() + " " + st.encode());
    }
    switch (st.test()) {
      case "send_lat" -> {
        s.echo = ep.transport().allocator().allocate(st.size());
        PerfProtocol.reply(ep, PerfProtocol.OK, new byte[0]);
      }
      case "write_bw", "read_bw" -> {
        try {
          s.region = ep.transport().allocator().allocate(st.size());
          RemoteRegion r = ep.expose(s.region);
          PerfProtocol.reply(ep, PerfProtocol.REGION, r.toBytes());
        } catch (UnsupportedOperationException e) {
          PerfProtocol.reply(ep, PerfProtocol.ERROR,
              ep.transport().name() + " has no one-sided access");
        }
      }
      default -> {
        PerfProtocol.reply(ep, PerfProtocol.OK, new byte[0]);
      }
    }
  }

  /**
   * Echoes from this I/O thread at once, from the session's one buffer: the
   * client sends again only after this echo arrived, so it is free by then.
   */
  private static void echo(Endpoint ep, Session s, RegisteredBuffer message) {
    RegisteredBuffer e = s.echo;
    ByteBuffer n = e.nio();
    n.clear();
    n.put(message.nio().duplicate()).flip();
    e.retain();
    ep.send(e);
  }

  @Override
  public void onClosed(Endpoint ep, Throwable cause) {
    Session s = sessions.remove(ep);
    if (s != null) {
      s.free();
    }
    if (verbose && cause != null) {
      System.err.println("perf server: " + ep.remoteAddress() + " failed: " + cause);
    }
  }
}
