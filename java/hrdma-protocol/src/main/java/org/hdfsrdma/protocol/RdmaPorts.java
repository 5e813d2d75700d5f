package org.hdfsrdma.protocol;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.protocol.DatanodeID;

/**
 * Where a DataNode's plugin listens, computed the same way by the plugin and
 * by clients from what the NameNode says about the DataNode (its xfer port):
 * {@value #PORT_KEY} when set to a port, else xfer port + {@value #PORT_OFFSET_KEY}.
 * Both sides must share these two settings.
 */
public final class RdmaPorts {
  /** The plugin's tcp service port; 0 derives it from the xfer port. */
  public static final String PORT_KEY = HrdmaProtocolKeys.DATANODE_PORT_KEY;
  public static final int PORT_DEFAULT = HrdmaProtocolKeys.DATANODE_PORT_DEFAULT;
  /** Added to the DataNode's xfer port when {@value #PORT_KEY} is 0. */
  public static final String PORT_OFFSET_KEY = HrdmaProtocolKeys.DATANODE_PORT_OFFSET_KEY;
  public static final int PORT_OFFSET_DEFAULT = HrdmaProtocolKeys.DATANODE_PORT_OFFSET_DEFAULT;

  private RdmaPorts() {}

  /** The plugin port of the DataNode {@code dn} (a DatanodeInfo from the NameNode, say). */
  public static int pluginPort(DatanodeID dn, Configuration conf) {
    return pluginPort(dn.getXferPort(), conf);
  }

  /**
   * The plugin port for a DataNode whose data-transfer port is {@code xferPort}.
   *
   * @throws IllegalArgumentException the settings give no valid port (1-65535)
   */
  public static int pluginPort(int xferPort, Configuration conf) {
    int explicit = conf.getInt(PORT_KEY, PORT_DEFAULT);
    if (explicit < 0 || explicit > 65535) {
      throw new IllegalArgumentException(PORT_KEY + " must be 0 (derive) or a port, not " + explicit);
    }
    if (explicit != 0) {
      return explicit;
    }
    int offset = conf.getInt(PORT_OFFSET_KEY, PORT_OFFSET_DEFAULT);
    long port = (long) xferPort + offset;
    if (xferPort <= 0 || port <= 0 || port > 65535) {
      throw new IllegalArgumentException("xfer port " + xferPort + " + " + PORT_OFFSET_KEY + " " + offset
          + " is not a port; change " + PORT_OFFSET_KEY + " or set " + PORT_KEY);
    }
    return (int) port;
  }
}
