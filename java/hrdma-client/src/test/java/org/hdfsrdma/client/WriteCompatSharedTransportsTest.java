package org.hdfsrdma.client;

import org.apache.hadoop.conf.Configuration;
import org.hdfsrdma.datanode.RdmaDataNodePlugin;

/**
 * WriteCompatTest with the DataNodes sharing the JVM's transports: each DataNode's server and
 * forwarding connector on one ucx transport and I/O thread, packets forwarded from the buffer they
 * arrived in. Many threads hflushing one stream once failed here (acks overtaking each other
 * upstream).
 */
class WriteCompatSharedTransportsTest extends WriteCompatTest {
  @Override
  Configuration conf() {
    Configuration conf = super.conf();
    conf.setBoolean(RdmaDataNodePlugin.SHARE_TRANSPORTS_KEY, true);
    return conf;
  }
}
