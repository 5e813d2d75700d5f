package org.hdfsrdma.bench.mr;

/**
 * One setting of a benchmark: the cluster (DataNodes, emulated interconnect) and the
 * job's knobs. A sweep is a list of points that differ in one parameter. Immutable.
 *
 * @param param       the swept parameter (block-size, datanodes, clients, replication, net), "" for none
 * @param value       its value as shown ("64M", "4", "10 Gbit/s")
 * @param dataNodes   DataNodes of the cluster
 * @param gbit        the emulated interconnect in Gbit/s; 0 unshaped namespaces; -1 no namespaces
 * @param blockBytes  dfs.blocksize
 * @param clients     concurrent tasks
 * @param replication dfs.replication
 */
public record Point(String param, String value, int dataNodes, double gbit, long blockBytes, int clients,
    int replication) {

  /** Points with the same cluster share one cluster start. */
  boolean sameCluster(Point o) {
    return o != null && dataNodes == o.dataNodes && gbit == o.gbit;
  }

  String label() {
    return param.isEmpty() ? "-" : param + "=" + value;
  }
}
