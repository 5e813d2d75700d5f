package org.hdfsrdma.tools;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;

/**
 * The perf benchmark's own little protocol, one test per connection: {@code hrdma serve}
 * answers it (PerfServer), {@code hrdma perf} drives it.
 *
 * <pre>
 * client                                   server
 *   "hrdma-perf/1 test=T size=S warmup=W iters=N"  (first message, UTF-8)
 *                                  &lt;--     'K'                 send_bw, send_lat
 *                                  &lt;--     'R' descriptor      write_bw, read_bw
 *                                  &lt;--     'E' reason (UTF-8)  refused
 *   send_bw:  W data messages      &lt;--     'A' (after W; none when W = 0)
 *             N data messages      &lt;--     'D' (after W + N)
 *   send_lat: each message is echoed back, same size
 *   write_bw, read_bw: one-sided ops on the region, then the client closes
 * </pre>
 */
public final class PerfProtocol {
  private PerfProtocol() {}

  /** The tests a setup message may name. */
  public static final List<String> TESTS = List.of("send_bw", "write_bw", "read_bw", "send_lat");
  public static final String MAGIC = "hrdma-perf/1";
  public static final byte OK = 'K';
  public static final byte REGION = 'R';
  public static final byte ERROR = 'E';
  public static final byte WARM = 'A';
  public static final byte DONE = 'D';
  /** Bound on a control message, checked before it is parsed. */
  public static final int MAX_CONTROL = 4096;

  public record Setup(String test, int size, long warmup, long iters) {
    public String encode() {
      return MAGIC + " test=" + test + " size=" + size + " warmup=" + warmup + " iters=" + iters;
    }

    public static Setup decode(String s) throws TransportException {
      String[] words = s.trim().split(" +");
      if (words.length == 0 || !words[0].equals(MAGIC)) {
        throw new TransportException.Protocol("not an hrdma-perf/1 setup message");
      }
      Map<String, String> kv = new HashMap<>();
      for (int i = 1; i < words.length; i++) {
        int eq = words[i].indexOf('=');
        if (eq > 0) {
          kv.put(words[i].substring(0, eq), words[i].substring(eq + 1));
        }
      }
      try {
        Setup st = new Setup(kv.getOrDefault("test", ""), Integer.parseInt(kv.get("size")),
            Long.parseLong(kv.get("warmup")), Long.parseLong(kv.get("iters")));
        if (!TESTS.contains(st.test) || st.size <= 0 || st.warmup < 0
            || st.iters <= 0) {
          throw new TransportException.Protocol("bad setup: " + s);
        }
        return st;
      } catch (RuntimeException e) {
        throw new TransportException.Protocol("bad setup: " + s);
      }
    }
  }

  /** Reads position to limit of a message as bytes; the caller still owns the message. */
  public static byte[] bytes(RegisteredBuffer m) {
    ByteBuffer b = m.nio().duplicate();
    byte[] out = new byte[b.remaining()];
    b.get(out);
    return out;
  }

  /** Sends a control reply: a code byte and a payload. */
  public static void reply(Endpoint ep, byte code, byte[] payload) throws TransportException {
    RegisteredBuffer b = ep.transport().allocator().allocate(1 + payload.length);
    ByteBuffer n = b.nio();
    n.clear();
    n.put(code).put(payload).flip();
    ep.send(b);
  }

  public static void reply(Endpoint ep, byte code, String text) throws TransportException {
    reply(ep, code, text.getBytes(StandardCharsets.UTF_8));
  }
}
