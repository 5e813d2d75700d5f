package org.hdfsrdma.protocol.wire;

import java.io.IOException;
import java.net.ProtocolException;
import java.nio.ByteBuffer;
import java.security.GeneralSecurityException;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import javax.security.sasl.Sasl;
import javax.security.sasl.SaslClient;
import javax.security.sasl.SaslException;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.DataTransferEncryptorMessageProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.DataTransferEncryptorMessageProto.DataTransferEncryptorStatus;
import org.apache.hadoop.hdfs.security.token.block.BlockTokenIdentifier;
import org.apache.hadoop.hdfs.security.token.block.DataEncryptionKey;
import org.apache.hadoop.security.token.Token;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.compat.StockSasl;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;

/**
 * The connecting side of data transfer protection (the client, or a DataNode forwarding a
 * write downstream): the handler given to the connector, in front of the caller's own. Until
 * {@link #handshake} has proven the DataNode (DIGEST-MD5's rspauth: it knows the key too)
 * nothing but the handshake is sent and the inner handler sees no message; after it, with
 * integrity or privacy, messages are opened in place here and the inner handler sends through
 * the {@link ProtectedEndpoint} {@link #handshake} returns; a message whose tag fails closes the
 * connection. Without a handshake ({@link WireProtection.Mode#NONE}) it passes everything on
 * and notes a DataNode's refusal of unprotected connections ({@link #refusedUnprotected}).
 *
 * <p>Thread-safe: {@link #handshake} runs on the connecting thread, the handler methods on the
 * transport's I/O thread.
 */
public final class ClientGate implements EndpointHandler {
  /** Handshake answers that may wait for {@link #handshake} to take them (the DataNode sends two). */
  static final int MAX_HANDSHAKE_QUEUED = 4;

  private final EndpointHandler inner;
  private final LinkedBlockingQueue<Object> handshakeIn = new LinkedBlockingQueue<>();
  private volatile boolean open;
  private volatile Endpoint view;
  private volatile ProtectedEndpoint sealed;
  private volatile String refusedUnprotected;

  public ClientGate(EndpointHandler inner) {
    this.inner = inner;
  }

  /** What a connecting side proves itself with. */
  public record Credentials(DataEncryptionKey key, Token<BlockTokenIdentifier> token) {
    String user(WireProtection.Mode mode) throws IOException {
      if (mode == WireProtection.Mode.ENCRYPT) {
        if (key == null) {
          throw new ProtectionException("dfs.encrypt.data.transfer is on but no data encryption key is at hand");
        }
        return StockSasl.encryptionUser(key);
      }
      if (token == null || token.getIdentifier().length == 0) {
        throw new ProtectionException("dfs.data.transfer.protection is set but the block token is empty"
            + " (dfs.block.access.token.enable off?)");
      }
      return StockSasl.tokenUser(token);
    }

    char[] password(WireProtection.Mode mode) {
      return mode == WireProtection.Mode.ENCRYPT ? StockSasl.encryptionPassword(key.encryptionKey)
          : StockSasl.tokenPassword(token.getPassword());
    }
  }

  /** The connection could not be protected as configured: the caller must take another path. */
  public static final class ProtectionException extends IOException {
    private static final long serialVersionUID = 1L;

    public ProtectionException(String message) {
      super(message);
    }

    public ProtectionException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** The DataNode's refusal of this unprotected connection, or null. */
  public String refusedUnprotected() {
    return refusedUnprotected;
  }

  /**
   * Runs the handshake on {@code raw} (just connected with this gate as its handler) and
   * returns the endpoint to send through: {@code raw} itself without sealing. Waits at most
   * {@code timeoutMs} for each answer. On any failure the connection is closed.
   *
   * @throws ProtectionException the DataNode refused (wrong key, expired token, not configured
   *     for it) or could not prove itself, or the negotiated protection is less than asked
   */
  public Endpoint handshake(Endpoint raw, WireProtection wire, Credentials creds, long timeoutMs)
      throws IOException {
    if (wire.mode() == WireProtection.Mode.NONE || wire.clientTrusts(raw.remoteAddress().getAddress())) {
      // trusted channel: stock's SaslDataTransferClient sends no SASL either
      view = raw;
      open = true;
      return raw;
    }
    SaslClient sasl = null;
    try {
      Map<String, String> props = wire.saslProperties(raw.remoteAddress().getAddress(), false);
      sasl = Sasl.createSaslClient(new String[] {Handshake.MECHANISM}, creds.user(wire.mode()), Handshake.PROTOCOL,
          Handshake.SERVER_NAME, props, Handshake.client(creds.user(wire.mode()), creds.password(wire.mode())));
      if (sasl == null) {
        throw new ProtectionException("no SASL " + Handshake.MECHANISM + " client in this JVM");
      }
      byte[] first = sasl.hasInitialResponse() ? sasl.evaluateChallenge(new byte[0]) : new byte[0];
      send(raw, first, null);
      Reply challenge = take(raw, timeoutMs);
      send(raw, sasl.evaluateChallenge(challenge.sasl), null);
      Reply last = take(raw, timeoutMs);
      sasl.evaluateChallenge(last.sasl); // checks rspauth: the DataNode knows the key
      if (!sasl.isComplete()) {
        throw new ProtectionException("the DataNode at " + raw.remoteAddress() + " did not prove itself");
      }
      String qop = (String) sasl.getNegotiatedProperty(Sasl.QOP);
      if (!WireProtection.requested(props, qop)) {
        throw new ProtectionException("negotiated protection " + qop + " is not among " + props.get(Sasl.QOP));
      }
      if (!Handshake.sealing(qop)) {
        view = raw;
        open = true;
        return raw;
      }
      if (last.keys == null) {
        throw new ProtectionException("the DataNode at " + raw.remoteAddress() + " sent no keys under " + qop);
      }
      Handshake.Half half;
      Sealer[] s;
      HrdmaKeys peer = new HrdmaKeys(Handshake.parseKeys(sasl.unwrap(last.keys, 0, last.keys.length)));
      half = Handshake.Half.forPeer(peer.keys);
      s = half.sealers(peer.keys, false);
      byte[] offer = half.offer();
      send(raw, new byte[0], sasl.wrap(offer, 0, offer.length));
      ProtectedEndpoint p = new ProtectedEndpoint(raw, s[0], s[1], half.cipher);
      sealed = p;
      view = p;
      open = true;
      return p;
    } catch (SaslException | GeneralSecurityException e) {
      raw.close();
      throw new ProtectionException("data transfer protection handshake with " + raw.remoteAddress() + " failed: "
          + e.getMessage(), e);
    } catch (IOException | RuntimeException e) {
      raw.close();
      throw e instanceof ProtectionException pe ? pe : new ProtectionException("data transfer protection handshake"
          + " with " + raw.remoteAddress() + " failed: " + e.getMessage(), e);
    } finally {
      if (sasl != null) {
        try {
          sasl.dispose();
        } catch (SaslException e) {
          // nothing held that matters
        }
      }
    }
  }

