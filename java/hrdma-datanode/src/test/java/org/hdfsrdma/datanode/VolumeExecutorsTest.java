package org.hdfsrdma.datanode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Stopping the volumes' executors: a write's packet whose disk write runs on its executor's
 * thread when the plugin stops ends its write; it is not interrupted, which would close the
 * replica's FileChannel mid-packet (ClosedByInterruptException).
 */
@Timeout(60)
class VolumeExecutorsTest {
  @Test
  void aDiskWriteRunningWhenTheExecutorsStopIsNotInterrupted(@TempDir Path dir) throws Exception {
    VolumeExecutors v = new VolumeExecutors(1, 1, 1);
    CountDownLatch writing = new CountDownLatch(1);
    try (FileChannel ch = FileChannel.open(dir.resolve("blk"), StandardOpenOption.CREATE,
        StandardOpenOption.WRITE)) {
      Future<Long> packet = v.writesOf("vol").submit(() -> {
        long written = 0;
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500);
        writing.countDown();
        while (System.nanoTime() < end) { // a packet's writes, chunk by chunk
          written += ch.write(ByteBuffer.allocate(4096), written);
        }
        return written;
      });
      writing.await();
      v.shutdown(10_000);
      assertTrue(packet.get() > 0);
      assertTrue(ch.isOpen(), "the replica's channel was closed under the write");
      assertEquals(packet.get().longValue(), ch.size());
    }
  }
}
