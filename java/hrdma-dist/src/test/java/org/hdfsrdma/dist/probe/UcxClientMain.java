package org.hdfsrdma.dist.probe;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Arrays;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.hdfsrdma.client.RdmaDistributedFileSystem;

/**
 * A client in a fresh JVM of its own (stock Hadoop's jars + the shaded jar): writes a file
 * through {@code RdmaDistributedFileSystem} with the default transport order, reads it back and
 * prints {@code key=value} lines (the content's check, the bytes each path carried). Args:
 * fs.defaultFS, the file's size, then {@code key=value} settings for the client.
 */
public final class UcxClientMain {
  private UcxClientMain() {}

  public static void main(String[] args) throws Exception {
    Configuration conf = new Configuration();
    conf.set("fs.defaultFS", args[0]);
    conf.set("fs.hdfs.impl", RdmaDistributedFileSystem.class.getName());
    int size = Integer.parseInt(args[1]);
    for (int i = 2; i < args.length; i++) {
      String[] kv = args[i].split("=", 2);
      conf.set(kv[0], kv[1]);
    }
    byte[] data = new byte[size];
    new Random(42).nextBytes(data);
    Path p = new Path("/ucx-client/file");
    try (FileSystem fs = FileSystem.get(conf)) {
      RdmaDistributedFileSystem rfs = (RdmaDistributedFileSystem) fs;
      try (OutputStream out = fs.create(p, (short) 1)) {
        out.write(data);
      }
      ByteArrayOutputStream got = new ByteArrayOutputStream();
      try (InputStream in = fs.open(p)) {
        in.transferTo(got);
      }
      System.out.println("content=" + (Arrays.equals(data, got.toByteArray()) ? "same" : "differs"));
      System.out.println("rdmaBytesWritten=" + rfs.rdmaBytesWritten());
      System.out.println("rdmaBytesRead=" + rfs.rdmaBytesRead());
      System.out.println("stockBytesRead=" + rfs.stockBytesRead());
      System.out.println("localBytesRead=" + rfs.localBytesRead());
    }
  }
}
