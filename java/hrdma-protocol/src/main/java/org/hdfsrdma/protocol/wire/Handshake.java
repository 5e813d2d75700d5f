package org.hdfsrdma.protocol.wire;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.spec.X509EncodedKeySpec;
import java.util.Arrays;
import javax.crypto.KeyAgreement;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.CallbackHandler;
import javax.security.auth.callback.NameCallback;
import javax.security.auth.callback.PasswordCallback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.sasl.AuthorizeCallback;
import javax.security.sasl.RealmCallback;
import javax.security.sasl.RealmChoiceCallback;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.DataTransferEncryptorMessageProto;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.DataTransferEncryptorMessageProto.DataTransferEncryptorStatus;
import org.apache.hadoop.thirdparty.protobuf.ByteString;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.transport.BufferAllocator;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.TransportException;

/**
 * The pieces both gates share: SASL_HANDSHAKE messages, the SASL callbacks (stock's
 * mechanism, protocol and server names), and the key agreement that follows SASL when
 * integrity or privacy was negotiated: each side's X25519 public key and nonce travel
 * sasl-wrapped (so an active attacker who does not know the SASL password cannot swap
 * them), both sides compute the shared secret and derive one key per direction with
 * HKDF-SHA256 (RFC 5869, HMAC from the JDK), bound to the cipher, the key size and both
 * nonces. Stateless, thread-safe.
 */
final class Handshake {
  static final String MECHANISM = "DIGEST-MD5";
  static final String PROTOCOL = "hdfs";
  static final String SERVER_NAME = "0";
  private static final SecureRandom RANDOM = new SecureRandom();

  private Handshake() {}

  /** A SASL_HANDSHAKE message (request id 0). */
  static RegisteredBuffer message(BufferAllocator alloc, DataTransferEncryptorStatus status, byte[] sasl,
      String text, byte[] wrappedKeys) throws TransportException {
    DataTransferEncryptorMessageProto.Builder b = DataTransferEncryptorMessageProto.newBuilder().setStatus(status);
    if (sasl != null) {
      b.setPayload(ByteString.copyFrom(sasl));
    }
    if (text != null) {
      b.setMessage(text);
    }
    return MessageCodec.encode(alloc, MessageKind.SASL_HANDSHAKE, 0, b.build(),
        wrappedKeys == null ? null : ByteBuffer.wrap(wrappedKeys));
  }

  static boolean sealing(String qop) {
    return "auth-int".equals(qop) || "auth-conf".equals(qop);
  }

  /** Answers the client side's callbacks with the user name and password. */
  static CallbackHandler client(String user, char[] password) {
    return callbacks -> {
      for (Callback c : callbacks) {
        if (c instanceof NameCallback n) {
          n.setName(user);
        } else if (c instanceof PasswordCallback p) {
          p.setPassword(password);
        } else if (c instanceof RealmCallback r) {
          r.setText(r.getDefaultText());
        } else if (c instanceof RealmChoiceCallback) {
          continue; // no realm choice
        } else {
          throw new UnsupportedCallbackException(c, "unexpected SASL callback " + c);
        }
      }
    };
  }

  /** Finds a user's password (the server's secret store); IOException when it has none, or refuses it. */
  interface Passwords {
    char[] password(String user) throws IOException;
  }

  /** Answers the server side's callbacks: the password of the user the client named. */
  static CallbackHandler server(Passwords passwords) {
    return callbacks -> {
      NameCallback name = null;
      PasswordCallback pass = null;
      AuthorizeCallback authorize = null;
      for (Callback c : callbacks) {
        if (c instanceof NameCallback n) {
          name = n;
        } else if (c instanceof PasswordCallback p) {
          pass = p;
        } else if (c instanceof AuthorizeCallback a) {
          authorize = a;
        } else if (!(c instanceof RealmCallback)) {
          throw new UnsupportedCallbackException(c, "unexpected SASL callback " + c);
        }
      }
      if (pass != null) {
        if (name == null) {
          throw new IOException("SASL asked for a password without a user name");
        }
        pass.setPassword(passwords.password(name.getDefaultName()));
      }
      if (authorize != null) {
        authorize.setAuthorized(authorize.getAuthenticationID().equals(authorize.getAuthorizationID()));
        if (authorize.isAuthorized()) {
          authorize.setAuthorizedID(authorize.getAuthorizationID());
        }
      }
    };
  }

  /** One side's half of the key agreement. */
  static final class Half {
    final KeyPair pair;
    final byte[] nonce = new byte[32];
    final String cipher;
    final int keyBits;

