package org.hdfsrdma.protocol.wire;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ProtocolException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import javax.security.sasl.Sasl;
import javax.security.sasl.SaslException;
import javax.security.sasl.SaslServer;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.BlockOpResponseProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.DataTransferEncryptorMessageProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.DataTransferEncryptorMessageProto.DataTransferEncryptorStatus;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.compat.StockSasl;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The DataNode side of data transfer protection: a handler that sits between the transports
 * and the plugin's own handler. A new connection must complete the SASL handshake
 * (SASL_HANDSHAKE messages, DIGEST-MD5 with the data encryption key or the block token, as
 * stock's SaslDataTransferServer) before the inner handler hears of it; anything else first is
 * refused with an ERROR ({@link WireProtection#UNPROTECTED_REFUSAL}) and the connection closed,
 * as is one that has not finished within the handshake timeout. After it, when integrity or
 * privacy was negotiated, every message is opened in place here and every answer sealed by
 * the {@link ProtectedEndpoint} the inner handler is given; a message whose tag fails closes
 * the connection. The handshake's own work is small and runs on the I/O thread.
 *
 * <p>Thread-safe: a connection's events come on its I/O thread; the counters are atomic.
 */
public final class ServerGate implements EndpointHandler {
  private static final Logger LOG = LoggerFactory.getLogger(ServerGate.class);
  private static final ScheduledThreadPoolExecutor TIMER = timer();

  /** The DataNode's secrets (its BlockPoolTokenSecretManager). */
  public interface Secrets {
    /** The key of a data encryption key the NameNode issued; IOException for an unknown or expired one. */
    byte[] encryptionKey(int keyId, String blockPoolId, byte[] nonce) throws IOException;

    /** The password of a block token; IOException (InvalidToken) for an expired or unknown key. */
    byte[] tokenPassword(BlockTokenIdentifier id) throws IOException;
  }

  private final EndpointHandler inner;
  private final WireProtection wire;
  private final Secrets secrets;
  private final String who;
  private final ConcurrentHashMap<Endpoint, Conn> conns = new ConcurrentHashMap<>();
  private final AtomicLong completed = new AtomicLong();
  private final AtomicLong refused = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  private final AtomicLong badTags = new AtomicLong();
  private final AtomicLong trusted = new AtomicLong();
  private final AtomicBoolean loggedRefusal = new AtomicBoolean();
  private final AtomicBoolean loggedFailure = new AtomicBoolean();

  private ServerGate(EndpointHandler inner, WireProtection wire, Secrets secrets, String who) {
    this.inner = inner;
    this.wire = wire;
    this.secrets = secrets;
    this.who = who;
  }

  /** {@code inner} behind a gate when {@code wire} asks for a handshake, else {@code inner} itself. */
  public static EndpointHandler wrap(EndpointHandler inner, WireProtection wire, Secrets secrets, String who) {
    if (wire.mode() == WireProtection.Mode.NONE) {
      return inner;
    }
    wire.warmUp(); // the cipher compiled before the first write arrives, not during it
    return new ServerGate(inner, wire, secrets, who);
  }

  /** Connections that completed the handshake. */
  public long handshakesCompleted() {
    return completed.get();
  }

  /** Connections refused for sending an op before the handshake, or for not finishing it in time. */
  public long unprotectedRefused() {
    return refused.get();
  }

  /** Handshakes that failed (wrong key, expired or unknown token, bad message). */
  public long handshakesFailed() {
    return failed.get();
  }

  /** Connections served without a handshake: the trusted-channel resolver trusts their peer. */
  public long trustedChannels() {
    return trusted.get();
  }

  /** Connections closed on a message whose tag did not match (altered, replayed, wrong key). */
  public long badTags() {
    return badTags.get();
  }

  private static final class Conn {
    SaslServer sasl;
    Map<String, String> props;
    Handshake.Half half;
    boolean awaitKeys;
    boolean ended; // refused or failed: closing, nothing more is read or answered
    volatile boolean open;
    Endpoint view;
    ProtectedEndpoint sealed;
    ScheduledFuture<?> deadline;
  }

  /** The connection cap is the wrapped handler's: asked before the handshake, as stock's xceiver count. */
  @Override
  public String admit(java.net.InetSocketAddress remote) {
    return inner.admit(remote);
  }

  @Override
  public void onConnected(Endpoint ep) {
    Conn c = new Conn();
    conns.put(ep, c);
    if (wire.serverTrusts(ep.remoteAddress().getAddress())) {
      // stock's SaslDataTransferServer: a trusted channel gets its streams as they are, no SASL
      trusted.incrementAndGet();
      LOG.debug("hrdma datanode: {} is a trusted channel ({}): no handshake", ep.remoteAddress(),
          "dfs.trustedchannel.resolver.class");
      open(ep, c, ep, false);
      return;
    }
    c.deadline = TIMER.schedule(() -> {
      if (!c.open && conns.get(ep) == c) {
        refused.incrementAndGet();
        LOG.info("hrdma datanode: {} did not complete the data transfer protection handshake within {} ms;"
            + " closing the connection", ep.remoteAddress(), wire.handshakeTimeoutMs());
        ep.close();
      }
    }, wire.handshakeTimeoutMs(), TimeUnit.MILLISECONDS);
  }

  @Override
  public void onClosed(Endpoint ep, Throwable cause) {
    Conn c = conns.remove(ep);
    if (c == null) {
      return;
    }
    if (c.deadline != null) {
      c.deadline.cancel(false);
    }
    dispose(c);
    if (c.open) {
      inner.onClosed(c.view, cause);
    } else {
      inner.onAbandoned(ep.remoteAddress()); // admitted, never handed on: its place in the cap comes back
    }
  }

  @Override
  public void onMessage(Endpoint ep, RegisteredBuffer buffer) {
    Conn c = conns.get(ep);
    if (c == null) { // closed meanwhile
      buffer.release();
      return;
    }
    if (c.ended) {
      // refused or failed already: its close waits for that one answer, which a peer that grants no
      // credits never takes; answering each further message would queue one more for it each time
      buffer.release();
      return;
    }
    if (c.open) {
      if (c.sealed != null) {
        try {
          c.sealed.open(buffer);
        } catch (java.security.GeneralSecurityException | RuntimeException e) {
          buffer.release();
          badTags.incrementAndGet();
          LOG.warn("hrdma datanode: a message from {} fails its authentication ({}); closing the connection",
              ep.remoteAddress(), e.toString());
          ep.close();
          return;
        }
      }
      inner.onMessage(c.view, buffer);
      return;
    }
    Message m;
    try {
      m = MessageCodec.decode(buffer);
    } catch (ProtocolException e) {
      buffer.release();
      refuse(ep, c, 0, "bad message before the handshake: " + e.getMessage());
      return;
    }
    try {
      if (m.kind() != MessageKind.SASL_HANDSHAKE) {
        refuse(ep, c, m.requestId(), "DataNode " + who + " accepts no " + m.kind() + " before this connection"
            + " completes the data transfer protection handshake (" + wire.mode() + ")");
        return;
      }
      step(ep, c, m.saslHandshake(), m.payload());
    } catch (ProtocolException e) {
      refuse(ep, c, m.requestId(), e.getMessage());
    } finally {
      m.release();
    }
  }

  private void refuse(Endpoint ep, Conn c, long requestId, String why) {
    c.ended = true;
    refused.incrementAndGet();
    String text = WireProtection.UNPROTECTED_REFUSAL + why;
    if (loggedRefusal.compareAndSet(false, true)) {
      LOG.warn("hrdma datanode: refusing {}: {} (logged once)", ep.remoteAddress(), text);
    } else {
      LOG.debug("hrdma datanode: refusing {}: {}", ep.remoteAddress(), text);
    }
    try {
      ep.send(MessageCodec.encode(ep.transport().allocator(), MessageKind.ERROR, requestId,
          BlockOpResponseProto.newBuilder().setStatus(Status.ERROR).setMessage(text).build(), null))
          .whenComplete((v, t) -> ep.close());
    } catch (TransportException | RuntimeException e) {
      ep.close();
    }
  }

  private void step(Endpoint ep, Conn c, DataTransferEncryptorMessageProto in, java.nio.ByteBuffer payload) {
    try {
      if (in.getStatus() != DataTransferEncryptorStatus.SUCCESS) {
        throw new IOException("the client ended the handshake: " + in.getMessage());
      }
      byte[] bytes = in.getPayload().toByteArray();
      if (c.awaitKeys) { // the client's keys: the last step
        byte[] wrapped = new byte[payload.remaining()];
        payload.duplicate().get(wrapped);
        Sealer[] s = c.half.sealers(Handshake.parseKeys(c.sasl.unwrap(wrapped, 0, wrapped.length)), true);
        c.sealed = new ProtectedEndpoint(ep, s[0], s[1], c.half.cipher);
        open(ep, c, c.sealed);
        return;
      }
      if (c.sasl == null) {
        InetAddress peer = ep.remoteAddress().getAddress();
        c.props = wire.saslProperties(peer, true);
        c.sasl = Sasl.createSaslServer(Handshake.MECHANISM, Handshake.PROTOCOL, Handshake.SERVER_NAME, c.props,
            Handshake.server(this::password));
        if (c.sasl == null) {
          throw new IOException("no SASL " + Handshake.MECHANISM + " server in this JVM");
        }
        send(ep, DataTransferEncryptorStatus.SUCCESS, c.sasl.evaluateResponse(bytes), null, null);
        return;
      }
      byte[] rspauth = c.sasl.evaluateResponse(bytes);
      if (!c.sasl.isComplete()) {
        throw new IOException("SASL did not complete after the client's response");
      }
      String qop = (String) c.sasl.getNegotiatedProperty(Sasl.QOP);
      if (!WireProtection.requested(c.props, qop)) {
        throw new IOException("negotiated protection " + qop + " is not among " + c.props.get(Sasl.QOP));
      }
      if (Handshake.sealing(qop)) {
        c.half = new Handshake.Half(wire.cipher(), wire.keyBits());
        byte[] offer = c.half.offer();
        send(ep, DataTransferEncryptorStatus.SUCCESS, rspauth, null, c.sasl.wrap(offer, 0, offer.length));
        c.awaitKeys = true;
      } else {
        send(ep, DataTransferEncryptorStatus.SUCCESS, rspauth, null, null);
        open(ep, c, ep);
      }
    } catch (IOException | java.security.GeneralSecurityException | RuntimeException e) {
      failed(ep, c, e);
    }
  }

  private void send(Endpoint ep, DataTransferEncryptorStatus status, byte[] sasl, String text, byte[] keys)
      throws TransportException {
    ep.send(Handshake.message(ep.transport().allocator(), status, sasl, text, keys));
  }

  private void open(Endpoint ep, Conn c, Endpoint view) {
    open(ep, c, view, true);
  }

  private void open(Endpoint ep, Conn c, Endpoint view, boolean handshake) {
    if (c.deadline != null) {
      c.deadline.cancel(false);
    }
    c.view = view;
    dispose(c);
    c.open = true;
    if (handshake) {
      completed.incrementAndGet();
    }
    LOG.debug("hrdma datanode: {} completed the handshake ({})", ep.remoteAddress(), view);
    inner.onConnected(view);
  }

  private void failed(Endpoint ep, Conn c, Exception e) {
    c.ended = true;
    failed.incrementAndGet();
    Throwable why = e instanceof SaslException && e.getCause() != null ? e.getCause() : e;
    String text = "DataNode " + who + " refused the data transfer protection handshake: " + why.getMessage();
    if (loggedFailure.compareAndSet(false, true)) {
      LOG.warn("hrdma datanode: {} from {} (logged once)", text, ep.remoteAddress());
    } else {
      LOG.debug("hrdma datanode: {} from {}", text, ep.remoteAddress());
    }
    dispose(c);
    boolean unknownKey = why instanceof IOException && why.getMessage() != null
        && why.getMessage().contains("encryption key");
    try {
      ep.send(Handshake.message(ep.transport().allocator(), unknownKey ? DataTransferEncryptorStatus.ERROR_UNKNOWN_KEY
          : DataTransferEncryptorStatus.ERROR, null, text, null)).whenComplete((v, t) -> ep.close());
    } catch (TransportException | RuntimeException x) {
      ep.close();
    }
  }

  private static void dispose(Conn c) {
    SaslServer s = c.sasl;
    if (s != null) {
      c.sasl = null;
      try {
        s.dispose();
      } catch (SaslException e) {
        // nothing held that matters
      }
    }
  }

  /** The password of a SASL user name, by mode (stock's conventions). */
  private char[] password(String user) throws IOException {
    if (wire.mode() == WireProtection.Mode.ENCRYPT) {
      StockSasl.EncryptionUser u = StockSasl.parseEncryptionUser(user);
      return StockSasl.encryptionPassword(secrets.encryptionKey(u.keyId(), u.blockPoolId(), u.nonce()));
    }
    return StockSasl.tokenPassword(secrets.tokenPassword(StockSasl.parseTokenUser(user)));
  }

  private static ScheduledThreadPoolExecutor timer() {
    ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
      Thread th = new Thread(r, "hrdma-wire-handshake-timer");
      th.setDaemon(true);
      return th;
    });
    t.setRemoveOnCancelPolicy(true);
    return t;
  }
}
