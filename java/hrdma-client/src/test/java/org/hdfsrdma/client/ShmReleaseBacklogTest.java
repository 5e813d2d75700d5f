package org.hdfsrdma.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.ExtendedBlock;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.PacketHeaderProto;
import org.apache.hadoop.test.GenericTestUtils;
import org.hdfsrdma.nativelib.HrdmaNative;
import org.hdfsrdma.nativelib.NativeShm;
import org.hdfsrdma.proto.HrdmaProtos;
import org.hdfsrdma.protocol.Message;
import org.hdfsrdma.protocol.MessageCodec;
import org.hdfsrdma.protocol.MessageKind;
import org.hdfsrdma.protocol.SameHost;
import org.hdfsrdma.transport.Endpoint;
import org.hdfsrdma.transport.EndpointHandler;
import org.hdfsrdma.transport.Listener;
import org.hdfsrdma.transport.RegisteredBuffer;
import org.hdfsrdma.transport.Transport;
import org.hdfsrdma.transport.TransportConf;
import org.hdfsrdma.transport.Transports;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A same-host DataNode that sends read packets by reference (DATA_REF) and takes none of the
 * client's SHM_RELEASEs (grants no credits for them) would have them queued on the client for as
 * long as it sends: the client closes the connection once its releases not yet sent pass what the
 * segment can hold, and not before; an honest DataNode, which reuses a slot only once its release
 * arrived, keeps its connection however many packets it sends. The DataNode is a fake one over
 * tcp speaking the segment protocol to a real {@link DataNodeConnection}; every packet is the
 * same message in the segment's first slot.
 */
@Timeout(120)
class ShmReleaseBacklogTest {
  private static final int SEGMENT_BYTES = 64 << 10;
  private static final int CREDITS = 8; // the fake DataNode's window: releases past it wait for its credits

  private Transport clientTransport;
  private FakeDataNode dn;
  private RdmaBlockClient client;
  private long mapped0;

  @BeforeEach
  void start() throws Exception {
    assumeTrue(HrdmaNative.isAvailable() && !SameHost.name().isEmpty(), "shared memory on this host");
    mapped0 = NativeShm.mappedBytes();
    clientTransport = Transports.create("tcp", TransportConf.defaults());
    client = new RdmaBlockClient(new Configuration(false));
  }

  @AfterEach
  void stop() throws IOException {
    if (dn != null) {
      dn.close();
    }
    if (client != null) {
      client.close();
    }
    if (clientTransport != null) {
      clientTransport.close();
    }
  }

  /** A real client connection to {@code dn} with its segment mapped. */
  private DataNodeConnection connect() throws Exception {
    DataNodeConnection c = new DataNodeConnection("fake", dn.address(), client);
    Endpoint ep = clientTransport.connect(dn.address(), c).get(20, TimeUnit.SECONDS);
    c.connected(ep, "tcp", null);
    c.mapSegment(20_000, new ExtendedBlock("BP-test", 1), null);
    assertNotNull(c.segment(), "the fake DataNode's segment mapped");
    return c;
  }

