package org.hdfsrdma.client.compat;

import java.io.IOException;
import org.apache.hadoop.hdfs.DFSClient;
import org.apache.hadoop.hdfs.security.token.block.DataEncryptionKey;

/** The stock client's data encryption keys. Stateless, thread-safe. */
public final class StockKeys {
  private StockKeys() {}

  /**
   * The DFSClient's current data encryption key (fetched from the NameNode, cached and renewed
   * by the DFSClient as for its own transfers), or null when the NameNode's server defaults do
   * not ask for dfs.encrypt.data.transfer.
   */
  public static DataEncryptionKey dataEncryptionKey(DFSClient client) throws IOException {
    return client.newDataEncryptionKey();
  }

  /** Drops the DFSClient's cached key (a DataNode did not know it): the next one comes from the NameNode. */
  public static void clear(DFSClient client) {
    client.clearDataEncryptionKey();
  }
}
