package org.hdfsrdma.client.contract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractContractMkdirTest;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.junit.jupiter.api.AfterAll;

/** Hadoop's Mkdir contract suite against RdmaDistributedFileSystem. */
public class TestRdmaContractMkdir extends AbstractContractMkdirTest {
  @AfterAll
  static void stopCluster() throws Exception {
    RdmaHdfsContract.shutdown();
  }

  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new RdmaHdfsContract(conf);
  }
}
