package org.hdfsrdma.protocol.wire;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.security.GeneralSecurityException;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.hdfsrdma.transport.Capability;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.RemoteRegion;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportException;

/**
 * An endpoint whose every message is sealed (encrypted and authenticated, {@link Sealer})
 * before it reaches the transport, and opened on arrival by the gate that made it
 * ({@link ServerGate}, {@link ClientGate}). Thread-safe as {@link Endpoint}: sends are
 * sealed and handed to the transport under one lock, so the order of the counter nonces is
 * the order on the wire.
 *
 * <p>Buffers: {@link #send} takes over the caller's reference. A message held by nobody else
 * (reference count 1) with 16 bytes free after its limit is sealed in place and sent as is;
 * any other (a received packet forwarded downstream while it is also written to disk, a
 * message that fills its buffer) is sealed into a new buffer of the transport's allocator in
 * the same single pass, and the caller's reference released. One-sided access (expose, read,
 * write) would move bytes past the seal: refused.
 */
public final class ProtectedEndpoint implements Endpoint {
  private static final java.util.concurrent.atomic.LongAdder IN_PLACE = new java.util.concurrent.atomic.LongAdder();
  private static final java.util.concurrent.atomic.LongAdder COPIED = new java.util.concurrent.atomic.LongAdder();
  private final Endpoint raw;
  private final Sealer out;
  private final Sealer in; // I/O thread only
  private final String cipher;
  private final Object sendLock = new Object();
  private final Set<Capability> capabilities;

  ProtectedEndpoint(Endpoint raw, Sealer out, Sealer in, String cipher) {
    this.raw = raw;
    this.out = out;
    this.in = in;
    this.cipher = cipher;
    EnumSet<Capability> c = EnumSet.noneOf(Capability.class);
    c.addAll(raw.capabilities());
    c.remove(Capability.ONE_SIDED);
    this.capabilities = java.util.Collections.unmodifiableSet(c);
  }

  /** Messages sealed in place, over every protected endpoint of this process (tests, status). */
  public static long sealedInPlace() {
    return IN_PLACE.sum();
  }

  /** Messages sealed into a new buffer (held by someone else, or no room for the tag), process-wide. */
  public static long sealedByCopy() {
    return COPIED.sum();
  }

  /** The transport's endpoint under this one. */
  public Endpoint raw() {
    return raw;
  }

  /** The AEAD cipher sealing this connection. */
  public String cipher() {
    return cipher;
  }

  /**
   * Opens a received message in place (I/O thread): on success its limit moves back over the
   * tag. The caller keeps its reference either way.
   *
   * @throws GeneralSecurityException the tag does not match: the connection must close
   */
  void open(RegisteredBuffer message) throws GeneralSecurityException {
    ByteBuffer b = message.nio();
    int n = in.open(b);
    b.limit(b.position() + n);
  }

  @Override
  public CompletableFuture<Void> send(RegisteredBuffer message) {
    return send(message, false);
  }

  /**
   * Sends {@code message} sealed into a new buffer of this connection's transport, whoever
   * else holds it, and leaves it intact: a received packet forwarded downstream comes from
   * another transport's registered memory, and sealing across is the copy it needs anyway
   * (one pass, not a copy and then a seal). Takes over the caller's reference.
   */
  public CompletableFuture<Void> sendCopy(RegisteredBuffer message) {
    return send(message, true);
  }

  private CompletableFuture<Void> send(RegisteredBuffer message, boolean copy) {
    synchronized (sendLock) {
      RegisteredBuffer sealed;
      try {
        sealed = seal(message, copy);
      } catch (GeneralSecurityException | TransportException | RuntimeException e) {
        message.release();
        raw.close(); // the counters can no longer agree
        return CompletableFuture.failedFuture(e instanceof TransportException t ? t
            : new TransportException("cannot seal a message to " + raw.remoteAddress() + ": " + e, 0, e));
      }
      return raw.send(sealed);
    }
  }

  private RegisteredBuffer seal(RegisteredBuffer m, boolean copy) throws GeneralSecurityException, TransportException {
    ByteBuffer b = m.nio();
    int start = b.position();
    int end = b.limit();
    if (!copy && m.refCnt() == 1 && m.capacity() - end >= Sealer.TAG_BYTES) {
      ByteBuffer dst = b.duplicate();
      dst.limit(end + Sealer.TAG_BYTES).position(start);
      out.seal(b.duplicate(), dst);
      b.limit(end + Sealer.TAG_BYTES).position(start);
      IN_PLACE.increment();
      return m;
    }
    RegisteredBuffer c = raw.transport().allocator().allocate(end - start + Sealer.TAG_BYTES);
    try {
      ByteBuffer d = c.nio();
      d.clear();
      out.seal(b.duplicate(), d);
      d.flip();
    } catch (GeneralSecurityException | RuntimeException e) {
      c.release();
      throw e;
    }
    // the sealed message has the plain one's layout (the tag follows it; opened in place): a
    // placement hint holds for it too
    c.placeAligned(m.placeAligned());
    m.release();
    COPIED.increment();
    return c;
  }

  @Override
  public Transport transport() {
    return raw.transport();
  }

  @Override
  public InetSocketAddress remoteAddress() {
    return raw.remoteAddress();
  }

  @Override
  public Set<Capability> capabilities() {
    return capabilities;
  }

  @Override
  public boolean isWritable() {
    return raw.isWritable();
  }

  @Override
  public int pendingSends() {
    return raw.pendingSends();
  }

  @Override
  public long sendStallNanos(long now) {
    return raw.sendStallNanos(now);
  }

  @Override
  public RemoteRegion expose(RegisteredBuffer buffer) {
    throw new UnsupportedOperationException("one-sided access is off on a protected connection");
  }

  @Override
  public CompletableFuture<Void> write(RegisteredBuffer source, RemoteRegion target, long offset) {
    source.release();
    return CompletableFuture.failedFuture(
        new UnsupportedOperationException("one-sided access is off on a protected connection"));
  }

  @Override
  public CompletableFuture<Void> read(RegisteredBuffer target, RemoteRegion source, long offset) {
    target.release();
    return CompletableFuture.failedFuture(
        new UnsupportedOperationException("one-sided access is off on a protected connection"));
  }

  @Override
  public CompletableFuture<Void> flush() {
    return raw.flush();
  }

  @Override
  public CompletableFuture<Void> closeFuture() {
    return raw.closeFuture();
  }

  @Override
  public void close() {
    raw.close();
  }

  @Override
  public String toString() {
    return raw + " sealed with " + cipher;
  }
}
