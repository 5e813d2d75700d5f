package org.hdfsrdma.client.contract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractContractDeleteTest;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.junit.jupiter.api.AfterAll;

/** Hadoop's Delete contract suite against RdmaDistributedFileSystem. */
public class TestRdmaContractDelete extends AbstractContractDeleteTest {
  @AfterAll
  static void stopCluster() throws Exception {
    RdmaHdfsContract.shutdown();
  }

  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new RdmaHdfsContract(conf);
  }
}
