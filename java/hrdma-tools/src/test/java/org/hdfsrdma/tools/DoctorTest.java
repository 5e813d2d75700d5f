package org.hdfsrdma.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.select.HrdmaServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code hrdma doctor --connect} negotiates with an HrdmaServer and says what it chose. */
class DoctorTest {
  private static String run(String... args) {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    int rc = Doctor.run(args, new PrintStream(b, true, StandardCharsets.UTF_8));
    return rc + "\n" + b.toString(StandardCharsets.UTF_8);
  }

  @Test
  @Timeout(20)
  void connectNamesTheChosenTransportAndWhyOthersWereNot() throws Exception {
    TransportConf tcpOnly = TransportConf.defaults().with(TransportConf.ORDER_KEY, "tcp");
    try (HrdmaServer server = HrdmaServer.start(tcpOnly, new PerfServer(false), "127.0.0.1", 0)) {
      int port = server.serviceAddress().getPort();
      String out = run("--connect", "127.0.0.1:" + port, "--conf",
          TransportConf.ORDER_KEY + "=nosuch,tcp");
      assertTrue(out.startsWith("0\n"), out);
      assertTrue(out.contains("== connect 127.0.0.1:" + port + " (order [nosuch, tcp])"), out);
      assertTrue(out.contains("nosuch   failed: not offered by the server"), out);
      assertTrue(out.contains("tcp      chosen"), out);
      assertTrue(out.contains("chosen: tcp to "), out);
    }
  }

  @Test
  @Timeout(20)
  void nobodyThereIsAFailureWithTheReason() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    String out = run("--connect", "127.0.0.1:" + port, "--conf", TransportConf.ORDER_KEY + "=tcp");
    assertEquals("1", out.substring(0, out.indexOf('\n')), out);
    assertTrue(out.contains("cannot negotiate with 127.0.0.1:" + port), out);
  }
}