  private record HrdmaKeys(org.hdfsrdma.proto.HrdmaProtos.WireKeys keys) {}

  private record Reply(byte[] sasl, byte[] keys) {}

  private static void send(Endpoint raw, byte[] sasl, byte[] keys) throws TransportException {
    raw.send(Handshake.message(raw.transport().allocator(), DataTransferEncryptorStatus.SUCCESS, sasl, null, keys));
  }

  private Reply take(Endpoint raw, long timeoutMs) throws IOException {
    Object o;
    try {
      o = handshakeIn.poll(timeoutMs, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new java.io.InterruptedIOException("interrupted in the handshake with " + raw.remoteAddress());
    }
    if (o == null) {
      throw new ProtectionException("no answer from " + raw.remoteAddress() + " within " + timeoutMs
          + " ms in the data transfer protection handshake");
    }
    if (o instanceof IOException e) {
      throw e;
    }
    return (Reply) o;
  }

  /** Handshake answers waiting now (tests). */
  int handshakeQueued() {
    return handshakeIn.size();
  }

  @Override
  public void onConnected(Endpoint endpoint) {
    inner.onConnected(endpoint);
  }

  @Override
  public void onMessage(Endpoint ep, RegisteredBuffer buffer) {
    if (open) {
      ProtectedEndpoint p = sealed;
      if (p != null) {
        try {
          p.open(buffer);
        } catch (GeneralSecurityException | RuntimeException e) {
          buffer.release();
          ep.close(); // the inner handler's onClosed fails whatever waits
          return;
        }
      } else if (buffer.readableBytes() > 1 && buffer.nio().get(buffer.nio().position() + 1)
          == (byte) MessageKind.ERROR.code()) {
        noteRefusal(buffer);
      }
      inner.onMessage(view, buffer);
      return;
    }
    // during the handshake: only its own messages are expected, two of them; a DataNode sending more
    // before they are taken is cut off rather than kept (each would hold a copy of its bytes)
    if (handshakeIn.size() >= MAX_HANDSHAKE_QUEUED) {
      buffer.release();
      ep.close();
      return;
    }
    try {
      Message m = MessageCodec.decode(buffer);
      try {
        if (m.kind() == MessageKind.ERROR) {
          handshakeIn.add(new ProtectionException(m.error().getMessage()));
        } else if (m.kind() != MessageKind.SASL_HANDSHAKE) {
          handshakeIn.add(new ProtectionException("unexpected " + m.kind() + " in the handshake"));
        } else {
          DataTransferEncryptorMessageProto h = m.saslHandshake();
          if (h.getStatus() != DataTransferEncryptorStatus.SUCCESS) {
            handshakeIn.add(new ProtectionException(h.getStatus() + ": " + h.getMessage()));
          } else {
            ByteBuffer pl = m.payload();
            byte[] keys = null;
            if (pl.hasRemaining()) {
              keys = new byte[pl.remaining()];
              pl.duplicate().get(keys);
            }
            handshakeIn.add(new Reply(h.getPayload().toByteArray(), keys));
          }
        }
      } finally {
        m.release();
      }
    } catch (ProtocolException e) {
      buffer.release();
      handshakeIn.add(new ProtectionException("bad message in the handshake: " + e.getMessage()));
    }
  }

  private void noteRefusal(RegisteredBuffer buffer) {
    try {
      String text = MessageCodec.decode(buffer).error().getMessage();
      if (text.startsWith(WireProtection.UNPROTECTED_REFUSAL)) {
        refusedUnprotected = text;
      }
    } catch (ProtocolException e) {
      // the inner handler reports it
    }
  }

  @Override
  public void onClosed(Endpoint ep, Throwable cause) {
    handshakeIn.add(new ProtectionException("connection to " + ep.remoteAddress() + " closed in the handshake"
        + (cause == null ? "" : ": " + cause.getMessage())));
    Endpoint v = view;
    inner.onClosed(v == null ? ep : v, cause);
  }
}
