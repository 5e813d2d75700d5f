package org.hdfsrdma.client.contract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractContractGetFileStatusTest;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.junit.jupiter.api.AfterAll;

/** Hadoop's GetFileStatus contract suite against RdmaDistributedFileSystem. */
public class TestRdmaContractGetFileStatus extends AbstractContractGetFileStatusTest {
  @AfterAll
  static void stopCluster() throws Exception {
    RdmaHdfsContract.shutdown();
  }

  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new RdmaHdfsContract(conf);
  }
}
