package org.hdfsrdma.client.compat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ByteBufferUtil;
import org.apache.hadoop.hdfs.client.HdfsClientConfigKeys;
import org.apache.hadoop.io.ByteBufferPool;

/**
 * Stock's copying read for zero-copy reads that cannot map ({@code ByteBufferUtil},
 * Hadoop-private), and stock's switch for zero-copy reads. Stateless, thread-safe.
 */
public final class ZeroCopyFallback {
  private ZeroCopyFallback() {}

  /**
   * As stock's {@code DFSInputStream#read(ByteBufferPool, ...)} without a
   * mapping: a buffer from {@code pool} (direct or not, as the pool gives)
   * filled by a read of {@code in}, at most {@code maxLength} bytes; null at
   * the end of the stream.
   */
  public static ByteBuffer read(InputStream in, ByteBufferPool pool, int maxLength) throws IOException {
    return ByteBufferUtil.fallbackRead(in, pool, maxLength);
  }

  /** Stock's {@code dfs.client.mmap.enabled}: false turns zero-copy reads into copying ones, as stock. */
  public static boolean mmapEnabled(Configuration conf) {
    return conf.getBoolean(HdfsClientConfigKeys.Mmap.ENABLED_KEY, HdfsClientConfigKeys.Mmap.ENABLED_DEFAULT);
  }
}
