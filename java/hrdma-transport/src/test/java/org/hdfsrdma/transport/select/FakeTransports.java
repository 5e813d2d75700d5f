package org.hdfsrdma.transport.select;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.hdfsrdma.transport.BufferAllocator;
import org.hdfsrdma.transport.BufferPool;
import org.hdfsrdma.transport.Capability;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.Listener;
import org.hdfsrdma.transport.SlabAllocator;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.TransportException;
import org.hdfsrdma.transport.TransportProvider;
import org.hdfsrdma.transport.tcp.TcpTransport;

/**
 * Test-only transports, registered in the test resources' META-INF/services:
 * {@code broken} (listens, but every connect fails), {@code hanging} and
 * {@code hanging2} (every connect never completes) and {@code tcp2} (tcp under another name, to
 * test choosing a transport other than the bootstrap).
 */
final class FakeTransports {
  private FakeTransports() {}

  /** A provider of {@link Fake} transports under one name: connects fail, or never complete. */
  private abstract static class FakeProvider implements TransportProvider {
    private final String name;
    private final boolean hangs;

    FakeProvider(String name, boolean hangs) {
      this.name = name;
      this.hangs = hangs;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public String unavailabilityCause() {
      return null;
    }

    @Override
    public Transport create(TransportConf conf) {
      return new Fake(name, hangs);
    }
  }

  public static final class Broken extends FakeProvider {
    public Broken() {
      super("broken", false);
    }
  }

  public static final class Hanging extends FakeProvider {
    public Hanging() {
      super("hanging", true);
    }
  }

  /** A second {@code hanging}, to try two in a row. */
  public static final class Hanging2 extends FakeProvider {
    public Hanging2() {
      super("hanging2", true);
    }
  }

  public static final class Tcp2 implements TransportProvider {
    @Override
    public String name() {
      return "tcp2";
    }

    @Override
    public String unavailabilityCause() {
      return null;
    }

    @Override
    public Transport create(TransportConf conf) {
      TcpTransport inner = new TcpTransport(conf);
      return new Transport() {
        @Override
        public String name() {
          return "tcp2";
        }

        @Override
        public Set<Capability> capabilities() {
          return inner.capabilities();
        }

        @Override
        public BufferAllocator allocator() {
          return inner.allocator();
        }

        @Override
        public Listener listen(InetSocketAddress local, EndpointHandler handler) throws IOException {
          return inner.listen(local, handler);
        }

        @Override
        public CompletableFuture<Endpoint> connect(InetSocketAddress remote, EndpointHandler handler) {
          return inner.connect(remote, handler);
        }

        @Override
        public void close() {
          inner.close();
        }
      };
    }
  }

  private static final class Fake implements Transport {
    private final String name;
    private final boolean hang;
    private final BufferPool pool = new BufferPool(SlabAllocator.DIRECT, 1 << 20, 64 << 20);

    Fake(String name, boolean hang) {
      this.name = name;
      this.hang = hang;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public Set<Capability> capabilities() {
      return Set.of();
    }

    @Override
    public BufferAllocator allocator() {
      return pool;
    }

    @Override
    public Listener listen(InetSocketAddress local, EndpointHandler handler) {
      InetSocketAddress bound = new InetSocketAddress(local.getAddress(), 9);
      return new Listener() {
        @Override
        public InetSocketAddress localAddress() {
          return bound;
        }

        @Override
        public Transport transport() {
          return Fake.this;
        }

        @Override
        public void close() {}
      };
    }

    @Override
    public CompletableFuture<Endpoint> connect(InetSocketAddress remote, EndpointHandler handler) {
      if (hang) {
        return new CompletableFuture<>();
      }
      return CompletableFuture.failedFuture(new TransportException.Unreachable(
          name + ": cannot connect to " + remote + ": this transport is broken on purpose", 0, null));
    }

    @Override
    public void close() {
      pool.close();
    }
  }
}
