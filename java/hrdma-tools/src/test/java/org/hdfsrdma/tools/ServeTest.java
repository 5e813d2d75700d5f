package org.hdfsrdma.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.hdfsrdma.transport.TransportConf;
import org.junit.jupiter.api.Test;

/** The options of {@code hrdma serve} and the transport settings they give the server. */
class ServeTest {
  @Test
  void defaultsAndValues() {
    Serve.Options d = Serve.parse();
    assertEquals(Serve.DEFAULT_PORT, d.port());
    assertEquals(List.of(), d.transports());
    assertEquals(null, d.ucxTls());
    assertFalse(d.help());
    Serve.Options o = Serve.parse("--port=0", "--transport", "TCP,stream,tcp", "--ucx-tls", "sm,tcp",
        "-D", "a=1", "--conf", "b = 2");
    assertEquals(0, o.port());
    assertEquals(List.of("tcp", "stream"), o.transports());
    assertEquals("sm,tcp", o.ucxTls());
    assertEquals(Map.of("a", "1", "b", "2"), o.conf());
    assertTrue(Serve.parse("-h").help());
  }

  @Test
  void mistakesNameTheOptionAndValue() {
    assertEquals("bad port '70000' (0-65535)", message("--port", "70000"));
    assertEquals("unknown transport 'rdma' (known: tcp, ucx, stream)", message("--transport", "rdma"));
    assertEquals("option --port needs a value", message("--port"));
    assertEquals("--conf wants KEY=VALUE, not 'x'", message("--conf", "x"));
    assertEquals("unknown argument '--size'", message("--size", "1M"));
  }

  @Test
  void badUsageExitsWith2AndTheUsage() {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    assertEquals(2, Serve.run(new String[] {"--transport", "x"}, new PrintStream(err, true, StandardCharsets.UTF_8)));
    String e = err.toString(StandardCharsets.UTF_8);
    assertTrue(e.startsWith("hrdma serve: unknown transport 'x'"), e);
    assertTrue(e.contains("usage: hrdma serve"), e);
  }

  @Test
  void theOrderIsTheTransportsGivenElseTheConfiguredOne() {
    TransportConf given = Serve.conf(Map.of(), "tcp", List.of("stream", "tcp"));
    assertEquals(List.of("stream", "tcp"), given.order());
    assertEquals("TLS=tcp", given.get(TransportConf.UCX_CONFIG_KEY, ""));
    assertEquals(Serve.BUSY_POLL_SPINS, given.get(TransportConf.UCX_SPIN_KEY, ""));
    TransportConf configured = Serve.conf(Map.of(TransportConf.ORDER_KEY, "tcp", TransportConf.UCX_SPIN_KEY, "5"),
        null, List.of());
    assertEquals(List.of("tcp"), configured.order());
    assertEquals("5", configured.get(TransportConf.UCX_SPIN_KEY, ""));
  }

  private static String message(String... args) {
    return assertThrows(UsageException.class, () -> Serve.parse(args)).getMessage();
  }
}