    Half(String cipher, int keyBits) throws GeneralSecurityException {
      this.pair = KeyPairGenerator.getInstance("X25519").generateKeyPair();
      RANDOM.nextBytes(nonce);
      this.cipher = cipher;
      this.keyBits = keyBits;
    }

    /**
     * The client's half for the DataNode's offer (the DataNode chooses, as stock's DataNode picks
     * the cipher): with the offer's cipher and key size, or none when the offer is not one this
     * side would configure itself (WireProtection's rule: AES/GCM/NoPadding with 128 or 256-bit
     * keys, ChaCha20-Poly1305 with 256), so that an authenticated peer cannot have this side seal
     * with another cipher, a shorter key, or derive a key of any size it names.
     */
    static Half forPeer(HrdmaProtos.WireKeys peer) throws GeneralSecurityException {
      String c = peer.getCipher();
      int bits = peer.getKeyBits();
      boolean aes = c.equals("AES/GCM/NoPadding") && (bits == 128 || bits == 256);
      boolean chacha = c.equals("ChaCha20-Poly1305") && bits == 256;
      if (!aes && !chacha) {
        throw new GeneralSecurityException("the peer offers " + c + " with " + bits + "-bit keys; this side seals"
            + " only with AES/GCM/NoPadding (128 or 256-bit keys) or ChaCha20-Poly1305 (256)");
      }
      return new Half(c, bits);
    }

    /** The offer to send (then wrapped by SASL). */
    byte[] offer() {
      return HrdmaProtos.WireKeys.newBuilder().setCipher(cipher).setKeyBits(keyBits)
          .setPublicKey(com.google.protobuf.ByteString.copyFrom(pair.getPublic().getEncoded()))
          .setNonce(com.google.protobuf.ByteString.copyFrom(nonce)).build().toByteArray();
    }

    /**
     * The sealers of a connection from this half and the peer's offer: {@code [out, in]}.
     * The client's key seals client-to-server messages, the server's the other way.
     */
    Sealer[] sealers(HrdmaProtos.WireKeys peer, boolean server) throws GeneralSecurityException {
      if (!peer.getCipher().equals(cipher) || peer.getKeyBits() != keyBits || peer.getNonce().size() != 32) {
        throw new GeneralSecurityException("the peer's keys are for " + peer.getCipher() + "/" + peer.getKeyBits()
            + ", not " + cipher + "/" + keyBits);
      }
      PublicKey pub = KeyFactory.getInstance("X25519")
          .generatePublic(new X509EncodedKeySpec(peer.getPublicKey().toByteArray()));
      KeyAgreement ka = KeyAgreement.getInstance("X25519");
      ka.init(pair.getPrivate());
      ka.doPhase(pub, true);
      byte[] shared = ka.generateSecret();
      byte[] peerNonce = peer.getNonce().toByteArray();
      byte[] salt = server ? concat(nonce, peerNonce) : concat(peerNonce, nonce); // server's nonce first
      byte[] prk = hmac(salt, shared);
      Arrays.fill(shared, (byte) 0);
      String bind = cipher + "/" + keyBits;
      byte[] c2s = expand(prk, "hrdma wire client to server " + bind, keyBits / 8);
      byte[] s2c = expand(prk, "hrdma wire server to client " + bind, keyBits / 8);
      Arrays.fill(prk, (byte) 0);
      Sealer out = new Sealer(cipher, server ? s2c : c2s, true);
      Sealer in = new Sealer(cipher, server ? c2s : s2c, false);
      Arrays.fill(c2s, (byte) 0);
      Arrays.fill(s2c, (byte) 0);
      return new Sealer[] {out, in};
    }
  }

  static HrdmaProtos.WireKeys parseKeys(byte[] unwrapped) throws IOException {
    try {
      return HrdmaProtos.WireKeys.parseFrom(unwrapped);
    } catch (com.google.protobuf.InvalidProtocolBufferException e) {
      throw new IOException("the peer's keys are not a WireKeys message: " + e.getMessage(), e);
    }
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] r = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, r, a.length, b.length);
    return r;
  }

  private static byte[] hmac(byte[] key, byte[] data) throws GeneralSecurityException {
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(key, "HmacSHA256"));
    return mac.doFinal(data);
  }

  /** HKDF-Expand for at most one block (32 bytes). */
  private static byte[] expand(byte[] prk, String info, int bytes) throws GeneralSecurityException {
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(prk, "HmacSHA256"));
    mac.update(info.getBytes(StandardCharsets.UTF_8));
    mac.update((byte) 1);
    return Arrays.copyOf(mac.doFinal(), bytes);
  }
}