  @Test
  void aDataNodeThatTakesNoReleasesIsClosedOnceTheyPassItsSegment() throws Exception {
    dn = new FakeDataNode(false);
    DataNodeConnection c = connect();
    int limit = c.releaseLimit();
    assertEquals(SEGMENT_BYTES / 4096, limit, "the segment's bytes over the smallest slot, a page");
    PendingRead p = c.register();
    dn.placePacket(p.id());
    GenericTestUtils.LogCapturer logs = GenericTestUtils.LogCapturer.captureLogs(
        org.slf4j.LoggerFactory.getLogger(DataNodeConnection.class));
    int packets = 0;
    try {
      while (client.sharedMemoryReleaseBacklogs() == 0) {
        assertTrue(packets < CREDITS + limit + 10, "still open after " + packets + " packets, "
            + c.unsentReleases() + " releases unsent, " + c.endpoint().pendingSends() + " sends queued");
        dn.sendRef(p.id());
        Message m = p.take(20_000);
        packets++;
        int unsent = c.unsentReleases();
        m.release(); // the packet read: its SHM_RELEASE goes, or waits for the DataNode's credits
        if (client.sharedMemoryReleaseBacklogs() == 0) {
          assertTrue(unsent < limit, "open with " + (unsent + 1) + " releases unsent, more than " + limit);
        } else {
          assertEquals(limit, unsent, "closed at the release past the segment's " + limit + " slots");
        }
      }
      assertTrue(packets > CREDITS + limit - 2, "closed after only " + packets + " packets");
      IOException e = assertThrows(IOException.class, () -> {
        for (int i = 0; i < 100; i++) { // what arrived before the close, then the failure
          p.take(20_000).release();
        }
      });
      assertTrue(e.getMessage().contains("connection to " + c + " closed"), e.getMessage());
      String out = logs.getOutput();
      assertTrue(out.contains("hrdma client: " + c + " grants no credits for shared-memory releases: " + (limit + 1)
          + " not yet sent, more than its segment of " + SEGMENT_BYTES + " bytes can have outstanding (" + limit
          + " packets at most), closing the connection"), out);
    } finally {
      logs.stopCapturing();
      p.close();
    }
    assertEquals(1, client.sharedMemoryReleaseBacklogs());
    await(() -> c.isOpen() ? 1 : 0, 0, "the connection closed");
    await(c::unsentReleases, 0, "the queued releases failed with the connection");
    dn.close();
    awaitNothingHeld(c);
  }

  @Test
  void aDataNodeThatTakesItsReleasesKeepsTheConnection() throws Exception {
    dn = new FakeDataNode(true);
    DataNodeConnection c = connect();
    int limit = c.releaseLimit();
    PendingRead p = c.register();
    dn.placePacket(p.id());
    int packets = 4 * (limit + CREDITS);
    for (int i = 0; i < packets; i++) {
      dn.sendRef(p.id());
      p.take(20_000).release();
      assertEquals(0L, dn.releases.poll(20, TimeUnit.SECONDS), "the slot given back before it is used again");
    }
    p.close();
    assertTrue(c.isOpen(), "an honest DataNode keeps its connection");
    assertEquals(0, client.sharedMemoryReleaseBacklogs());
    await(c::unsentReleases, 0, "every release sent");
    c.close();
    await(() -> c.isOpen() ? 1 : 0, 0, "the connection closed");
    dn.close();
    awaitNothingHeld(c);
  }

  /** No segment mapped, no descriptor of it open, no buffer of the client's transport held. */
  private void awaitNothingHeld(DataNodeConnection c) throws Exception {
    await(NativeShm::mappedBytes, mapped0, "nothing of either side left mapped");
    await(() -> descriptorsOf(dn.file), 0, "no descriptor of the segment open");
    await(clientTransport.allocator()::buffersOutstanding, 0, "the client transport's buffers");
  }

  private static long descriptorsOf(Path file) throws IOException {
    long n = 0;
    try (var fds = Files.list(Path.of("/proc/self/fd"))) {
      for (Path fd : (Iterable<Path>) fds::iterator) {
        try {
          if (Files.readSymbolicLink(fd).toString().startsWith(file.toString())) {
            n++;
          }
        } catch (IOException gone) {
          // closed while listed
        }
      }
    }
    return n;
  }

  private interface Value {
    long get() throws Exception;
  }

  private static void await(Value value, long want, String what) throws Exception {
    long until = System.nanoTime() + 20_000_000_000L;
    while (value.get() != want && System.nanoTime() < until) {
      Thread.sleep(20);
    }
    assertEquals(want, value.get(), what);
  }

