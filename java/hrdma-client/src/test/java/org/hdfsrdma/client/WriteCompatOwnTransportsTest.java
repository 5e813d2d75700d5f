package org.hdfsrdma.client;

import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;

/**
 * WriteCompatTest with every DataNode's server and forwarding connector on transports of its own
 * ({@code hrdma.datanode.share-transports=false}): WriteCompatTest itself runs the default, where
 * the DataNodes of one JVM share them (each packet forwarded from the buffer it arrived in, acks
 * upstream in call order from the disk and I/O threads).
 */
class WriteCompatOwnTransportsTest extends WriteCompatTest {
  @Override
  Configuration conf() {
    Configuration conf = super.conf();
    conf.set(RdmaDataNodePlugin.SHARE_TRANSPORTS_KEY, "false");
    return conf;
  }
}
