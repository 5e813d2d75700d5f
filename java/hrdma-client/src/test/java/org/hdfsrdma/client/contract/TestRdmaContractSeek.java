package org.hdfsrdma.client.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractContractSeekTest;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.hdfsrdma.client.RdmaDistributedFileSystem;
import org.junit.jupiter.api.AfterAll;

/** Hadoop's Seek contract suite against RdmaDistributedFileSystem. */
public class TestRdmaContractSeek extends AbstractContractSeekTest {
  /** The suite's reads went over hrdma, not the stock path. */
  @AfterAll
  static void readsWentOverHrdma() throws Exception {
    RdmaDistributedFileSystem fs = RdmaHdfsContract.fileSystem();
    try {
      // over a transport, or short-circuit (on by default; the DataNode passes the files)
      assertTrue(fs.rdmaBytesRead() + fs.localBytesRead() > 0, "bytes over hrdma: " + fs.rdmaBytesRead()
          + ", short-circuit: " + fs.localBytesRead());
      assertEquals(0, fs.stockFallbacks());
    } finally {
      RdmaHdfsContract.shutdown();
    }
  }

  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new RdmaHdfsContract(conf);
  }
}