  /**
   * A DataNode's side of reads by reference, by hand: grants a segment of {@value #SEGMENT_BYTES}
   * bytes and sends DATA_REFs of the packet in its first slot. Honest, it takes every SHM_RELEASE
   * (releasing the message, so its credits go back) and queues its offset; otherwise it keeps
   * them all unreleased: the client gets no credits back and its releases queue.
   */
  private static final class FakeDataNode implements EndpointHandler {
    private final boolean honest;
    private final Transport transport;
    private final Listener listener;
    private final List<Message> kept = new ArrayList<>(); // guarded by this
    final LinkedBlockingQueue<Long> releases = new LinkedBlockingQueue<>();
    final Path file;
    private volatile NativeShm.Segment segment;
    private volatile Endpoint ep;
    private int packetBytes;
    private boolean closed; // the test thread's

    FakeDataNode(boolean honest) throws IOException {
      this.honest = honest;
      this.file = Path.of(Files.isDirectory(Path.of("/dev/shm")) ? "/dev/shm" : "/tmp",
          "hrdma-release-backlog-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
      transport = Transports.create("tcp", TransportConf.defaults()
          .with(TransportConf.CREDITS_KEY, String.valueOf(CREDITS)));
      listener = transport.listen(new InetSocketAddress("127.0.0.1", 0), this);
    }

    InetSocketAddress address() {
      return listener.localAddress();
    }

    @Override
    public void onConnected(Endpoint endpoint) {
      ep = endpoint;
    }

    @Override
    public void onMessage(Endpoint endpoint, RegisteredBuffer buffer) {
      Message m;
      try {
        m = MessageCodec.decode(buffer);
      } catch (ProtocolException e) {
        buffer.release();
        throw new AssertionError(e);
      }
      try {
        switch (m.kind()) {
          case SHM_REQUEST -> {
            segment = NativeShm.create(file, SEGMENT_BYTES);
            endpoint.send(MessageCodec.encode(endpoint.transport().allocator(), MessageKind.SHM_GRANT,
                m.requestId(), HrdmaProtos.ShmGrant.newBuilder().setPath(file.toString())
                    .setBytes(SEGMENT_BYTES).build()));
          }
          case SHM_MAPPED -> Files.deleteIfExists(file);
          case SHM_RELEASE -> {
            if (!honest) {
              synchronized (this) {
                kept.add(m); // never released: no credit goes back for it
              }
              return;
            }
            releases.add(m.shmRelease().getOffset());
          }
          default -> throw new AssertionError("unexpected " + m.kind());
        }
      } catch (IOException e) {
        throw new AssertionError(e);
      }
      m.release();
    }

    /** Writes a DATA_PACKET of request {@code id} into the segment's first slot. */
    void placePacket(long id) throws IOException {
      RegisteredBuffer pkt = MessageCodec.encode(transport.allocator(), MessageKind.DATA_PACKET, id,
          PacketHeaderProto.newBuilder().setOffsetInBlock(0).setSeqno(0).setLastPacketInBlock(false)
              .setDataLen(0).build(), null);
      try {
        packetBytes = pkt.readableBytes();
        segment.buffer().put(0, pkt.nio(), pkt.nio().position(), packetBytes);
      } finally {
        pkt.release();
      }
    }

    /** A DATA_REF of the packet in the first slot, whether or not its last one was given back. */
    void sendRef(long id) throws IOException {
      ep.send(MessageCodec.encode(transport.allocator(), MessageKind.DATA_REF, id,
          HrdmaProtos.ShmRef.newBuilder().setOffset(0).setLength(packetBytes).build()));
    }

    void close() throws IOException {
      if (closed) {
        return;
      }
      closed = true;
      Endpoint e = ep;
      if (e != null) {
        e.close();
      }
      synchronized (this) {
        kept.forEach(Message::release);
        kept.clear();
      }
      listener.close();
      transport.close();
      NativeShm.Segment s = segment;
      if (s != null) {
        s.close();
      }
      Files.deleteIfExists(file);
    }
  }
}
