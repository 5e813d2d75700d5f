package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hdfs.protocol.proto.DataTransferProtos.Status;
import org.junit.jupiter.api.Test;

/** A connection's read turns: in order, one at a time, the next starting once the one before has sent its last packet. */
class ReadQueueTest {
  /** Records what the queue did to it. */
  private static final class FakeRead implements ReadQueue.Read {
    final long id;
    final List<String> log;

    FakeRead(long id, List<String> log) {
      this.id = id;
      this.log = log;
    }

    @Override
    public long requestId() {
      return id;
    }

    @Override
    public void start() {
      log.add("start " + id);
    }

    @Override
    public void prepare() {
      log.add("prepare " + id);
    }

    @Override
    public void cancel() {
      log.add("cancel " + id);
    }

    @Override
    public void abandon() {
      log.add("abandon " + id);
    }

    @Override
    public void refuse(Status status, String message) {
      log.add("refuse " + id);
    }
  }

  /** Reads 1..n, submitted in order. */
  private static FakeRead[] submitted(ReadQueue q, List<String> log, int n) {
    FakeRead[] r = new FakeRead[n];
    for (int i = 0; i < n; i++) {
      r[i] = new FakeRead(i + 1, log);
      q.submit(r[i]);
    }
    return r;
  }

  @Test
  void theNextReadStartsWhenTheOneBeforeHandsOnNotWhenItsPacketsAreDelivered() {
    List<String> log = new ArrayList<>();
    ReadQueue q = new ReadQueue(4);
    FakeRead[] r = submitted(q, log, 3);
    FakeRead a = r[0];
    FakeRead b = r[1];
    FakeRead c = r[2];
    assertEquals(List.of("start 1"), log, "one at a time");
    q.handOn(a); // a's last packet is with the transport, not delivered yet
    assertEquals(List.of("start 1", "start 2"), log);
    assertEquals(2, q.running(), "a drains while b is served");
    q.done(a); // a's packets delivered: nothing more starts, b has the turn
    assertEquals(List.of("start 1", "start 2"), log);
    q.done(b); // b finished without handing on (an error): c's turn
    assertEquals(List.of("start 1", "start 2", "start 3"), log);
    q.handOn(b); // late or repeated: nothing happens
    q.handOn(c);
    q.handOn(c);
    q.done(c);
    assertEquals(3, log.size());
    assertEquals(0, q.running());
  }

  @Test
  void theNextReadPreparesOnceWhenTheOneServedHasIssuedItsDiskReads() {
    List<String> log = new ArrayList<>();
    ReadQueue q = new ReadQueue(4);
    FakeRead a = new FakeRead(1, log);
    FakeRead b = new FakeRead(2, log);
    FakeRead c = new FakeRead(3, log);
    FakeRead d = new FakeRead(4, log);
    q.submit(a);
    q.ahead(a); // nothing queued yet: nothing to prepare
    assertEquals(List.of("start 1"), log);
    q.submit(b); // a is ahead already: b prepares as it arrives
    q.submit(c); // only the next one prepares
    assertEquals(List.of("start 1", "prepare 2"), log);
    assertSame(b, q.prepared());
    q.ahead(a); // repeated: b is not prepared twice
    q.ahead(c); // not the one served: nothing
    assertEquals(List.of("start 1", "prepare 2"), log);
    q.handOn(a);
    assertEquals(List.of("start 1", "prepare 2", "start 2"), log, "the prepared read starts in its turn");
    assertNull(q.prepared());
    q.submit(d); // b has not issued all its reads: c waits unprepared
    assertEquals(3, log.size());
    q.ahead(b);
    assertEquals("prepare 3", log.get(3));
    q.cancel(3); // the prepared read is withdrawn: abandoned (it undoes its preparation), the next prepares
    assertEquals(List.of("abandon 3", "prepare 4"), log.subList(4, 6));
    q.done(b);
    assertEquals("start 4", log.get(6));
    q.ahead(d);
    q.close();
    assertEquals(List.of("cancel 4", "cancel 1"), log.subList(7, log.size()), "the one served and the one still draining");
  }

  @Test
  void aPreparedReadIsAbandonedOnCloseAndNothingPreparesAfterIt() {
    List<String> log = new ArrayList<>();
    ReadQueue q = new ReadQueue(4);
    FakeRead[] r = submitted(q, log, 3);
    FakeRead a = r[0];
    FakeRead b = r[1];
    q.ahead(a);
    assertEquals(List.of("start 1", "prepare 2"), log);
    q.cancel(3); // not the head: the prepared head stays as it is
    assertEquals(List.of("start 1", "prepare 2", "abandon 3"), log);
    assertSame(b, q.prepared());
    q.close(); // the prepared read is abandoned (it undoes its preparation), the one served cancelled
    assertTrue(log.containsAll(List.of("abandon 2", "cancel 1")), log.toString());
    int n = log.size();
    q.submit(new FakeRead(4, log)); // closed: abandoned at once, never prepared
    q.ahead(a);
    assertEquals(List.of("abandon 4"), log.subList(n, log.size()));
  }

  @Test
  void cancelsReachDrainingAndQueuedReadsAndCloseEndsThemAll() {
    List<String> log = new ArrayList<>();
    ReadQueue q = new ReadQueue(2);
    FakeRead a = new FakeRead(1, log);
    FakeRead b = new FakeRead(2, log);
    FakeRead c = new FakeRead(3, log);
    FakeRead d = new FakeRead(4, log);
    FakeRead e = new FakeRead(5, log);
    q.submit(a);
    q.submit(b);
    q.handOn(a);
    q.cancel(1); // the client gives up a read whose packets are still draining
    assertTrue(log.contains("cancel 1"), log.toString());
    q.submit(c);
    q.submit(d);
    q.submit(e); // two already queued behind b
    assertTrue(log.contains("refuse 5"), log.toString());
    q.cancel(3);
    assertTrue(log.contains("abandon 3"), log.toString());
    q.handOn(b);
    assertTrue(log.contains("start 4"), log.toString());
    log.clear();
    q.close();
    assertTrue(log.containsAll(List.of("cancel 4", "cancel 1", "cancel 2")), log.toString());
    q.submit(new FakeRead(6, log));
    assertTrue(log.contains("abandon 6"), "a closed connection serves nothing more: " + log);
  }
}
