import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.Arrays;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;
import org.hdfsrdma.client.RdmaDistributedFileSystem;
import org.hdfsrdma.protocol.RdmaPorts;

/**
 * The client image's check: waits until the cluster has its DataNodes live with their
 * plugin ports open, writes a file of random bytes through RdmaDistributedFileSystem,
 * reads it back, compares, and fails unless our transport carried the bytes both ways
 * (the client's counters: bytes written and read over hrdma, nothing through the stock
 * path). Short-circuit and shared-memory reads are switched off here so that every byte
 * read crosses the transport. Exit code 0 only when all of it holds.
 *
 * <p>usage: verify [--size MiB] [--datanodes N] [--timeout SECONDS] [--path P]
 */
public final class HrdmaVerify {
  public static void main(String[] args) throws Exception {
    int sizeMiB = 64;
    int dataNodes = 1;
    int timeoutS = 180;
    String path = "/hrdma-verify/data.bin";
    for (int i = 0; i < args.length; i++) {
      String v = i + 1 < args.length ? args[i + 1] : null;
      switch (args[i]) {
        case "--size" -> sizeMiB = Integer.parseInt(need(args[i], v));
        case "--datanodes" -> dataNodes = Integer.parseInt(need(args[i], v));
        case "--timeout" -> timeoutS = Integer.parseInt(need(args[i], v));
        case "--path" -> path = need(args[i], v);
        default -> fail("unknown argument '" + args[i] + "' (--size MiB --datanodes N --timeout S --path P)");
      }
      i++;
    }
    Configuration conf = new Configuration();
    conf.setBoolean("hrdma.client.read.local", false);
    conf.setBoolean("hrdma.client.read.shm", false);
    long deadline = System.nanoTime() + timeoutS * 1_000_000_000L;
    try (FileSystem fs = FileSystem.newInstance(conf)) {
      if (!(fs instanceof RdmaDistributedFileSystem rfs)) {
        fail("fs.hdfs.impl gives " + fs.getClass().getName() + ", not " + RdmaDistributedFileSystem.class.getName());
        return;
      }
      waitForDataNodes(rfs, conf, dataNodes, deadline);
      byte[] data = new byte[sizeMiB << 20];
      new Random(sizeMiB * 31L + 7).nextBytes(data);
      Path p = new Path(path);
      long t0 = System.nanoTime();
      try (FSDataOutputStream out = rfs.create(p, true)) {
        out.write(data);
      }
      long t1 = System.nanoTime();
      byte[] back;
      try (FSDataInputStream in = rfs.open(p)) {
        back = in.readAllBytes();
      }
      long t2 = System.nanoTime();
      System.out.printf("hrdma verify: %s, %d MiB, replication %d, written in %.2f s, read in %.2f s%n", p, sizeMiB,
          rfs.getFileStatus(p).getReplication(), (t1 - t0) / 1e9, (t2 - t1) / 1e9);
      System.out.printf("  counters: hrdma bytes written %d, hrdma bytes read %d, stock bytes read %d, "
          + "short-circuit bytes %d, stock write fallbacks %d, DataNode fallbacks %d, checksum errors %d%n",
          rfs.rdmaBytesWritten(), rfs.rdmaBytesRead(), rfs.stockBytesRead(), rfs.localBytesRead(),
          rfs.stockWriteFallbacks(), rfs.stockFallbacks(), rfs.checksumErrors());
      if (!Arrays.equals(data, back)) {
        fail("the data read back differs from what was written (" + back.length + " bytes read, " + data.length
            + " written)");
      }
      if (rfs.rdmaBytesWritten() < data.length || rfs.stockWriteFallbacks() != 0) {
        fail("the write did not go over hrdma (bytes written over hrdma " + rfs.rdmaBytesWritten()
            + ", stock write fallbacks " + rfs.stockWriteFallbacks() + ")");
      }
      if (rfs.rdmaBytesRead() < data.length || rfs.stockBytesRead() != 0) {
        fail("the read did not go over hrdma (bytes read over hrdma " + rfs.rdmaBytesRead() + ", through the stock path "
            + rfs.stockBytesRead() + ")");
      }
      rfs.delete(p, false);
      System.out.println("hrdma verify: OK, the data matches and our transport carried it both ways");
    }
  }

  /** Until {@code n} DataNodes are live at the NameNode and each one's plugin port accepts a connection. */
  private static void waitForDataNodes(RdmaDistributedFileSystem fs, Configuration conf, int n, long deadline)
      throws Exception {
    String last = "";
    while (true) {
      String why;
      try {
        DatanodeInfo[] live = fs.getDataNodeStats(DatanodeReportType.LIVE);
        why = live.length < n ? live.length + " of " + n + " DataNodes live" : null;
        for (int i = 0; why == null && i < live.length; i++) {
          int port = RdmaPorts.pluginPort(live[i], conf);
          if (!canConnect(live[i].getIpAddr(), port)) {
            why = "the plugin of " + live[i].getXferAddr() + " does not answer on port " + port;
          }
        }
      } catch (IOException e) {
        why = "NameNode: " + e.getMessage();
      }
      if (why == null) {
        return;
      }
      if (!why.equals(last)) {
        System.out.println("hrdma verify: waiting: " + why);
        last = why;
      }
      if (System.nanoTime() > deadline) {
        fail("timed out waiting for the cluster: " + why);
      }
      Thread.sleep(1000);
    }
  }

  private static boolean canConnect(String host, int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(host, port), 2000);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static String need(String flag, String v) {
    if (v == null) {
      fail(flag + " needs a value");
    }
    return v;
  }

  private static void fail(String why) {
    System.err.println("hrdma verify: FAILED: " + why);
    System.exit(1);
  }
}
