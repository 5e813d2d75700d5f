package org.hdfsrdma.client.contract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractContractRenameTest;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.junit.jupiter.api.AfterAll;

/** Hadoop's Rename contract suite against RdmaDistributedFileSystem. */
public class TestRdmaContractRename extends AbstractContractRenameTest {
  @AfterAll
  static void stopCluster() throws Exception {
    RdmaHdfsContract.shutdown();
  }

  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new RdmaHdfsContract(conf);
  }
}
